// The recurrent gated delta rule (kernels/deltanet.h): token by token, following the host replay
// (ops/host/text_ops_host.cpp, recurrent_head), all fp32, no matrix products.
//
// The columns of the state never mix (the delta u_b = beta·(v_b − S[:, b]·k) of value column b
// involves only column b), so a column of S lives in registers and runs the sequence on its own:
// decay, read, delta, write, output. On AMD one lane owns a whole column (dk floats) and every sum
// runs over the rows in the host's order, so the results are the host's up to fused multiply-adds.
// On NVIDIA two neighbouring threads share a column, dk/2 rows each (ptxas hoists the LDS reads of
// a whole pass and would spill a full column at dk = 128); their two partial sums are added,
// which reorders each sum once. A workgroup covers the value columns of one head (all on NVIDIA,
// 32 on AMD where a workgroup is one wave); q and k of the next tokens, shared by every column,
// are staged in LDS a few tokens at a time.
#include "kernels/deltanet.h"

namespace moss {
namespace {

constexpr int kTokens = 16;                  // tokens staged in LDS per step
constexpr int kParts = kPlatformNvidia ? 2 : 1;  // threads per value column

// Keeps the AMD compiler from loading all of k_t and q_t into registers at once (another 2·dk
// registers beside the column of S, which spills at dk = 128): LDS reads stay within their run of
// rows. (ptxas does not see this fence, hence the column split on NVIDIA.)
__device__ inline void reload_shared() { asm volatile("" ::: "memory"); }

template <int DV>
constexpr int recurrent_threads() {
  return kPlatformNvidia ? DV * kParts : kWorkgroupSize;
}

// Completes a per-thread partial sum over the threads of one column (neighbouring lanes). Both
// threads add the same two values, so both get the same bits.
__device__ inline float column_sum(float partial) {
  if (kParts == 2) partial += shfl_xor(partial, 1);
  return partial;
}

template <int DK, int DV>
__global__ __launch_bounds__(recurrent_threads<DV>()) void delta_recurrent_kernel(DeltaRuleArgs a) {
  constexpr int kThreads = recurrent_threads<DV>();
  constexpr int kCols = kThreads / kParts;  // value columns per workgroup
  constexpr int kRows = DK / kParts;        // state rows per thread
  constexpr int kRun = kRows < 32 ? kRows : 32;
  __shared__ float q_s[kTokens][DK], k_s[kTokens][DK];
  __shared__ float v_s[kTokens][kCols], decay_s[kTokens], beta_s[kTokens];

  const int tid = int(thread_x()), h = int(block_y());
  const int col = tid / kParts, r0 = (tid % kParts) * kRows;  // column in the workgroup, first row
  const int b = int(block_x()) * kCols + col;                 // this thread's value column
  const int kh = h / (a.value_heads / a.key_heads);
  const float* qh = a.q + int64_t(kh) * DK;
  const float* kk_h = a.k + int64_t(kh) * DK;
  float* state_h = a.state ? a.state + int64_t(h) * DK * DV : nullptr;

  float s[kRows];  // S[r0 .. r0 + kRows, b]
#pragma unroll
  for (int r = 0; r < kRows; ++r) s[r] = state_h ? state_h[(r0 + r) * DV + b] : 0.0f;

  for (int t0 = 0; t0 < a.T; t0 += kTokens) {
    const int n = a.T - t0 < kTokens ? a.T - t0 : kTokens;
    sync_workgroup();  // the previous tokens are done with the staging buffers
    for (int idx = tid; idx < n * DK; idx += kThreads) {
      const int i = idx / DK, r = idx % DK;
      q_s[i][r] = qh[int64_t(t0 + i) * a.ldq + r] * a.scale;
      k_s[i][r] = kk_h[int64_t(t0 + i) * a.ldk + r];
    }
    for (int idx = tid; idx < n * kCols; idx += kThreads) {
      const int i = idx / kCols, cc = idx % kCols;
      v_s[i][cc] = a.v[int64_t(t0 + i) * a.ldv + int64_t(h) * DV + int(block_x()) * kCols + cc];
    }
    if (tid < n) {
      decay_s[tid] = exp_f(a.g[int64_t(t0 + tid) * a.ldg + h]);
      beta_s[tid] = a.beta[int64_t(t0 + tid) * a.ldbeta + h];
    }
    sync_workgroup();
    for (int i = 0; i < n; ++i) {
      // Two fused passes; each element sees the host's sequence (decay, read; write, output).
      const float decay = decay_s[i];
      const float* kt = k_s[i] + r0;
      const float* qt = q_s[i] + r0;
      float mem = 0.0f;
#pragma unroll
      for (int run = 0; run < kRows; run += kRun) {
#pragma unroll
        for (int r = run; r < run + kRun; ++r) {
          s[r] *= decay;
          mem += s[r] * kt[r];
        }
        reload_shared();
      }
      const float delta = (v_s[i][col] - column_sum(mem)) * beta_s[i];
      float acc = 0.0f;
#pragma unroll
      for (int run = 0; run < kRows; run += kRun) {
#pragma unroll
        for (int r = run; r < run + kRun; ++r) {
          s[r] += kt[r] * delta;
          acc += s[r] * qt[r];
        }
        reload_shared();
      }
      acc = column_sum(acc);
      if (r0 == 0) a.out[int64_t(t0 + i) * a.ldo + int64_t(h) * DV + b] = acc;
    }
  }

  if (state_h)
#pragma unroll
    for (int r = 0; r < kRows; ++r) state_h[(r0 + r) * DV + b] = s[r];
}

template <int DK, int DV>
void launch_recurrent(const DeltaRuleArgs& a, hipStream_t stream) {
  constexpr int kCols = recurrent_threads<DV>() / kParts;
  static_assert(DV % kCols == 0 && DK % kParts == 0, "whole workgroups of value columns");
  auto kernel = delta_recurrent_kernel<DK, DV>;
  hipLaunchKernelGGL(kernel, dim3(unsigned(DV / kCols), unsigned(a.value_heads)), dim3(recurrent_threads<DV>()), 0,
                     stream, a);
  MOSS_HIP_CHECK(hipGetLastError());
}

}  // namespace

void delta_rule_recurrent(const DeltaRuleArgs& a, hipStream_t stream) {
  if (!delta_rule_dims_supported(a.dk, a.dv))
    throw usage_error("delta_rule_recurrent: head dims dk=" + std::to_string(a.dk) + " dv=" + std::to_string(a.dv) +
                      " have no GPU kernel (128/128 and 32/32 are built)");
  if (a.T <= 0) return;  // no tokens: the state (if any) stays as it is
  if (a.dk == 128) launch_recurrent<128, 128>(a, stream);
  else launch_recurrent<32, 32>(a, stream);
}

}  // namespace moss
