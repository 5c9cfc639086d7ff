#include "server/connection_watch.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>

namespace moss {
namespace {

bool matches(int fd, const std::string& remote_addr, int remote_port, const std::string& local_addr, int local_port) {
  sockaddr_storage peer = {}, self = {};
  socklen_t peer_len = sizeof peer, self_len = sizeof self;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) return false;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&self), &self_len) != 0) return false;
  std::string pa, sa;
  int pp = 0, sp = 0;
  return socket_address(peer, pa, pp) && socket_address(self, sa, sp) && pp == remote_port && sp == local_port &&
         pa == remote_addr && (local_addr.empty() || sa == local_addr);
}

}  // namespace

bool socket_address(const sockaddr_storage& a, std::string& addr, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
    inet_ntop(AF_INET, &v4.sin_addr, text, sizeof text);
    port = ntohs(v4.sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
    inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof text);
    port = ntohs(v6.sin6_port);
  } else {
    return false;
  }
  addr = text;
  return true;
}

ConnectionWatch::ConnectionWatch(const std::string& remote_addr, int remote_port, const std::string& local_addr,
                                 int local_port) {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    struct stat st = {};
    if (fstat(int(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    if (matches(int(fd), remote_addr, remote_port, local_addr, local_port)) {
      fd_ = int(fd);
      break;
    }
  }
  closedir(dir);
}

bool ConnectionWatch::client_gone() const {
  if (fd_ < 0) return false;
  pollfd p = {fd_, short(POLLIN | POLLRDHUP), 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLHUP | POLLERR)) return true;  // reset, or closed both ways
  char c;
  // Readable: either more data (a pipelined request: still there) or the end of the stream.
  const bool ended = (p.revents & POLLRDHUP) || ((p.revents & POLLIN) && recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0);
  if (!ended || probed_) return false;
  probed_ = true;
  static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
  // A write that fails at once (EPIPE: the peer's reset is already here) says it is gone.
  return send(fd_, kContinue, sizeof kContinue - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN &&
         errno != EWOULDBLOCK;
}

}  // namespace moss
