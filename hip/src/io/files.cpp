#include "io/files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>

#include "util/error.h"

namespace moss {

std::string read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw failure(path + ": cannot open (" + std::strerror(errno) + ")");
  std::ostringstream s;
  s << f.rdbuf();
  if (f.bad()) throw failure(path + ": read error");
  return s.str();
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool dir_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::vector<std::string> list_dir(const std::string& path) {
  DIR* d = opendir(path.c_str());
  if (!d) throw failure(path + ": cannot list folder (" + std::strerror(errno) + ")");
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

static std::string parent_dir(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

void check_writable_output(const std::string& path, const std::string& flag) {
  if (path.empty()) throw usage_error(flag + ": empty path");
  if (dir_exists(path)) throw usage_error(flag + " " + path + ": is a directory");
  std::string dir = parent_dir(path);
  if (!dir_exists(dir)) throw usage_error(flag + " " + path + ": directory " + dir + " does not exist");
  if (::access(dir.c_str(), W_OK) != 0) throw usage_error(flag + " " + path + ": directory " + dir + " is not writable");
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  std::string dir = parent_dir(path);
  std::string tmpl = dir + "/.moss-infer-XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  // Signals must not interrupt between the write and the rename with a temp file left behind.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  int fd = mkstemp(name.data());
  if (fd < 0) {
    int err = errno;
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    throw failure(path + ": cannot create a file in " + dir + " (" + std::strerror(err) + ")");
  }
  size_t done = 0;
  bool ok = true;
  int err = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      ok = false;
      err = errno;
      break;
    }
    done += size_t(n);
  }
  if (ok && fsync(fd) != 0) { ok = false; err = errno; }
  if (::close(fd) != 0 && ok) { ok = false; err = errno; }
  if (ok) ::chmod(name.data(), 0644 & ~[] { mode_t m = umask(0); umask(m); return m; }());
  if (ok && std::rename(name.data(), path.c_str()) != 0) { ok = false; err = errno; }
  if (!ok) ::unlink(name.data());
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (!ok) throw failure(path + ": write failed (" + std::strerror(err) + ")");
}

}  // namespace moss
