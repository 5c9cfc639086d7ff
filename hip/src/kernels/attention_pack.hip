// One workgroup per 32 keys x 32 head columns of one kv head: K goes straight through (converted
// to bf16; skipped when kp is null, for a kernel that reads K in place); V too, or, transposed,
// turns around in shared memory so both its reads (along columns) and its writes (along keys) are
// coalesced.
#include "kernels/attention_pack.h"

namespace moss {
namespace {

constexpr int kTile = 32;
static_assert(kTile == kWorkgroupSize, "one column (read) or key (write) per lane");

template <class T>
__global__ __launch_bounds__(kWorkgroupSize) void attention_pack_kernel(const T* __restrict__ k, int64_t ldk,
                                                                        const T* __restrict__ v, int64_t ldv, int tk,
                                                                        int head_dim, int d_pad, int tk_pad,
                                                                        bool v_transposed, bf16* __restrict__ kp,
                                                                        bf16* __restrict__ vt) {
  __shared__ float tile[kTile][kTile + 1];  // +1: the transposed reads hit 32 distinct banks
  const int lane = int(thread_x());
  const int k0 = int(block_x()) * kTile, d0 = int(block_y()) * kTile, kv_head = int(block_z());
  const int d = d0 + lane;
  const int64_t col = int64_t(kv_head) * head_dim + d;
  const int64_t row0 = (int64_t(kv_head) * tk_pad + k0) * d_pad + d;
  for (int r = 0; r < kTile; ++r) {
    const int key = k0 + r;
    const bool inside = key < tk && d < head_dim;
    if (kp) kp[row0 + int64_t(r) * d_pad] = to_bf16(inside ? to_float(k[int64_t(key) * ldk + col]) : 0.0f);
    const float x = inside ? to_float(v[int64_t(key) * ldv + col]) : 0.0f;
    if (v_transposed) tile[r][lane] = x;
    else vt[row0 + int64_t(r) * d_pad] = to_bf16(x);
  }
  if (!v_transposed) return;  // uniform across the workgroup
  sync_workgroup();
  bf16* const vdst = vt + (int64_t(kv_head) * d_pad + d0) * tk_pad + k0 + lane;
  for (int r = 0; r < kTile; ++r) vdst[int64_t(r) * tk_pad] = to_bf16(tile[lane][r]);
}

}  // namespace

void attention_pack_kv(const void* k, int64_t ldk, const void* v, int64_t ldv, bool src_bf16, int tk, int kv_heads,
                       int head_dim, int d_pad, int tk_pad, bool v_transposed, bf16* kp, bf16* vt,
                       hipStream_t stream) {
  if (tk <= 0 || kv_heads <= 0 || head_dim <= 0 || d_pad < head_dim || d_pad % kTile != 0 || tk_pad < tk ||
      tk_pad % kTile != 0 || kv_heads > 65535)
    throw failure("attention_pack_kv: bad shape (tk " + std::to_string(tk) + ", kv heads " + std::to_string(kv_heads) +
                  ", head dim " + std::to_string(head_dim) + ", padded " + std::to_string(tk_pad) + " x " +
                  std::to_string(d_pad) + ")");
  const dim3 grid(unsigned(tk_pad / kTile), unsigned(d_pad / kTile), unsigned(kv_heads));
  if (src_bf16)
    hipLaunchKernelGGL(attention_pack_kernel<bf16>, grid, dim3(kWorkgroupSize), 0, stream, static_cast<const bf16*>(k),
                       ldk, static_cast<const bf16*>(v), ldv, tk, head_dim, d_pad, tk_pad, v_transposed, kp, vt);
  else
    hipLaunchKernelGGL(attention_pack_kernel<float>, grid, dim3(kWorkgroupSize), 0, stream,
                       static_cast<const float*>(k), ldk, static_cast<const float*>(v), ldv, tk, head_dim, d_pad,
                       tk_pad, v_transposed, kp, vt);
  MOSS_HIP_CHECK(hipGetLastError());
}

}  // namespace moss
