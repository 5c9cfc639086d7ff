#include "runtime/device_families.h"

#include <cstring>

namespace moss {
namespace {

struct Row {
  const char* arch;
  const char* family;
};

// One row per architecture with the bf16 WMMA instruction. The register file differs inside a
// generation (gfx1100, gfx1101 and gfx1151: 1536 VGPRs per SIMD; the others 1024), the kernels
// do not (docs/amd_targets.md).
constexpr Row kSupported[] = {
    {"gfx1100", "RDNA3 (Radeon RX 7900 XTX/XT/GRE, PRO W7900/W7800)"},
    {"gfx1101", "RDNA3 (Radeon RX 7800 XT/7700 XT, PRO W7700)"},
    {"gfx1102", "RDNA3 (Radeon RX 7600 XT/7600, PRO W7600/W7500)"},
    {"gfx1103", "RDNA3 APU (Radeon 780M/760M/740M: Ryzen 7040/8040 Phoenix, Hawk Point)"},
    {"gfx1150", "RDNA3.5 APU (Radeon 890M/880M: Ryzen AI 300 Strix Point)"},
    {"gfx1151", "RDNA3.5 APU (Radeon 8060S/8050S/8040S: Ryzen AI Max Strix Halo)"},
    {"gfx1152", "RDNA3.5 APU (Radeon 860M/840M: Ryzen AI 300 Krackan Point)"},
    {"gfx1153", "RDNA3.5 APU (Radeon graphics of Ryzen AI 300 Krackan Point 2)"},
    {"gfx1200", "RDNA4 (Radeon RX 9060 XT/9060)"},
    {"gfx1201", "RDNA4 (Radeon RX 9070 XT/9070/9070 GRE, AI PRO R9700)"},
};

// Architectures without the instruction, by prefix (the longest matching prefix wins).
struct Other {
  const char* prefix;
  const char* family;
  const char* reason;
};
constexpr const char* kNoWmma = "no bf16 matrix instructions (the kernels need RDNA3's wave32 WMMA or newer)";
constexpr const char* kInstinct =
    "Instinct compute GPU: wave64 and MFMA matrix instructions, not the wave32 WMMA the kernels are written for";
constexpr Other kOthers[] = {
    {"gfx103", "RDNA2 (Radeon RX 6000, PRO W6000, Ryzen 6000/7000 APUs)", kNoWmma},
    {"gfx101", "RDNA1 (Radeon RX 5000, PRO W5000)", kNoWmma},
    {"gfx90a", "CDNA2 (Instinct MI210/MI250/MI250X)", kInstinct},
    {"gfx908", "CDNA1 (Instinct MI100)", kInstinct},
    {"gfx94", "CDNA3 (Instinct MI300A/MI300X/MI325X)", kInstinct},
    {"gfx95", "CDNA4 (Instinct MI350X/MI355X)", kInstinct},
    {"gfx90c", "GCN5 APU (Radeon Vega graphics, Ryzen 4000/5000)", kNoWmma},
    {"gfx9", "GCN5 (Radeon Vega, Radeon VII, Instinct MI25/MI50/MI60)", kNoWmma},
    {"gfx8", "GCN3/4 (Radeon R9 Fury, RX 400/500)", kNoWmma},
    {"gfx7", "GCN2 (Radeon R9 290, R7 260)", kNoWmma},
    {"gfx6", "GCN1 (Radeon HD 7000)", kNoWmma},
    {"gfx11", "RDNA3 (an architecture this release does not know)", "not one of the RDNA3 targets this release is built and checked for"},
    {"gfx12", "RDNA4 (an architecture this release does not know)", "not one of the RDNA4 targets this release is built and checked for"},
};

bool starts_with(const std::string& s, const char* prefix) { return s.compare(0, std::strlen(prefix), prefix) == 0; }

}  // namespace

const std::vector<std::string>& supported_amd_archs() {
  static const std::vector<std::string> archs = [] {
    std::vector<std::string> v;
    for (const Row& r : kSupported) v.push_back(r.arch);
    return v;
  }();
  return archs;
}

ArchFamily arch_family(const std::string& arch) {
  for (const Row& r : kSupported)
    if (arch == r.arch) return {r.family, true, ""};
  if (arch == "sm_90") return {"NVIDIA Hopper (H100/H200)", true, ""};
  if (starts_with(arch, "sm_"))
    return {"NVIDIA", false, "the NVIDIA build targets Hopper (sm_90) alone: its large GEMMs and attention use wgmma"};
  const Other* best = nullptr;
  for (const Other& o : kOthers)
    if (starts_with(arch, o.prefix) && (!best || std::strlen(o.prefix) > std::strlen(best->prefix))) best = &o;
  if (best) return {best->family, false, best->reason};
  return {"", false, "an architecture this release does not know"};
}

bool int8_matrix_faster(const std::string& arch) {
  return arch_family(arch).supported && (starts_with(arch, "gfx12") || starts_with(arch, "sm_"));
}

}  // namespace moss
