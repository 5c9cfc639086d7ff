#include "io/output_paths.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "io/files.h"
#include "io/stale_temporaries.h"
#include "util/error.h"

namespace moss {
namespace {

// The path as a message shows it: a NUL would end the message there.
std::string shown(const std::string& path) {
  std::string out;
  for (char c : path) out += c == '\0' ? std::string("\\0") : std::string(1, c);
  return out;
}

std::string file_name(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

Error refused(const std::string& source, const std::string& path, const std::string& why) {
  return usage_error(source + " " + shown(path) + ": " + why);
}

// Makes and removes a temporary in `dir`, as the commit will: the one test that covers every
// reason a new file cannot be made (permissions, a read-only or pseudo file system, a deleted
// folder, quota on inodes).
void probe_new_file(const std::string& source, const std::string& path, const std::string& dir) {
  std::string name = temporary_template(dir);
  const int fd = ::mkstemp(name.data());
  if (fd >= 0) {
    ::unlink(name.c_str());
    ::close(fd);
    return;
  }
  const int err = errno;
  struct stat st;
  if (err == ENOENT && ::stat(dir.c_str(), &st) == 0 && st.st_nlink == 0)
    throw refused(source, path, "directory " + dir + " has been deleted (a new file cannot be made in it)");
  throw refused(source, path, "directory " + dir + " cannot hold a new file (" + std::strerror(err) + ")");
}

// The rename that commits an output replaces an existing entry; in a sticky folder (S_ISVTX,
// such as /tmp) the kernel allows that only to the entry's owner, the folder's owner, or a
// process with CAP_FOWNER (root here).
void refuse_unreplaceable(const std::string& source, const std::string& path, const std::string& dir,
                          const struct stat& dir_st) {
  if (!(dir_st.st_mode & S_ISVTX)) return;
  struct stat entry;
  if (::lstat(path.c_str(), &entry) != 0) return;  // no entry: a new one is made
  const uid_t me = ::geteuid();
  if (me == 0 || entry.st_uid == me || dir_st.st_uid == me) return;
  throw refused(source, path, "belongs to another user (uid " + std::to_string(entry.st_uid) + ") in the sticky directory " +
                                  dir + ", where only its owner may replace it");
}

// Each file system's free space against the outputs it will hold.
void check_free_space(const std::vector<OutputPath>& outputs) {
  std::map<dev_t, std::pair<uint64_t, const OutputPath*>> need;  // device: bytes, an output on it
  for (const OutputPath& o : outputs) {
    struct stat st;
    if (o.bytes == 0 || ::stat(parent_dir(o.path).c_str(), &st) != 0) continue;
    auto& n = need[st.st_dev];
    n.first += o.bytes;
    if (!n.second) n.second = &o;
  }
  for (const auto& [dev, n] : need) {
    const std::string dir = parent_dir(n.second->path);
    struct statvfs fs;
    if (::statvfs(dir.c_str(), &fs) != 0) continue;
    const uint64_t free_bytes = uint64_t(fs.f_bavail) * uint64_t(fs.f_frsize);
    if (free_bytes < n.first)
      throw failure(n.second->source + ": " + shown(n.second->path) + ": the file system of " + dir + " has " +
                    std::to_string(free_bytes) + " bytes free; this run's outputs there need up to " +
                    std::to_string(n.first) + " bytes");
  }
}

}  // namespace

void check_output_path(const std::string& path, const std::string& source) {
  if (path.empty()) throw usage_error(source + ": empty path");
  const size_t nul = path.find('\0');
  if (nul != std::string::npos)
    throw refused(source, path, "a NUL byte at byte " + std::to_string(nul + 1) + " (a file name cannot hold one)");
  // Longer paths fail every system call with ENAMETOOLONG, which the checks below would
  // report as a missing directory.
  if (path.size() >= size_t(PATH_MAX))
    throw usage_error(source + ": the path has " + std::to_string(path.size()) + " bytes, the system allows " +
                      std::to_string(PATH_MAX - 1));
  if (dir_exists(path)) throw refused(source, path, "is a directory");
  const std::string dir = parent_dir(path);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) throw refused(source, path, "directory " + dir + " does not exist");
    throw refused(source, path, "directory " + dir + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    const std::string kind = file_kind(dir);  // "" for a regular file
    throw refused(source, path, dir + " is not a directory (" + (kind.empty() ? "a regular file" : kind) + ")");
  }
  if (::access(dir.c_str(), W_OK) != 0) throw refused(source, path, "directory " + dir + " is not writable");
  const std::string name = file_name(path);
  const long name_max = ::pathconf(dir.c_str(), _PC_NAME_MAX);
  if (name_max > 0 && name.size() > size_t(name_max))
    throw refused(source, path, "the file name has " + std::to_string(name.size()) + " bytes, the file system allows " +
                                    std::to_string(name_max));
  refuse_unreplaceable(source, path, dir, st);
  probe_new_file(source, path, dir);
}

void check_output_paths(const std::vector<OutputPath>& outputs) {
  for (const OutputPath& o : outputs) check_output_path(o.path, o.source);
  // The folder entry each output replaces: (device, inode of the folder, name).
  std::map<std::tuple<dev_t, ino_t, std::string>, const OutputPath*> entries;
  std::set<std::string> folders;
  for (const OutputPath& o : outputs) {
    const std::string dir = parent_dir(o.path);
    struct stat st;
    if (::stat(dir.c_str(), &st) != 0) throw refused(o.source, o.path, "directory " + dir + " does not exist");
    const auto [it, fresh] = entries.emplace(std::make_tuple(st.st_dev, st.st_ino, file_name(o.path)), &o);
    if (!fresh) {
      const OutputPath& first = *it->second;
      const std::string also = first.path == o.path ? "" : " (also named " + shown(first.path) + ")";
      throw usage_error("two images would write " + shown(o.path) + also + ": " + first.source + " and " + o.source +
                        " (give the output a %d pattern)");
    }
    folders.insert(dir);
  }
  for (const std::string& dir : folders) remove_stale_temporaries(dir);
  check_free_space(outputs);
}

}  // namespace moss
