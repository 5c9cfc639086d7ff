// One client connection as cpp-httplib reads and writes it, with deadlines per request instead of
// the library's timeout per read: the head must be complete within head_s of the wait for it
// starting (accept, or the previous response), the body within body_s after the head, and the
// response must be sent within write_s. A client sending a byte a second therefore holds its
// connection for head_s, not for ever. Every byte of the head and body passes the wire checks of
// server/request_head.h before the library sees it; a refusal (408, 413, 414, 415, 431, 400, 501,
// 505) is answered here as JSON and the library's own answer to the cut request is dropped.
// The library reads the body only to its framed end (later reads see the end of the stream), and
// a connection whose body was not read to its end is not used for another request.
#pragma once
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include <httplib.h>

#include "server/request_head.h"

namespace moss {

struct StreamDeadlines {
  double idle_s = 5;    // keep-alive: the wait for a request's first byte (closed silently after)
  double head_s = 10;   // the head, from the start of the wait
  double body_s = 20;   // the body, from the end of the head
  double write_s = 60;  // the response, from its first byte
};

class DeadlineStream : public httplib::Stream {
 public:
  // `stopping`: the server stops; a read waiting for the client gives up (checked every 100 ms).
  DeadlineStream(int fd, const StreamDeadlines& deadlines, const HeadLimits& limits,
                 std::function<bool()> stopping);
  // Other deadlines from the next request on (a reserve connection's shorter ones).
  void set_deadlines(const StreamDeadlines& deadlines) {
    deadlines_ = deadlines;
    start_request();
  }

  // Waits (at most idle_s, in slices so that stopping is seen) for the next request's first
  // byte and starts its deadlines; false when none comes, the client closed, or stopping().
  bool next_request() {
    start_request();
    while (buffered() == 0) {
      const int r = wait_readable(std::min(remaining_ms(idle_deadline_), 100));
      if (r < 0 || stopping_()) return false;
      if (r > 0) return fill() > 0;
      if (remaining_ms(idle_deadline_) <= 0) return false;
    }
    return true;
  }
  // The request's body was read to its framed end and nothing was refused: the connection can
  // carry another request.
  bool reusable() const;
  // Sends a refusal as JSON {"error", "detail"} with Connection: close (also used before any
  // request is read, to refuse a connection).
  void answer(int status, const std::string& message);
  // The status answer() sent; 0 when it sent none (the library answers the request).
  int refused_status() const { return answered_ ? answered_status_ : 0; }
  // Half-closes, reads what the client still sends for a moment (so that its unread bytes do not
  // turn the close into a reset that loses the answer), then closes.
  void close_gracefully();

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }

 private:
  using Clock = std::chrono::steady_clock;
  enum class Phase { Head, Body, Response };
  void start_request();
  size_t buffered() const { return end_ - pos_; }
  int remaining_ms(Clock::time_point deadline) const;
  int wait_readable(int timeout_ms) const;  // poll: 1 readable, 0 timeout, -1 error
  ssize_t fill();                           // reads into the buffer before the phase's deadline
  ssize_t refuse(const WireRefusal& r);

  int fd_;
  std::function<bool()> stopping_;
  StreamDeadlines deadlines_;
  HeadLimits limits_;
  char buf_[16384];
  size_t pos_ = 0, end_ = 0;
  Phase phase_ = Phase::Head;
  Clock::time_point idle_deadline_, head_deadline_, body_deadline_, write_deadline_;
  std::optional<RequestHeadCheck> head_;
  std::optional<RequestBodyCheck> body_;
  bool answered_ = false, broken_ = false;
  int answered_status_ = 0;
};

}  // namespace moss
