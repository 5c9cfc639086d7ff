// The ceilings `bench` and the kernel checks show a kernel's rate against (dense bf16 matrix rate
// and DRAM bandwidth) for NVIDIA cards, keyed by the runtime's device name, each entry saying
// where its figures come from (measured on that card, or its datasheet). A card not in the table
// has no ceilings ("unknown"), never another card's figures. Plain C++ (no HIP header): the unit
// tests read the same table. AMD cards' ceilings come from their own properties
// (tools/check/kernel_check.h).
#pragma once
#include <string>

namespace moss {

struct KnownCeilings {
  double tflops = 0, gbs = 0;  // 0: unknown
  std::string source;          // "table: NVIDIA H200, measured on one", or "unknown card ..."
  bool known() const { return tflops > 0 && gbs > 0; }
};

KnownCeilings nvidia_ceilings(const std::string& device_name);

}  // namespace moss
