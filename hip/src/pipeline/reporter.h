// Progress on stderr, one line per event (docs/product.md section 4); --quiet silences all of it but
// warnings (they change what runs) and the drawn seed of --seed -1 (without it the run cannot be
// repeated). With --progress json every line is one JSON object instead, for programs that
// follow a run (README "Progress events"): {"event": "info" | "warning" | "stage" | "step" |
// "image" | "done" | "error", ...}.
#pragma once
#include <cstdarg>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "util/log_text.h"

namespace moss {

enum class ProgressFormat { Text, Json };

class Reporter {
 public:
  explicit Reporter(bool quiet, ProgressFormat format = ProgressFormat::Text) : quiet_(quiet), format_(format) {}

  // A free-form line ("device: ...", "memory plan: ..."); as JSON {"event": "info", "message"}.
  void line(const char* fmt, ...) const __attribute__((format(printf, 2, 3))) {
    if (quiet_) return;
    va_list ap;
    va_start(ap, fmt);
    std::string text = vformat(fmt, ap);
    va_end(ap);
    if (format_ == ProgressFormat::Json) emit({{"event", "info"}, {"message", text}});
    else print(text);
  }
  // Warnings are shown even with --quiet: they change what runs (a cut prompt).
  void warning(const char* fmt, ...) const __attribute__((format(printf, 2, 3))) {
    va_list ap;
    va_start(ap, fmt);
    std::string text = vformat(fmt, ap);
    va_end(ap);
    if (format_ == ProgressFormat::Json) emit({{"event", "warning"}, {"message", text}});
    else print("warning: " + text);
  }
  // A structured event: `text` is its line in the text format, `event` its JSON object.
  void event(const std::string& text, const nlohmann::ordered_json& event) const {
    if (quiet_) return;
    if (format_ == ProgressFormat::Json) emit(event);
    else print(text);
  }
  // An event shown even with --quiet (the drawn seed): as `event` lets, in either format.
  void always(const std::string& text, const nlohmann::ordered_json& event) const {
    if (format_ == ProgressFormat::Json) emit(event);
    else print(text);
  }
  ProgressFormat format() const { return format_; }

 private:
  static std::string vformat(const char* fmt, va_list ap) {
    va_list again;
    va_copy(again, ap);
    const int n = std::vsnprintf(nullptr, 0, fmt, ap);
    std::string s(size_t(n > 0 ? n : 0) + 1, '\0');
    std::vsnprintf(s.data(), s.size(), fmt, again);
    va_end(again);
    s.pop_back();
    return s;
  }
  // One stdio call per line: stdio locks the stream per call, so the lines of several engines'
  // threads (--device lists) never mix. Every line is escaped (util/log_text.h): text a client
  // sent (a sampler name, a prompt in a refusal) can neither start a line nor move the cursor.
  static void print(const std::string& text) {
    write_line(log_escape(text));
  }
  static void write_line(const std::string& line) {
    std::fputs((line + "\n").c_str(), stderr);
    std::fflush(stderr);
  }
  // Invalid UTF-8 (a prompt's bytes never are: they are checked) is replaced, never thrown on.
  static void emit(const nlohmann::ordered_json& j) {
    // JSON's own escaping already keeps the object on one line (control characters as \u00XX).
    write_line(j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
  }

  bool quiet_;
  ProgressFormat format_;
};

}  // namespace moss
