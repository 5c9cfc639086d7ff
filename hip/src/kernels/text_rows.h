// Row-wise kernels of the text-encoder (Gated DeltaNet) op family: the causal depthwise conv +
// SiLU, the decay/beta gates, the per-head L2 norm and the gated RMS norm. All fp32 (no matrix
// products); each follows the operation order of its host replay (ops/host/text_ops_host.cpp), so
// results agree with it to a few ulp. Pointers are device memory; `ld*` are row strides in
// elements (column stride 1). Launches go to `stream`; nothing synchronises.
#pragma once

#include <cstdint>

#include "runtime/portability.h"

namespace moss {

// y[t, c] = silu( Σ_{j<taps} w[c, j] · x[t − (taps−1) + j, c] ), zero history before row 0.
// w is [channels, taps] (row stride ldw), P = float or bf16 (the instantiated parameter types).
template <class P>
void text_causal_conv1d_silu(const float* x, int64_t ldx, const P* w, int64_t ldw, float* y, int64_t ldy, int rows,
                             int channels, int taps, hipStream_t stream);

// g = −exp(a_log[h]) · softplus(a + dt_bias[h]) (threshold 20), beta = σ(b); [rows, heads] each.
// a_log and dt_bias: `heads` elements each, f32 or bf16 (checkpoints may keep A_log in f32).
template <class PA, class PD>
void text_deltanet_gates(const float* a, int64_t lda, const float* b, int64_t ldb, const PA* a_log, const PD* dt_bias,
                         float* g, int64_t ldg, float* beta, int64_t ldbeta, int rows, int heads, hipStream_t stream);

// Over each run of `group` columns: y = x · (1 / sqrt(Σ x² + eps)). y may be x.
void text_l2_norm(const float* x, int64_t ldx, float* y, int64_t ldy, int rows, int cols, int group, float eps,
                  hipStream_t stream);

// Over each run of `group` columns: y = w[c] · (x · (1 / sqrt(mean(x²) + eps))) · silu(z); w has
// `group` elements (f32 or bf16), shared by every group.
template <class P>
void text_gated_rms_norm(const float* x, int64_t ldx, const float* z, int64_t ldz, const P* w, float* y, int64_t ldy,
                         int rows, int cols, int group, float eps, hipStream_t stream);

}  // namespace moss
