// The NVIDIA runtime features that only the Hopper kernels use, in CUDA's spelling, so that it
// stays in the portability layer (docs/architecture.md): the copy engine's tensor maps (made by a
// driver function whose address the runtime hands out: the program needs no libcuda link) and
// launches in thread-block clusters. Included by kernels/hopper_common.h only; NVIDIA builds only.
#pragma once

#include "runtime/portability.h"

#if MOSS_PLATFORM_NVIDIA
#include <cuda.h>          // CUtensorMap and its enums only
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled

#include <string>

namespace moss {
namespace nvidia {

using TensorMap = CUtensorMap;

// Whether the copy engine promotes a map's reads into L2 in 256-byte lines.
enum class L2Promotion { None, Lines256 };

inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 encoder = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found);
    if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || !fn)
      throw failure(std::string("the CUDA driver has no cuTensorMapEncodeTiled (") + cudaGetErrorString(e) + ")");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  return encoder;
}

// The element types the copy engine moves for the Hopper kernels: bytes (the INT8 ConvRot GEMM's
// int8 operands; the copy engine only moves bits, so unsigned bytes serve signed ones), bf16, f32.
enum class TmaElement { Byte, BF16, F32 };
constexpr int tma_element_bytes(TmaElement e) { return e == TmaElement::Byte ? 1 : e == TmaElement::BF16 ? 2 : 4; }
inline const char* tma_element_name(TmaElement e) {
  return e == TmaElement::Byte ? "int8" : e == TmaElement::BF16 ? "bf16" : "f32";
}

// A 2-D tensor [rows, cols] (row stride ld elements) in boxes of box_cols x box_rows, laid out in
// shared memory with the 128-byte swizzle; out-of-range box parts read as zeros and are not
// written.
inline TensorMap swizzled_2d_tensor_map(const void* base, TmaElement element, int64_t rows, int64_t cols, int64_t ld,
                                        int box_cols, int box_rows, L2Promotion l2) {
  TensorMap map;
  const int esize = tma_element_bytes(element);
  const CUtensorMapDataType type = element == TmaElement::Byte   ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                                   : element == TmaElement::BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                                 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  const cuuint64_t dims[2] = {cuuint64_t(cols), cuuint64_t(rows)};    // innermost first
  const cuuint64_t strides[1] = {cuuint64_t(ld) * cuuint64_t(esize)};  // bytes, of dims 1..
  const cuuint32_t box[2] = {cuuint32_t(box_cols), cuuint32_t(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r = tensor_map_encoder()(
      &map, type, 2, const_cast<void*>(base), dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
      CU_TENSOR_MAP_SWIZZLE_128B,
      l2 == L2Promotion::Lines256 ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B : CU_TENSOR_MAP_L2_PROMOTION_NONE,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw failure("cuTensorMapEncodeTiled failed (error " + std::to_string(int(r)) + ") for " + std::to_string(rows) +
                  "x" + std::to_string(cols) + " " + tma_element_name(element) + ", ld " + std::to_string(ld));
  return map;
}

// Launches kernel(args) on a grid of blocks_x x cluster_y blocks in clusters of (1, cluster_y);
// `what` names the launch in the error.
template <class Kernel, class Args>
void launch_in_clusters(Kernel kernel, unsigned blocks_x, unsigned cluster_y, unsigned threads, size_t smem_bytes,
                        hipStream_t stream, const Args& args, const std::string& what) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(blocks_x, cluster_y, 1);
  config.blockDim = dim3(threads, 1, 1);
  config.dynamicSmemBytes = smem_bytes;
  config.stream = stream;
  cudaLaunchAttribute cluster[1] = {};
  cluster[0].id = cudaLaunchAttributeClusterDimension;
  cluster[0].val.clusterDim.x = 1;
  cluster[0].val.clusterDim.y = cluster_y;
  cluster[0].val.clusterDim.z = 1;
  config.attrs = cluster;
  config.numAttrs = 1;
  const cudaError_t e = cudaLaunchKernelEx(&config, kernel, args);
  if (e != cudaSuccess) throw failure(what + " failed: " + cudaGetErrorString(e));
}

}  // namespace nvidia
}  // namespace moss
#endif  // MOSS_PLATFORM_NVIDIA
