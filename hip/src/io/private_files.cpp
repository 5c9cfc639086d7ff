#include "io/private_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace moss {
namespace {

// What an opened descriptor is, when it is not a regular file of ours ("" when it is).
std::string not_ours(int fd, const std::string& path) {
  struct stat st;
  if (fstat(fd, &st) != 0) return path + ": " + std::strerror(errno);
  if (!S_ISREG(st.st_mode))
    return path + " is not a regular file (" +
           (S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a directory" : S_ISSOCK(st.st_mode) ? "a socket"
                                                                  : "a device") +
           ")";
  if (st.st_uid != geteuid()) return path + " belongs to another user (uid " + std::to_string(st.st_uid) + ")";
  return "";
}

std::string open_error(const std::string& path, int err) {
  return path + ": " + (err == ELOOP ? std::string("a symbolic link (not followed)") : std::strerror(err));
}

}  // namespace

std::string private_dir_refusal(const std::string& dir) {
  if (dir.empty()) return "no cache folder (XDG_CACHE_HOME or HOME)";
  for (size_t p = 1; p <= dir.size(); ++p)
    if (p == dir.size() || dir[p] == '/') {
      const std::string d = dir.substr(0, p);
      if (mkdir(d.c_str(), p == dir.size() ? 0700 : 0755) != 0 && errno != EEXIST)
        return d + ": cannot be made (" + std::strerror(errno) + ")";
    }
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) return dir + ": " + std::strerror(errno);
  if (S_ISLNK(st.st_mode)) return dir + " is a symbolic link (not followed)";
  if (!S_ISDIR(st.st_mode)) return dir + " is not a directory";
  if (st.st_uid != geteuid()) return dir + " belongs to another user (uid " + std::to_string(st.st_uid) + ")";
  return "";
}

bool read_private_file(const std::string& path, std::string& text, std::string& why, size_t max_bytes) {
  text.clear();
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return true;
    why = open_error(path, errno);
    return false;
  }
  why = not_ours(fd, path);
  char buf[65536];
  while (why.empty()) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) why = path + ": " + std::strerror(errno);
    if (n <= 0) break;
    text.append(buf, size_t(n));
    if (text.size() > max_bytes) why = path + " is larger than " + std::to_string(max_bytes) + " bytes";
  }
  close(fd);
  if (!why.empty()) text.clear();
  return why.empty();
}

int open_private_file(const std::string& path, WriteMode mode, std::string& why) {
  const int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (mode == WriteMode::Append ? O_APPEND : 0);
  const int fd = open(path.c_str(), flags, 0600);
  if (fd < 0) {
    why = open_error(path, errno);
    return -1;
  }
  why = not_ours(fd, path);
  // Emptied only once known to be ours (O_TRUNC would empty whatever the name led to first).
  if (why.empty() && mode == WriteMode::Replace && ftruncate(fd, 0) != 0) why = path + ": " + std::strerror(errno);
  if (why.empty()) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  if (!why.empty()) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace moss
