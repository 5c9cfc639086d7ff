// Progress lines on stderr, one per event; --quiet silences all of them (warnings included
// only where product.md asks for them regardless: none today).
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

 private:
  bool quiet_;
};

}  // namespace moss
