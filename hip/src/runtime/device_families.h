// Which GPU architectures moss-infer-hip runs on, and what each one is called in the shops
// (docs/amd_targets.md). Plain C++ with no HIP header, so the unit tests read the same table the
// HIP build's device listing (runtime/devices.hip) and --list-devices print.
//
// Supported on AMD: every Radeon whose ISA has the wave32 16x16x16 bf16 WMMA instruction, RDNA3
// (gfx1100-gfx1103), RDNA3.5 (gfx1150-gfx1153) and RDNA4 (gfx1200, gfx1201). Every other
// architecture is named with its family and the reason the kernels cannot run on it.
#pragma once

#include <string>
#include <vector>

namespace moss {

struct ArchFamily {
  std::string family;   // "RDNA3 (Radeon RX 7800 XT/7700 XT, PRO W7700)"; "" when unknown
  bool supported = false;
  std::string reason;   // why not, when !supported
};

// The architecture as the runtime names it ("gfx1101", "sm_90"), feature suffixes removed.
ArchFamily arch_family(const std::string& arch);

// Whether a supported architecture multiplies int8 matrices faster than bf16 ones (RDNA4's iu8
// WMMA and Hopper's int8 mma at twice the bf16 rate; RDNA3/3.5's at the same rate), which decides
// where int8 QKᵀ pays for its keys' pass (CoreOps::attention_int8_qk, docs/attention_int8_qk.md;
// bench/amd_model.py's int8_rate). False for an architecture the product does not support.
bool int8_matrix_faster(const std::string& arch);

// The AMD architectures the product supports, in the order of hip/amd_targets.txt.
const std::vector<std::string>& supported_amd_archs();

}  // namespace moss
