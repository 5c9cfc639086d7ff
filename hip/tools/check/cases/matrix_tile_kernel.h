// The first matrix kernel on the leaf, kept for `moss-check kernels --family runtime` only (the
// program does not run it): a plain one-wave-per-16x16-tile GEMM, operands read straight from
// global memory (no LDS staging), walking K in steps of 16 through the matrix leaf. Simple and obviously right, not fast: on a new
// GPU it proves the leaf and its lane layouts before any tiled kernel is trusted.
#pragma once

#include "kernels/matrix_leaf.h"
#include "runtime/portability.h"

namespace moss {
namespace matrix_tile_detail {

__global__ __launch_bounds__(kWorkgroupSize) void matrix_tile_gemm_kernel(const bf16* __restrict__ a,
                                                                           const bf16* __restrict__ b,
                                                                           float* __restrict__ c, int m, int n, int k,
                                                                           int lda, int ldb, int ldc) {
  const int m0 = int(block_y()) * 16, n0 = int(block_x()) * 16;
  const bf16 zero = bf16_from_bits(0);
  leaf::FragC acc;
  leaf::zero(acc);
  for (int k0 = 0; k0 < k; k0 += 16) {
    leaf::FragA fa;
    leaf::FragB fb;
    leaf::load_a(fa, [&](int r, int kk) {
      const int row = m0 + r, col = k0 + kk;
      return row < m && col < k ? a[int64_t(row) * lda + col] : zero;
    });
    leaf::load_b(fb, [&](int kk, int cc) {  // B[k][n] = b[n][k]
      const int row = n0 + cc, col = k0 + kk;
      return row < n && col < k ? b[int64_t(row) * ldb + col] : zero;
    });
    leaf::mma(acc, fa, fb);
  }
  leaf::store_c(acc, [&](int r, int cc, float v) {
    const int row = m0 + r, col = n0 + cc;
    if (row < m && col < n) c[int64_t(row) * ldc + col] = v;
  });
}

}  // namespace matrix_tile_detail

// C[M,N] (fp32) = A[M,K] · B[N,K]ᵀ. A and B are bf16, row-major with row strides lda and ldb
// (elements); C is row-major with row stride ldc. All pointers are device memory. Any M, N, K >= 1
// (tails are zero-padded). Launches ceil(N/16) x ceil(M/16) workgroups of one wave on `stream`.
inline void matrix_tile_gemm(const bf16* a, const bf16* b, float* c, int m, int n, int k, int lda, int ldb, int ldc,
                             hipStream_t stream) {
  if (m <= 0 || n <= 0 || k <= 0) throw failure("matrix_tile_gemm: empty shape");
  const dim3 grid(unsigned((n + 15) / 16), unsigned((m + 15) / 16));
  hipLaunchKernelGGL(matrix_tile_detail::matrix_tile_gemm_kernel, grid, dim3(kWorkgroupSize), 0, stream, a, b, c, m,
                     n, k, lda, ldb, ldc);
  MOSS_HIP_CHECK(hipGetLastError());
}

}  // namespace moss
