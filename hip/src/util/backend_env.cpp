#include "util/backend_env.h"

#include <cstdlib>
#include <string>

#include "util/error.h"

namespace moss {
namespace {

// The variable's value, "" when unset; refused naming both when it is none of `a`, `b`.
std::string checked(const char* name, const char* a, const char* b) {
  const char* env = std::getenv(name);
  const std::string value = env ? env : "";
  if (!value.empty() && value != a && value != b)
    throw usage_error(std::string(name) + "=" + value + ": expected '" + a + "' or '" + b + "' (or unset)");
  return value;
}

}  // namespace

bool host_backend_requested() { return checked("MOSSINFER_BACKEND", "hip", "host") == "host"; }

bool portable_kernels_requested() { return checked("MOSSINFER_KERNELS", "native", "portable") == "portable"; }

Int8QkSetting int8_qk_setting() {
  const std::string v = checked("MOSSINFER_INT8_QK", "0", "1");
  return v.empty() ? Int8QkSetting::Backend : v == "1" ? Int8QkSetting::Always : Int8QkSetting::Never;
}

void check_backend_environment() {
  host_backend_requested();
  portable_kernels_requested();
  int8_qk_setting();
}

}  // namespace moss
