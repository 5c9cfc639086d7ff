#include "server/deadline_stream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "server/connection_watch.h"

namespace moss {
namespace {

const char* reason_phrase(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Error";
  }
}

std::string seconds(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", s);
  return b;
}


}  // namespace

DeadlineStream::DeadlineStream(int fd, const StreamDeadlines& deadlines, const HeadLimits& limits,
                               std::function<bool()> stopping)
    : fd_(fd), stopping_(std::move(stopping)), deadlines_(deadlines), limits_(limits) {
  start_request();
}

void DeadlineStream::start_request() {
  const auto now = Clock::now();
  auto after = [&](double s) { return now + std::chrono::microseconds(int64_t(s * 1e6)); };
  phase_ = Phase::Head;
  idle_deadline_ = after(deadlines_.idle_s);
  head_deadline_ = after(deadlines_.head_s);
  head_.emplace(limits_);
  body_.reset();
}

int DeadlineStream::remaining_ms(Clock::time_point deadline) const {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return int(std::max<int64_t>(0, std::min<int64_t>(left, 1 << 30)));
}

int DeadlineStream::wait_readable(int timeout_ms) const {
  pollfd p = {fd_, POLLIN, 0};
  for (;;) {
    const int r = poll(&p, 1, timeout_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return r;
    return (p.revents & (POLLIN | POLLHUP | POLLERR)) ? 1 : -1;
  }
}

ssize_t DeadlineStream::fill() {
  const Clock::time_point deadline = phase_ == Phase::Head ? head_deadline_ : body_deadline_;
  if (pos_ == end_) pos_ = end_ = 0;
  for (;;) {
    const int left = remaining_ms(deadline);
    const int ready = wait_readable(std::min(left, 100));
    if (ready == 0 && stopping_()) return -1;
    if (ready == 0 && left > 100) continue;
    if (ready == 0) {
      const bool head = phase_ == Phase::Head;
      return refuse({408, std::string("the request ") + (head ? "head" : "body") + " did not arrive within " +
                              seconds(head ? deadlines_.head_s : deadlines_.body_s) + " s"});
    }
    if (ready < 0) return -1;
    const ssize_t n = recv(fd_, buf_ + end_, sizeof buf_ - end_, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n > 0) end_ += size_t(n);
    return n;
  }
}

ssize_t DeadlineStream::refuse(const WireRefusal& r) {
  answer(r.status, r.message);
  return -1;
}

ssize_t DeadlineStream::read(char* ptr, size_t size) {
  if (answered_ || broken_ || phase_ == Phase::Response) return answered_ || broken_ ? -1 : 0;
  if (phase_ == Phase::Body && body_->state() == RequestBodyCheck::State::Done) return 0;  // the framed end
  if (buffered() == 0) {
    const ssize_t n = fill();
    if (n <= 0) return n;
  }
  size_t n = 0;
  while (n < size && pos_ < end_) {
    const char c = buf_[pos_++];
    ptr[n++] = c;
    if (phase_ == Phase::Head) {
      const RequestHeadCheck::State s = head_->feed(c);
      if (s == RequestHeadCheck::State::Refused) return refuse(head_->refusal());
      if (s == RequestHeadCheck::State::Done) {
        phase_ = Phase::Body;
        body_.emplace(limits_, head_->chunked(), head_->content_length());
        body_deadline_ = Clock::now() + std::chrono::microseconds(int64_t(deadlines_.body_s * 1e6));
        break;  // the head's last byte: the body starts with the next read
      }
    } else {
      const RequestBodyCheck::State s = body_->feed(c);
      if (s == RequestBodyCheck::State::Refused) return refuse(body_->refusal());
      if (s == RequestBodyCheck::State::Done) break;
    }
  }
  return ssize_t(n);
}

ssize_t DeadlineStream::write(const char* ptr, size_t size) {
  if (answered_) return ssize_t(size);  // the library's answer to a request refused here: dropped
  if (broken_) return -1;
  if (phase_ != Phase::Response) {
    // An interim "100 Continue" is not the response: the body is still to come.
    const bool interim = size > 10 && std::strncmp(ptr, "HTTP/1.1 1", 10) == 0;
    if (!interim) phase_ = Phase::Response;
    write_deadline_ = Clock::now() + std::chrono::microseconds(int64_t(deadlines_.write_s * 1e6));
  }
  for (;;) {
    pollfd p = {fd_, POLLOUT, 0};
    const int r = poll(&p, 1, remaining_ms(write_deadline_));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0 || !(p.revents & POLLOUT)) {
      broken_ = true;
      return -1;
    }
    const ssize_t n = send(fd_, ptr, size, MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) broken_ = true;
    return n;
  }
}

bool DeadlineStream::is_readable() const {
  return buffered() > 0 || wait_readable(remaining_ms(phase_ == Phase::Head ? head_deadline_ : body_deadline_)) > 0;
}

bool DeadlineStream::is_writable() const {
  pollfd p = {fd_, POLLOUT, 0};
  return poll(&p, 1, remaining_ms(write_deadline_)) > 0 && (p.revents & POLLOUT);
}

bool DeadlineStream::reusable() const {
  return !answered_ && !broken_ && body_ && body_->state() == RequestBodyCheck::State::Done;
}

void DeadlineStream::answer(int status, const std::string& message) {
  if (answered_ || broken_) return;
  const std::string body = nlohmann::json{{"error", message}, {"detail", message}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) +
                     "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                     "\r\nConnection: close\r\n";
  if (status == 503) head += "Retry-After: 1\r\n";
  const std::string all = head + "\r\n" + body;
  phase_ = Phase::Head;  // a fresh write deadline for this answer
  size_t sent = 0;
  while (sent < all.size()) {
    const ssize_t n = write(all.data() + sent, all.size() - sent);
    if (n <= 0) break;
    sent += size_t(n);
  }
  answered_ = true;
  answered_status_ = status;
}

void DeadlineStream::close_gracefully() {
  shutdown(fd_, SHUT_WR);
  const auto until = Clock::now() + std::chrono::seconds(1);
  size_t drained = 0;
  char sink[4096];
  while (drained < (size_t(1) << 20) && wait_readable(remaining_ms(until)) > 0) {
    const ssize_t n = recv(fd_, sink, sizeof sink, 0);
    if (n <= 0) break;
    drained += size_t(n);
  }
  close(fd_);
}

void DeadlineStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage a = {};
  socklen_t len = sizeof a;
  if (getpeername(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) socket_address(a, ip, port);
}

void DeadlineStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage a = {};
  socklen_t len = sizeof a;
  if (getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) socket_address(a, ip, port);
}

}  // namespace moss
