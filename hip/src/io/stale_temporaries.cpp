#include "io/stale_temporaries.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

namespace moss {
namespace {

constexpr char kPrefix[] = ".moss-infer-";
constexpr size_t kPrefixLen = sizeof kPrefix - 1;
constexpr size_t kRandomLen = 6;  // mkstemp's XXXXXX

// The writer's pid of a temporary's name: > 0 for `.moss-infer-<pid>-XXXXXX`, 0 for the older
// `.moss-infer-XXXXXX`, -1 for a name that is not one of ours.
long writer_pid(const std::string& name) {
  if (name.compare(0, kPrefixLen, kPrefix) != 0) return -1;
  const std::string rest = name.substr(kPrefixLen);
  if (rest.size() == kRandomLen) return 0;
  const size_t dash = rest.find('-');
  if (dash == std::string::npos || dash == 0 || dash > 10 || rest.size() != dash + 1 + kRandomLen) return -1;
  long pid = 0;
  for (size_t i = 0; i < dash; ++i) {
    if (rest[i] < '0' || rest[i] > '9') return -1;
    pid = pid * 10 + (rest[i] - '0');
  }
  return pid > 0 ? pid : -1;
}

bool process_gone(long pid) { return ::kill(pid_t(pid), 0) != 0 && errno == ESRCH; }

}  // namespace

std::string temporary_template(const std::string& dir) {
  return dir + "/" + kPrefix + std::to_string(long(::getpid())) + "-XXXXXX";
}

int remove_stale_temporaries(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return 0;
  const time_t now = std::time(nullptr);
  int removed = 0;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    const long pid = writer_pid(name);
    if (pid < 0) continue;
    struct stat st;
    if (::fstatat(::dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    const long age = long(now - st.st_mtime);
    const bool stale = age > kAbandonedAfterSeconds || (pid > 0 && age > kStaleAfterSeconds && process_gone(pid));
    if (stale && ::unlinkat(::dirfd(d), name.c_str(), 0) == 0) ++removed;
  }
  ::closedir(d);
  return removed;
}

}  // namespace moss
