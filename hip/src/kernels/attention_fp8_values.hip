// P.V in fp8's values: Vᵀ rows to OCP e4m3 codes and per-row scales (kernels/attention_fp8_values.h).
#include "kernels/attention_fp8_values.h"
#include "kernels/fp8_e4m3_device.h"

namespace moss {
namespace {

constexpr float kScaleFloor = 1e-30f;  // convrot::kScaleFloor

// One wave per row: pass 1 the largest |v| over the keys (a max: any order gives the host's
// value) and whether every value is finite; pass 2 each lane a word of four codes at a time,
// e4m3(v / s) for the keys, 0 past them (and everywhere in a non-finite row).
template <class T>
__global__ __launch_bounds__(kWorkgroupSize) void fp8_values_kernel(const T* vt, int64_t ld, int64_t keys,
                                                                     int64_t keys_pad, uint32_t* codes, float* scale) {
  const int lane = int(thread_x());
  const int64_t r = int64_t(block_x());
  const T* v = vt + r * ld;
  float amax = 0.0f, bad = 0.0f;
  for (int64_t j = lane; j < keys; j += kWaveSize) {
    const float x = to_float(v[j]);
    bad = finite_f(x) ? bad : 1.0f;
    amax = max_f(amax, abs_f(x));
  }
  bad = wave_max(bad);
  amax = wave_max(amax);
  const float s = bad != 0.0f ? nan_f() : max_f(div_rn(amax, e4m3::kMax), kScaleFloor);
  if (lane == 0) scale[r] = s;
  uint32_t* row = codes + r * (keys_pad / 4);
  for (int64_t w = lane; w < keys_pad / 4; w += kWaveSize) {
    uint32_t word = 0;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int64_t j = 4 * w + e;
      const uint32_t code = bad == 0.0f && j < keys ? e4m3_from_f32(div_rn(to_float(v[j]), s)) : 0u;
      word |= code << (8 * e);
    }
    row[w] = word;
  }
}

}  // namespace

void fp8_values_quantize(const Fp8ValuesArgs& a, hipStream_t stream) {
  if (a.rows == 0) return;
  uint32_t* codes = reinterpret_cast<uint32_t*>(a.codes);
  if (a.bf16)
    hipLaunchKernelGGL((fp8_values_kernel<bf16>), dim3(unsigned(a.rows)), dim3(kWorkgroupSize), 0, stream,
                       static_cast<const bf16*>(a.vt), a.ld, a.keys, a.keys_pad, codes, a.scale);
  else
    hipLaunchKernelGGL((fp8_values_kernel<float>), dim3(unsigned(a.rows)), dim3(kWorkgroupSize), 0, stream,
                       static_cast<const float*>(a.vt), a.ld, a.keys, a.keys_pad, codes, a.scale);
  MOSS_HIP_CHECK(hipGetLastError());
}

}  // namespace moss
