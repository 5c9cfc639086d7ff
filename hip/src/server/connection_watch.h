// Whether the client of a request is still there. cpp-httplib 0.11 tells a handler neither its
// socket nor a disconnect, so the socket is found by the connection's two addresses (unique for
// TCP) among the process's descriptors, once per request, and then peeked at without reading.
#pragma once
#include <sys/socket.h>

#include <string>

namespace moss {

// The numeric address and port of a socket address, as cpp-httplib writes them; false for a
// family other than IPv4 and IPv6.
bool socket_address(const sockaddr_storage& a, std::string& addr, int& port);

class ConnectionWatch {
 public:
  // The connection local_addr:local_port <- remote_addr:remote_port; a watch that finds no such
  // socket never reports a disconnect.
  ConnectionWatch(const std::string& remote_addr, int remote_port, const std::string& local_addr, int local_port);
  // True once the peer has gone: a reset, or a close of both directions. The end of the client's
  // stream alone (a FIN) may be a half-close after a complete request, which HTTP allows and
  // whose answer the client still reads: the first time it is seen, the watch sends an interim
  // "100 Continue" (RFC 9110: a client must accept and skip a 1xx it did not ask for). A client
  // that has closed both ends answers it with a reset, seen by the next call; a half-closed one
  // reads and skips it, and its request runs to its answer.
  bool client_gone() const;

 private:
  int fd_ = -1;
  mutable bool probed_ = false;
};

}  // namespace moss
