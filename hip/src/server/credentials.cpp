#include "server/credentials.h"

#include <cctype>
#include <fstream>
#include <optional>

#include "server/base64.h"
#include "util/error.h"

namespace moss {

// Equal in a time that depends on `given`'s length only, not on where the first difference is.
bool same_secret(const std::string& expected, const std::string& given) {
  unsigned char diff = expected.size() == given.size() ? 0 : 1;
  const size_t n = expected.empty() ? 1 : expected.size();
  for (size_t i = 0; i < given.size(); ++i)
    diff |= static_cast<unsigned char>(given[i] ^ (expected.empty() ? 0 : expected[i % n]));
  return diff == 0;
}

namespace {

// The scheme of an Authorization value, case-insensitive, and what follows it.
bool scheme(const std::string& authorization, const std::string& name, std::string& rest) {
  if (authorization.size() <= name.size() || authorization[name.size()] != ' ') return false;
  for (size_t i = 0; i < name.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != name[i]) return false;
  const size_t start = authorization.find_first_not_of(' ', name.size());
  rest = start == std::string::npos ? "" : authorization.substr(start);
  return true;
}

}  // namespace

void Credentials::add_entry(const std::string& entry, const std::string& where) {
  const size_t colon = entry.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == entry.size())
    throw usage_error(where + " is not USER:PASS (a user name and a password, both non-empty)");
  for (char c : entry)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F)
      throw usage_error(where + " holds a control character");
  entries_.push_back({entry.substr(0, colon), entry.substr(colon + 1)});
}

void Credentials::add_list(const std::string& value, const std::string& source) {
  size_t start = 0, n = 0;
  while (true) {
    const size_t comma = value.find(',', start);
    const std::string entry = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    add_entry(entry, source + ": entry " + std::to_string(++n));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
}

void Credentials::add_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw usage_error("--api-auth-file " + path + ": cannot be read");
  std::string line;
  size_t number = 0, before = entries_.size();
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    add_list(line, "--api-auth-file " + path + ":" + std::to_string(number));
  }
  if (in.bad()) throw usage_error("--api-auth-file " + path + ": cannot be read");
  if (entries_.size() == before) throw usage_error("--api-auth-file " + path + ": no USER:PASS entry in it");
}

bool Credentials::accepts(const std::string& authorization) const {
  std::string rest, user, password;
  bool basic = false;
  if (scheme(authorization, "basic", rest)) {
    // Only canonical padded base64 (RFC 7617): what decodes and encodes back to the same text.
    const std::optional<std::string> bytes = base64_decode(rest);
    const std::string decoded = bytes && base64_encode(*bytes) == rest ? *bytes : "";
    const size_t colon = decoded.find(':');
    if (colon == std::string::npos) return false;
    user = decoded.substr(0, colon);
    password = decoded.substr(colon + 1);
    basic = true;
  } else if (scheme(authorization, "bearer", rest)) {
    password = rest;
  } else {
    return false;
  }
  // Every entry is compared, whichever matched.
  bool found = false;
  for (const Entry& e : entries_) {
    const bool user_ok = !basic || same_secret(e.user, user);
    const bool password_ok = same_secret(e.password, password);
    found = found | (user_ok & password_ok);
  }
  return found;
}

}  // namespace moss
