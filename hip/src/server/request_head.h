// The request head and the body's framing as they arrive on the wire, byte by byte, checked
// before cpp-httplib parses them (server/deadline_stream.h feeds it). cpp-httplib 0.11 is lenient
// where leniency lets a request mean two things: it skips header lines without CR or without a
// colon, URL-decodes header values ("Content-Length: %35"), accepts Content-Length beside
// Transfer-Encoding, reads a chunked body without any size limit, and a GET's body as the next
// request. A front proxy may read such a request differently (request smuggling), so here each
// of those is refused with the status that says why, and the body's end is known exactly, so a
// connection whose body was not read to its end is closed, never parsed on.
#pragma once
#include <cstdint>
#include <string>

namespace moss {

struct HeadLimits {
  size_t max_line_bytes = 8192;      // the request line (414 beyond) and each header line (431)
  size_t max_head_bytes = 32 * 1024;  // the whole head (431)
  size_t max_fields = 100;           // header fields (431)
  size_t max_body_bytes = 1 << 20;   // the body's bytes as sent, chunked or not (413)
};

// A refusal: the HTTP status and a message naming the problem. status 0: none.
struct WireRefusal {
  int status = 0;
  std::string message;
};

// The head of one request, fed byte by byte until it ends (the blank line) or is refused.
class RequestHeadCheck {
 public:
  explicit RequestHeadCheck(const HeadLimits& limits) : limits_(limits) {}
  enum class State { More, Done, Refused };
  State feed(char c);
  const WireRefusal& refusal() const { return refusal_; }
  // After Done: how the body is framed.
  bool chunked() const { return chunked_; }
  uint64_t content_length() const { return content_length_; }  // 0 without the header
  const std::string& method() const { return method_; }

 private:
  State refuse(int status, const std::string& message);
  State end_of_line();
  State request_line(const std::string& line);
  State header_line(const std::string& line);
  State end_of_head();

  HeadLimits limits_;
  WireRefusal refusal_;
  std::string line_;
  size_t head_bytes_ = 0, fields_ = 0;
  bool have_request_line_ = false, http10_ = false;
  int content_lengths_ = 0, transfer_encodings_ = 0;
  bool chunked_ = false;
  uint64_t content_length_ = 0;
  std::string method_;
};

// The body of one request after its head: counts what a chunked body carries (its data, not its
// framing) against the limit and knows where the body ends.
class RequestBodyCheck {
 public:
  RequestBodyCheck(const HeadLimits& limits, bool chunked, uint64_t content_length);
  enum class State { More, Done, Refused };
  State feed(char c);
  State state() const { return state_; }
  const WireRefusal& refusal() const { return refusal_; }

 private:
  State refuse(int status, const std::string& message);
  enum class Part { SizeLine, Data, DataEnd, Trailer };
  size_t max_body_;
  bool chunked_;
  uint64_t remaining_ = 0;  // Content-Length: bytes left; chunked: the current chunk's
  uint64_t data_bytes_ = 0;
  Part part_ = Part::SizeLine;
  std::string line_;
  State state_ = State::More;
  WireRefusal refusal_;
};

}  // namespace moss
