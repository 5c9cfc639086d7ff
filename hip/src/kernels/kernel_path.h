// Which configuration of each kernel runs: the AMD build has one, "portable" (the kernels, tile
// shapes and launch shapes written for a Radeon: wave32 workgroups, the leaf GEMM, the reference
// attention); the NVIDIA build has its own faster ones ("native": wgmma, mma.sync, 4-warp rows)
// and also holds every portable configuration, so that the code a Radeon runs can be run, at full
// size, on an H200, with only the 16x16x16 leaf instruction (kernels/matrix_leaf.h) and the
// global-to-shared copy (kernels/tile_copy.h) in NVIDIA's spelling (issue 20).
//
// MOSSINFER_KERNELS=portable selects them on NVIDIA (native, or unset, is the default); any other
// value is refused (exit status 2) the first time it is read; the HIP backend reads it when it
// starts, before any work. Kernel launchers ask portable_kernels() at dispatch.
#pragma once

#include <type_traits>

#include "runtime/portability.h"
#include "util/backend_env.h"

namespace moss {

inline bool portable_kernels() {
  if (!kPlatformNvidia) return true;  // AMD has no other configuration
  static const bool portable = portable_kernels_requested();  // util/backend_env.h: one parser
  return portable;
}

// The block of the simple memory-bound kernels (elementwise rows, group-norm statistics, VAE
// layout moves, weight packing): eight warps on NVIDIA's native path, one wave32 on the portable
// one (the AMD product contract: a workgroup is one wave).
template <bool kPortable>
constexpr int kMemoryBoundThreads = kPortable ? kWorkgroupSize : 256;

// Calls f(std::true_type) when the portable configuration runs, else f(std::false_type): a
// launcher written as one generic lambda instantiates both configurations in NVIDIA builds and
// only the portable one in AMD builds (which hold no other).
template <class F>
void with_kernel_path(F&& f) {
  if constexpr (kPlatformNvidia) {
    if (!portable_kernels()) return f(std::false_type{});
  }
  f(std::true_type{});
}

// pick(std::true_type / std::false_type) of the configuration that runs: a constant of the
// path's template, e.g. kMemoryBoundThreads<decltype(p)::value> for p.
template <class Pick>
auto kernel_path_value(Pick&& pick) {
  decltype(pick(std::true_type{})) value{};
  with_kernel_path([&](auto portable) { value = pick(portable); });
  return value;
}

}  // namespace moss
