// check_device: matrix
// The INT8 ConvRot GEMM (kernels/int8_linear.h) on the int8 matrix leaf (kernels/matrix_leaf.h,
// mma_i8: v_wmma_i32_16x16x16_iu8 on gfx11/gfx12, mma.sync m16n8k32 s8 on NVIDIA).
#include "kernels/int8_linear.h"
#include "kernels/kernel_path.h"
#include "kernels/matrix_leaf.h"

namespace moss {
namespace {

constexpr int kWaveTile = 32;  // each wave: a 32x32 output tile, 2x2 leaves

// Four bytes of a row at k0 (a multiple of 4), as one little-endian word; zero at or past k (k is
// a multiple of 4, so a word is wholly inside or wholly outside). `aligned`: the row's base is
// 4-byte aligned (one load), else the bytes one by one.
__device__ inline int32_t load_word(const int8_t* row, int64_t k0, int64_t k, bool aligned) {
  if (k0 >= k) return 0;
  if (aligned) return *reinterpret_cast<const int32_t*>(row + k0);
  const uint8_t* p = reinterpret_cast<const uint8_t*>(row + k0);
  return int32_t(uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24));
}

// kWaves waves side by side along N: the block covers 32 rows and 32·kWaves columns. Operands are
// read straight from global memory (each fragment word one 4-byte load); rows past m and columns
// past n load zeros and are not stored. The epilogue is the host's formula: float(acc), the two
// scales multiplied first, then the product, then the bias, each rounded on its own.
template <int kWaves>
__global__ MOSS_LAUNCH_BOUNDS(kWaves* kWaveSize, 1) void int8_gemm_kernel(Int8GemmArgs a, bool x_aligned,
                                                                           bool w_aligned) {
  const int wave = int(thread_x()) / kWaveSize;
  const int64_t m0 = int64_t(block_y()) * kWaveTile;
  const int64_t n0 = (int64_t(block_x()) * kWaves + wave) * kWaveTile;
  if (n0 >= a.n) return;  // a whole wave past the matrix (wave-uniform)
  leaf::FragC32 acc[2][2];
  for (auto& row : acc)
    for (auto& c : row) leaf::zero(c);
  for (int64_t k0 = 0; k0 < a.k; k0 += leaf::kLeafK8) {
    leaf::FragA8 fa[2];
    leaf::FragB8 fb[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      leaf::load_a8(fa[i], [&](int m, int k) {
        const int64_t row = m0 + 16 * i + m;
        return row < a.m ? load_word(a.qx + row * a.k, k0 + k, a.k, x_aligned) : 0;
      });
      leaf::load_b8(fb[i], [&](int n, int k) {
        const int64_t col = n0 + 16 * i + n;
        return col < a.n ? load_word(a.qw + col * a.k, k0 + k, a.k, w_aligned) : 0;
      });
    }
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 2; ++j) leaf::mma_i8(acc[i][j], fa[i], fb[j]);
  }
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j)
      leaf::store_c32(acc[i][j], [&](int m, int n, int32_t v) {
        const int64_t row = m0 + 16 * i + m, col = n0 + 16 * j + n;
        if (row >= a.m || col >= a.n) return;
        float y = mul_rn(float(v), mul_rn(a.sx[row], a.sw[col]));
        if (a.bias.data)
          y = y + (a.bias.bf16 ? to_float(static_cast<const bf16*>(a.bias.data)[col])
                               : static_cast<const float*>(a.bias.data)[col]);
        if (a.y.bf16) static_cast<bf16*>(a.y.data)[row * a.y.ld + col] = to_bf16(y);
        else static_cast<float*>(a.y.data)[row * a.y.ld + col] = y;
      });
}

// One wave per workgroup on the portable path (the AMD contract), four warps on NVIDIA's native one.
template <bool kPortable>
constexpr int kGemmWaves = kPortable ? 1 : 4;

}  // namespace

void int8_gemm(const Int8GemmArgs& a, hipStream_t stream) {
  if (a.m == 0 || a.n == 0) return;
  if (a.k % 4 != 0) throw failure("int8_gemm: k " + std::to_string(a.k) + " is not a multiple of 4");
  const bool x_aligned = reinterpret_cast<uintptr_t>(a.qx) % 4 == 0;
  const bool w_aligned = reinterpret_cast<uintptr_t>(a.qw) % 4 == 0;
  with_kernel_path([&](auto portable) {
    constexpr int waves = kGemmWaves<decltype(portable)::value>;
    const int64_t cols = int64_t(kWaveTile) * waves;
    const dim3 grid(unsigned((a.n + cols - 1) / cols), unsigned((a.m + kWaveTile - 1) / kWaveTile));
    hipLaunchKernelGGL(int8_gemm_kernel<waves>, grid, dim3(waves * kWaveSize), 0, stream, a, x_aligned, w_aligned);
  });
  MOSS_HIP_CHECK(hipGetLastError());
}

}  // namespace moss
