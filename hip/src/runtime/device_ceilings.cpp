#include "runtime/device_ceilings.h"

namespace moss {
namespace {

struct Entry {
  const char* name;  // as cudaGetDeviceProperties names the card, exactly
  double tflops, gbs;
  const char* source;
};

// Dense bf16 (no sparsity) and memory bandwidth. The H200's were measured there (the kernel
// checks' best GEMM and copy, bench/results); the others are NVIDIA's datasheet figures.
const Entry kCards[] = {
    {"NVIDIA H200", 790.0, 4300.0, "measured on an H200"},
    {"NVIDIA H200 NVL", 835.0, 4800.0, "H200 NVL datasheet"},
    {"NVIDIA H100 80GB HBM3", 989.4, 3350.0, "H100 SXM5 datasheet"},
    {"NVIDIA H100 PCIe", 756.5, 2039.0, "H100 PCIe datasheet"},
    {"NVIDIA H100 NVL", 835.5, 3900.0, "H100 NVL datasheet"},
};

}  // namespace

KnownCeilings nvidia_ceilings(const std::string& device_name) {
  for (const Entry& e : kCards)
    if (device_name == e.name) return {e.tflops, e.gbs, std::string("table: ") + e.name + ", " + e.source};
  return {0, 0, "unknown card '" + device_name + "': no ceilings in the table (runtime/device_ceilings.cpp)"};
}

}  // namespace moss
