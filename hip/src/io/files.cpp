#include "io/files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "io/input_text.h"
#include "io/output_files.h"
#include "util/error.h"
#include "util/interrupt.h"

namespace moss {

std::string file_kind(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return "";
  switch (st.st_mode & S_IFMT) {
    case S_IFREG: return "";
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    default: return "not a plain file";
  }
}

static Error not_regular(const std::string& path, const std::string& kind) {
  return failure(path + ": not a regular file (" + kind + ")");
}

void require_regular_file(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) throw failure(path + ": missing file");
    throw failure(path + ": cannot open (" + std::strerror(errno) + ")");
  }
  if (!S_ISREG(st.st_mode)) throw not_regular(path, file_kind(path));
}

int open_regular_file(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) throw not_regular(path, file_kind(path));
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0 && errno == EINTR) check_interrupted();  // a signal: its status, not EINTR
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) throw failure(path + ": cannot open (" + std::strerror(errno) + ")");
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw failure(path + ": cannot open (" + std::strerror(err) + ")");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw not_regular(path, file_kind(path));
  }
  // Regular files ignore O_NONBLOCK; it is cleared anyway so reads mean what they say.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

std::string read_text_file(const std::string& path, size_t limit) {
  const int fd = open_regular_file(path);
  struct stat st;
  if (::fstat(fd, &st) == 0 && uint64_t(st.st_size) > limit) {
    ::close(fd);
    throw failure(path + ": " + std::to_string(st.st_size) + " bytes, more than the limit of " + size_text(limit));
  }
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) {  // a signal of ours: its status, not EINTR; any other: retry
      if (pending_signal()) {
        ::close(fd);
        check_interrupted();
      }
      continue;
    }
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw failure(path + ": read error (" + std::strerror(err) + ")");
    }
    if (n == 0) break;
    if (out.size() + size_t(n) > limit) {  // the file grew since the size was checked
      ::close(fd);
      throw failure(path + ": more than the limit of " + size_text(limit));
    }
    out.append(buf, size_t(n));
  }
  ::close(fd);
  return out;
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

std::string parent_dir(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  OutputFiles out;
  out.add(path, bytes);
  out.commit();
}

}  // namespace moss
