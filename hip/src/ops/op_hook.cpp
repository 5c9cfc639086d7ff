#include "ops/op_hook.h"

#include <stdexcept>

namespace moss {

std::string op_dims(const Tensor& t) {
  std::string s;
  for (int i = 0; i < t.rank; ++i) s += (i ? "x" : "") + std::to_string(t.shape[i]);
  return s;
}

void op_require(bool ok, const char* op, const std::string& why) {
  if (!ok) throw std::invalid_argument(std::string(op) + ": " + why);
}

}  // namespace moss
