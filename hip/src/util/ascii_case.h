// ASCII lower case, for the names this program compares without regard to case: HTTP header names
// and values (RFC 9110), host names, A1111's sampler and schedule labels. Bytes outside A-Z stay
// as they are (a UTF-8 sequence is never changed), whatever the C locale says.
#pragma once
#include <string>

namespace moss {

inline std::string ascii_lowercase(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
  return s;
}

}  // namespace moss
