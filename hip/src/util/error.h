// Errors carry the process exit status the CLI maps them to (docs/product.md section 3):
// 2 for a usage error or an unsupported request, 1 for any other failure.
#pragma once
#include <stdexcept>
#include <string>

namespace moss {

enum class ExitCode : int { Ok = 0, Failure = 1, Usage = 2, Interrupted = 130 };

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& msg) : std::runtime_error(msg), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

// A bad flag, a request the engine does not support, a model folder of an unsupported kind.
inline Error usage_error(const std::string& msg) { return Error(ExitCode::Usage, msg); }
// A file that is unreadable or malformed, a device failure, out of memory, ...
inline Error failure(const std::string& msg) { return Error(ExitCode::Failure, msg); }

}  // namespace moss
