// Progress lines on stderr, one per event; --quiet silences them. Warnings (they change what
// runs) and the drawn seed of --seed -1 (without it the run cannot be repeated) show even
// under --quiet.
#pragma once
#include <cstdarg>
#include <cstdio>

namespace moss {

class Reporter {
 public:
  explicit Reporter(bool quiet) : quiet_(quiet) {}
  void line(const char* fmt, ...) const __attribute__((format(printf, 2, 3))) {
    if (quiet_) return;
    va_list ap;
    va_start(ap, fmt);
    std::vfprintf(stderr, fmt, ap);
    va_end(ap);
    std::fputc('\n', stderr);
    std::fflush(stderr);
  }
  // Warnings are shown even with --quiet: they change what runs (a cut prompt).
  void warning(const char* fmt, ...) const __attribute__((format(printf, 2, 3))) {
    va_list ap;
    va_start(ap, fmt);
    std::fputs("warning: ", stderr);
    std::vfprintf(stderr, fmt, ap);
    va_end(ap);
    std::fputc('\n', stderr);
  }
  void always(const char* fmt, ...) const __attribute__((format(printf, 2, 3))) {
    va_list ap;
    va_start(ap, fmt);
    std::vfprintf(stderr, fmt, ap);
    va_end(ap);
    std::fputc('\n', stderr);
    std::fflush(stderr);
  }

 private:
  bool quiet_;
};

}  // namespace moss
