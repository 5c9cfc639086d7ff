// The INT8 ConvRot activation pass (kernels/int8_linear.h): rotation and per-row quantization.
// Three kernels: the register pass (kernels/int8_row_regs.h: groups up to 256, rows up to 8192
// wide and a multiple of 16: every DiT input), a workgroup per row rotating the row in LDS stage
// by stage (the other rows up to 8192 wide), and one wave per row reading it twice (any width).
#include "kernels/int8_linear.h"
#include "kernels/int8_rotate_order.h"
#include "kernels/int8_row_lds.h"
#include "kernels/int8_row_regs.h"
#include "kernels/norm_rope_lane.h"
#include "kernels/tile_copy.h"

namespace moss {
namespace {

constexpr float kInv127 = 1.0f / 127.0f;  // convrot::quantize_row's fl(1/127)
constexpr float kScaleFloor = 1e-30f;     // convrot::kScaleFloor

template <class T>
__device__ inline float load_f(const T* p) {
  return to_float(*p);
}

// One group of G values of row xr at column g0, rotated into v (LDS) by the radix-4 stages of
// convrot::rotate_groups: strides 1, 4, 16, ...; lane l takes quadruples l, l + 32, ... of each
// stage (kernels/int8_rotate_order.h, replayed on the host by test_int8_kernel_order.cpp).
template <class T>
__device__ void rotate_group(const T* xr, int64_t g0, int G, float* v, int lane) {
  for (int i = lane; i < G; i += kWorkgroupSize) v[i] = load_f(xr + g0 + i);
  sync_workgroup();
  const auto mul = [](float a, float b) { return mul_rn(a, b); };
  for (int s = 1; s < G; s *= 4) {
    for (int t = lane; t < G / 4; t += kWorkgroupSize) convrot_order::butterfly(v, convrot_order::quad_base(t, s), s, mul);
    sync_workgroup();
  }
}

// One wave per row. Pass 1 rotates each group and takes the row's absmax (a max: any order gives
// the host's value) and whether every rotated value is finite; pass 2 rotates each group again
// (the same operations, the same bits) and quantizes it. The row is read twice and never held
// whole, so any width works with G floats of LDS.
template <class T>
__global__ __launch_bounds__(kWorkgroupSize) void rotate_quantize_kernel(const T* x, int64_t ldx, int64_t k, int G,
                                                                          int8_t* q, float* scale) {
  __shared__ float v[kInt8MaxGroup];
  const int lane = int(thread_x());
  const int64_t r = int64_t(block_x());
  const T* xr = x + r * ldx;
  float amax = 0.0f, bad = 0.0f;
  for (int64_t g0 = 0; g0 < k; g0 += G) {
    rotate_group(xr, g0, G, v, lane);
    for (int i = lane; i < G; i += kWorkgroupSize) {
      bad = finite_f(v[i]) ? bad : 1.0f;
      amax = max_f(amax, abs_f(v[i]));
    }
    sync_workgroup();
  }
  const bool finite = wave_max(bad) == 0.0f;
  amax = wave_max(amax);
  const float s = max_f(mul_rn(amax, kInv127), kScaleFloor);
  int8_t* qr = q + r * k;
  if (!finite) {
    for (int64_t i = lane; i < k; i += kWorkgroupSize) qr[i] = 0;
    if (lane == 0) scale[r] = nan_f();
    return;
  }
  for (int64_t g0 = 0; g0 < k; g0 += G) {
    rotate_group(xr, g0, G, v, lane);
    for (int i = lane; i < G; i += kWorkgroupSize) qr[g0 + i] = int8_row::quantize_value(v[i], s);
    sync_workgroup();
  }
  if (lane == 0) scale[r] = s;
}

// The fast pass, for rows of up to kRowFloats values: a workgroup of kRowWaves waves per row,
// the row read ONCE into LDS as fp32, every group of it rotated together (each radix-4 stage of
// the whole row is one barrier, not one per group, and the rotated row stays in LDS: no second
// read, no second rotation), the absmax reduced over the waves, then quantized from LDS. The same
// butterflies on the same values as rotate_group (whichever thread takes a quadruple, its four
// outputs are the same operations), so the same bits.
constexpr int kRowWaves = 4;
constexpr int kRowThreads = kRowWaves * kWaveSize;
template <class T, int kRowFloats>
__global__ __launch_bounds__(kRowThreads) void rotate_quantize_row_kernel(const T* x, int64_t ldx, int k, int G,
                                                                          int8_t* q, float* scale) {
  __shared__ float v[kRowFloats];
  __shared__ float partial[2 * kRowWaves];  // each wave's absmax, then its non-finite flag
  const int tid = int(thread_x());
  const int64_t r = int64_t(block_x());
  const T* xr = x + r * ldx;
  for (int i = tid; i < k; i += kRowThreads) v[i] = load_f(xr + i);
  sync_workgroup();
  int8_row::rotate_quantize<kRowThreads>(v, k, G, tid, partial, q + r * k, scale + r);
}

// The register pass: 16 consecutive values of row xr a lane, with 16-byte loads where the row
// allows them (vec: the row 16-byte aligned), else one value at a time.
template <class T>
struct RowLoad {
  const T* xr;
  bool vec;
  __device__ void operator()(int col, float (&v)[int8_regs::kLaneValues]) const {
    constexpr int kPerChunk = 16 / int(sizeof(T));  // values in a 16-byte load: 4 f32, 8 bf16
    if (vec) {
#pragma unroll
      for (int c = 0; c < int8_regs::kLaneValues / kPerChunk; ++c) {
        const tile::Chunk16 chunk = tile::load_chunk_or_zero(xr + col + c * kPerChunk, true);
#pragma unroll
        for (int e = 0; e < kPerChunk; ++e) {
          if constexpr (sizeof(T) == 4) {
            v[c * kPerChunk + e] = __builtin_bit_cast(float, chunk.w[e]);
          } else {  // bf16 element e: the low or high half of word e / 2, widened exactly
            v[c * kPerChunk + e] = norm_rope_lane::bf16_bits_to_float((chunk.w[e / 2] >> (16 * (e % 2))) & 0xffffu);
          }
        }
      }
    } else {
#pragma unroll
      for (int e = 0; e < int8_regs::kLaneValues; ++e) v[e] = load_f(xr + col + e);
    }
  }
};

// kWaves per row, each holding kSegs segments of 512: 4 waves for rows up to 4096, 8 for those up
// to 8192, 2 segments each (32 values a lane in registers; no LDS row).
template <class T, int kWaves, int kSegs>
__global__ __launch_bounds__(kWaves * kWaveSize) void rotate_quantize_regs_kernel(const T* x, int64_t ldx, int k,
                                                                                  int G, bool vec, int8_t* q,
                                                                                  float* scale) {
  __shared__ float partial[2 * kWaves];
  const int64_t r = int64_t(block_x());
  int8_regs::rotate_quantize_row<kWaves * kWaveSize, kSegs>(RowLoad<T>{x + r * ldx, vec}, k, G, partial, q + r * k,
                                                            scale + r);
}

// The widest rows the fast pass holds (fp32 in LDS: 16 KiB, 32 KiB); the DiT's inputs are 3072
// and 8192 wide. Wider rows take the wave-per-row kernel above.
constexpr int64_t kRowFloatsSmall = 4096, kRowFloatsLarge = 8192;

template <class T>
void launch_rotate_quantize(const RowsMatrix& x, int64_t group, int8_t* q, float* scale, hipStream_t stream) {
  const dim3 grid(unsigned(x.rows));
  const T* data = static_cast<const T*>(x.data);
  if (int8_regs::fits(x.cols, group) && x.cols <= kRowFloatsLarge && reinterpret_cast<uintptr_t>(q) % 4 == 0) {
    const bool vec = reinterpret_cast<uintptr_t>(data) % 16 == 0 && (x.ld * int64_t(sizeof(T))) % 16 == 0;
    static_assert(4 * 2 * int8_regs::kSegment == kRowFloatsSmall && 8 * 2 * int8_regs::kSegment == kRowFloatsLarge,
                  "the register pass's shapes hold the LDS kernels' rows");
    if (x.cols <= kRowFloatsSmall)
      hipLaunchKernelGGL((rotate_quantize_regs_kernel<T, 4, 2>), grid, dim3(4 * kWaveSize), 0, stream, data, x.ld,
                         int(x.cols), int(group), vec, q, scale);
    else
      hipLaunchKernelGGL((rotate_quantize_regs_kernel<T, 8, 2>), grid, dim3(8 * kWaveSize), 0, stream, data, x.ld,
                         int(x.cols), int(group), vec, q, scale);
  } else if (x.cols <= kRowFloatsSmall)
    hipLaunchKernelGGL((rotate_quantize_row_kernel<T, kRowFloatsSmall>), grid, dim3(kRowThreads), 0, stream, data,
                       x.ld, int(x.cols), int(group), q, scale);
  else if (x.cols <= kRowFloatsLarge)
    hipLaunchKernelGGL((rotate_quantize_row_kernel<T, kRowFloatsLarge>), grid, dim3(kRowThreads), 0, stream, data,
                       x.ld, int(x.cols), int(group), q, scale);
  else
    hipLaunchKernelGGL(rotate_quantize_kernel<T>, grid, dim3(kWorkgroupSize), 0, stream, data, x.ld, x.cols,
                       int(group), q, scale);
}

}  // namespace

void int8_rotate_quantize(const RowsMatrix& x, int64_t group, int8_t* q, float* scale, hipStream_t stream) {
  if (x.rows == 0) return;
  if (x.bf16) launch_rotate_quantize<bf16>(x, group, q, scale, stream);
  else launch_rotate_quantize<float>(x, group, q, scale, stream);
  MOSS_HIP_CHECK(hipGetLastError());
}

}  // namespace moss
