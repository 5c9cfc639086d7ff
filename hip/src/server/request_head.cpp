#include "server/request_head.h"

#include <cctype>
#include <cstring>

#include "util/ascii_case.h"

namespace moss {
namespace {

bool is_token(const std::string& s) {
  if (s.empty()) return false;
  for (unsigned char c : s)
    if (!std::isalnum(c) && !std::strchr("!#$%&'*+-.^_`|~", c)) return false;
  return true;
}

std::string trim_ows(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  return s.substr(b, e - b);
}

// A value as it may appear in a message: printable, at most 60 bytes.
std::string shown(const std::string& s) {
  std::string out;
  for (unsigned char c : s.substr(0, 60)) out += (c >= 0x20 && c < 0x7f) ? char(c) : '?';
  return "'" + out + (s.size() > 60 ? "...'" : "'");
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (unsigned char c : s)
    if (!std::isdigit(c)) return false;
  return true;
}

}  // namespace

RequestHeadCheck::State RequestHeadCheck::refuse(int status, const std::string& message) {
  refusal_ = {status, message};
  return State::Refused;
}

RequestHeadCheck::State RequestHeadCheck::feed(char c) {
  if (refusal_.status) return State::Refused;
  if (++head_bytes_ > limits_.max_head_bytes)
    return refuse(431, "the request head is longer than " + std::to_string(limits_.max_head_bytes) + " bytes");
  if (c == '\0') return refuse(400, "a NUL byte in the request head");
  line_ += c;
  if (line_.size() > limits_.max_line_bytes + 2) {
    if (!have_request_line_)
      return refuse(414, "the request line is longer than " + std::to_string(limits_.max_line_bytes) + " bytes");
    return refuse(431, "a header line is longer than " + std::to_string(limits_.max_line_bytes) + " bytes");
  }
  return c == '\n' ? end_of_line() : State::More;
}

RequestHeadCheck::State RequestHeadCheck::end_of_line() {
  if (line_.size() < 2 || line_[line_.size() - 2] != '\r')
    return refuse(400, "a line of the request head ends in a bare LF (CRLF expected)");
  const std::string line = line_.substr(0, line_.size() - 2);
  line_.clear();
  if (line.find('\r') != std::string::npos) return refuse(400, "a CR inside a line of the request head");
  if (!have_request_line_) return request_line(line);
  if (line.empty()) return end_of_head();
  return header_line(line);
}

RequestHeadCheck::State RequestHeadCheck::request_line(const std::string& line) {
  have_request_line_ = true;
  const size_t a = line.find(' '), b = a == std::string::npos ? a : line.find(' ', a + 1);
  if (a == std::string::npos || b == std::string::npos || line.find(' ', b + 1) != std::string::npos || a == 0 ||
      b == a + 1 || b + 1 == line.size())
    return refuse(400, "the request line " + shown(line) + " is not METHOD TARGET HTTP/1.1");
  method_ = line.substr(0, a);
  if (!is_token(method_)) return refuse(400, "the method " + shown(method_) + " is not a token");
  static const char* const served[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"};
  bool known = false;
  for (const char* m : served) known = known || method_ == m;
  if (!known) return refuse(501, "method " + shown(method_) + " is not implemented");
  const std::string version = line.substr(b + 1);
  if (version != "HTTP/1.1" && version != "HTTP/1.0")
    return refuse(505, "HTTP version " + shown(version) + " is not supported (HTTP/1.1 or HTTP/1.0)");
  http10_ = version == "HTTP/1.0";
  return State::More;
}

RequestHeadCheck::State RequestHeadCheck::header_line(const std::string& line) {
  if (++fields_ > limits_.max_fields)
    return refuse(431, "more than " + std::to_string(limits_.max_fields) + " header fields");
  if (line[0] == ' ' || line[0] == '\t')
    return refuse(400, "a header line starts with white space (obsolete line folding)");
  const size_t colon = line.find(':');
  if (colon == std::string::npos) return refuse(400, "a header line without a colon: " + shown(line));
  const std::string name = line.substr(0, colon), value = trim_ows(line.substr(colon + 1)), key = ascii_lowercase(name);
  if (!is_token(name))
    return refuse(400, "the header name " + shown(name) + " is not a token (no white space before the colon)");
  if (key == "content-length") {
    if (++content_lengths_ > 1) return refuse(400, "two Content-Length headers (ambiguous framing)");
    if (!all_digits(value) || value.size() > 18)
      return refuse(400, "Content-Length " + shown(value) + " is not a number of bytes");
    content_length_ = std::stoull(value);
  } else if (key == "transfer-encoding") {
    if (++transfer_encodings_ > 1) return refuse(400, "two Transfer-Encoding headers (ambiguous framing)");
    if (ascii_lowercase(value) != "chunked")
      return refuse(501, "Transfer-Encoding " + shown(value) + " is not supported (only chunked)");
    chunked_ = true;
  } else if (key == "content-encoding" && ascii_lowercase(value) != "identity") {
    return refuse(415, "Content-Encoding " + shown(value) +
                           " is not accepted: send the body uncompressed (the body limit of " +
                           std::to_string(limits_.max_body_bytes) + " bytes is on the body as sent)");
  }
  return State::More;
}

RequestHeadCheck::State RequestHeadCheck::end_of_head() {
  if (content_lengths_ && transfer_encodings_)
    return refuse(400, "Content-Length together with Transfer-Encoding (ambiguous framing)");
  if (transfer_encodings_ && http10_) return refuse(400, "Transfer-Encoding in an HTTP/1.0 request");
  if (content_length_ > limits_.max_body_bytes)
    return refuse(413, "the body is " + std::to_string(content_length_) + " bytes; the limit is " +
                           std::to_string(limits_.max_body_bytes));
  return State::Done;
}

RequestBodyCheck::RequestBodyCheck(const HeadLimits& limits, bool chunked, uint64_t content_length)
    : max_body_(limits.max_body_bytes), chunked_(chunked), remaining_(content_length) {
  if (!chunked_ && remaining_ == 0) state_ = State::Done;
}

RequestBodyCheck::State RequestBodyCheck::refuse(int status, const std::string& message) {
  refusal_ = {status, message};
  return state_ = State::Refused;
}

RequestBodyCheck::State RequestBodyCheck::feed(char c) {
  if (state_ != State::More) return state_;
  if (!chunked_) {
    if (--remaining_ == 0) state_ = State::Done;
    return state_;
  }
  switch (part_) {
    case Part::Data:
      if (--remaining_ == 0) part_ = Part::DataEnd;
      return state_;
    case Part::DataEnd:
      line_ += c;
      if (line_.size() < 2) return state_;
      if (line_ != "\r\n") return refuse(400, "a chunk's data is not followed by CRLF");
      line_.clear();
      part_ = Part::SizeLine;
      return state_;
    case Part::SizeLine:
    case Part::Trailer:
      break;
  }
  line_ += c;
  if (line_.size() > 256) return refuse(400, "a chunk-size line longer than 256 bytes");
  if (c != '\n') return state_;
  const std::string line = line_;
  line_.clear();
  if (line.size() < 2 || line[line.size() - 2] != '\r') return refuse(400, "a chunk line ends in a bare LF");
  if (part_ == Part::Trailer) {
    if (line != "\r\n") return refuse(400, "trailer fields after a chunked body are not accepted");
    return state_ = State::Done;
  }
  size_t digits = 0;
  while (digits < line.size() && std::isxdigit(static_cast<unsigned char>(line[digits]))) ++digits;
  const char after = line[digits];
  if (digits == 0 || digits > 15 || (after != '\r' && after != ';'))
    return refuse(400, "bad chunk size line " + shown(line.substr(0, line.size() - 2)));
  const uint64_t size = std::stoull(line.substr(0, digits), nullptr, 16);
  if (size > max_body_ || data_bytes_ + size > max_body_)
    return refuse(413, "the chunked body is longer than " + std::to_string(max_body_) + " bytes");
  data_bytes_ += size;
  remaining_ = size;
  part_ = size == 0 ? Part::Trailer : Part::Data;
  return state_;
}

}  // namespace moss
