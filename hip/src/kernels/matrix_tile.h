// First matrix kernel on the leaf: a plain one-wave-per-16x16-tile GEMM. It is the reference
// point for the tiled GEMM to come and what hip_check runs against a host reference on a GPU.
#pragma once

#include "runtime/portability.h"

namespace moss {

// C[M,N] (fp32) = A[M,K] · B[N,K]ᵀ. A and B are bf16, row-major with row strides lda and ldb
// (elements); C is row-major with row stride ldc. All pointers are device memory. Any M, N, K >= 1
// (tails are zero-padded). Launches ceil(N/16) x ceil(M/16) workgroups of one wave on `stream`.
void matrix_tile_gemm(const bf16* a, const bf16* b, float* c, int m, int n, int k, int lda, int ldb, int ldc,
                      hipStream_t stream);

}  // namespace moss
