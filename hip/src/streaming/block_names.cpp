#include "streaming/block_names.h"

namespace moss {

int block_index(const std::string& name, const std::string& prefix) {
  const std::string head = prefix + "layers.";
  if (name.compare(0, head.size(), head) != 0) return -1;
  const size_t dot = name.find('.', head.size());
  if (dot == std::string::npos || dot == head.size() || dot - head.size() > 9) return -1;
  int n = 0;
  for (size_t i = head.size(); i < dot; ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    n = n * 10 + (name[i] - '0');
  }
  return n;
}

std::string block_head(const std::string& prefix, int block) { return prefix + "layers." + std::to_string(block) + "."; }

}  // namespace moss
