// The credentials of `serve --api-auth USER:PASS[,USER:PASS...]` and `--api-auth-file FILE`
// (docs/security.md), as AUTOMATIC1111's --api-auth: HTTP Basic, and OpenAI-style
// `Authorization: Bearer TOKEN` where TOKEN is one of the passwords (an OpenAI client has an API
// key, no user name). Both go through one check, which compares in constant time against every
// entry (how long it takes says nothing of how much of a password was right, nor which user).
#pragma once
#include <string>
#include <vector>

namespace moss {

// Equal in a time that depends on `given`'s length only, not on where the first difference is
// (passwords, and the ids of the image URLs that stand in for credentials).
bool same_secret(const std::string& expected, const std::string& given);

class Credentials {
 public:
  // Adds the entries of an --api-auth value: USER:PASS pairs separated by commas (a password may
  // hold colons; its user may not). Throws moss::Error (exit 2) naming `source` and the entry's
  // position, never its text (a password on a terminal or in a log).
  void add_list(const std::string& value, const std::string& source);
  // The entries of a file: one USER:PASS a line or commas as in add_list; blank lines and lines
  // starting with '#' are skipped. An unreadable file: exit 2 naming it.
  void add_file(const std::string& path);

  bool required() const { return !entries_.empty(); }
  // True when the Authorization header's value (empty: none sent) names an entry.
  bool accepts(const std::string& authorization) const;

 private:
  void add_entry(const std::string& entry, const std::string& where);
  struct Entry {
    std::string user, password;
  };
  std::vector<Entry> entries_;
};

}  // namespace moss
