// The device, emulated on the host, for tests/emulation/test_int8_kernels_emulated.cpp: this file
// stands in for src/runtime/portability.h (its folder comes first on that test's include path), so
// the INT8 ConvRot kernels' own source (kernels/int8_rotate.hip, kernels/int8_gemm.hip) compiles
// with the host compiler and runs: a launch runs its workgroups one after another, each as
// blockDim host threads; barriers, lane exchanges and the int8 leaf instruction are collective
// operations over those threads. The kernels see the NVIDIA spellings (whose plain-C++ branches
// compile everywhere: tile copies as struct copies) and, by MOSS_LEAF_EMULATED_TARGET, the leaf of
// NVIDIA, gfx11 or gfx12: its lane maps (kernels/matrix_layout.h) and an instruction model below
// written from the vendors' register tables, so each build runs the kernels end to end on one
// platform's fragments. The bf16 leaf (kernels/matrix_leaf.h mma, the attention's P·V and bf16
// scores) is modelled the same way (emulated_mma_bf16), and a kernel's dynamic shared memory
// (`extern __shared__`, sized by the launch) is one buffer per launch (emu::dynamic_shared), which
// kernels/attention.hip reads through its emulated-build guard.
#pragma once

#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels/fp8_e4m3.h"
#include "tensor/tensor.h"
#include "util/error.h"

#define MOSS_PLATFORM_NVIDIA 1
#define MOSS_PLATFORM_AMD 0
#define MOSS_DEVICE_SM90A 0
#define MOSS_LEAF_EMULATED 1  // kernels/matrix_leaf.h's mma_i8 / mma call emulated_mma_i8 / emulated_mma_bf16
#ifndef MOSS_LEAF_EMULATED_TARGET
#define MOSS_LEAF_EMULATED_TARGET 0  // the leaf emulated: 0 NVIDIA, 11 gfx11, 12 gfx12 (matrix_leaf.h's LayoutI8)
#endif
#define MOSS_HOST_DEVICE
#define __global__
#define __device__
#define __host__
#define __shared__ static  // one workgroup runs at a time
#define __launch_bounds__(...)
#define MOSS_LAUNCH_BOUNDS(threads, min_blocks)
#define MOSS_HIP_CHECK(call) (void)(call)

struct dim3 {
  unsigned x, y, z;
  dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
typedef void* hipStream_t;
enum hipError_t { hipSuccess = 0 };
inline hipError_t hipGetLastError() { return hipSuccess; }
// NVIDIA's opt-in above 48 KiB of dynamic shared memory (kernels/attention.hip's launch): the
// emulated workgroup's buffer has whatever size the launch asks.
enum hipFuncAttribute { hipFuncAttributeMaxDynamicSharedMemorySize };
template <class F>
hipError_t hipFuncSetAttribute(F, hipFuncAttribute, int) { return hipSuccess; }

namespace moss {

constexpr int kWaveSize = 32;
constexpr int kWorkgroupSize = 32;
constexpr int kMaxAmdWorkgroupSize = 256;
constexpr bool kPlatformNvidia = true;

struct bf16 {
  uint16_t bits;
};
inline bf16 bf16_from_bits(uint16_t b) { return bf16{b}; }
inline uint32_t f32_bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}
inline float to_float(bf16 x) { return bf16_to_f32(x.bits); }
inline float to_float(float x) { return x; }
inline bf16 to_bf16(float x) { return bf16{f32_to_bf16(x)}; }
inline uint16_t bf16_bits(bf16 x) { return x.bits; }

// x86-64's baseline has no fma instruction, so a * b is never contracted here.
inline float abs_f(float x) { return std::fabs(x); }
inline float max_f(float a, float b) { return std::fmax(a, b); }
inline float min_f(float a, float b) { return std::fmin(a, b); }
inline float mul_rn(float a, float b) { return a * b; }
inline float rint_f(float x) { return std::nearbyint(x); }
inline bool finite_f(float x) { return std::isfinite(x); }
inline float nan_f() { return std::nanf(""); }

namespace emu {

// A reusable barrier for a fixed number of threads.
class Barrier {
 public:
  explicit Barrier(int n) : n_(n) {}
  void wait() {
    std::unique_lock<std::mutex> lock(m_);
    const uint64_t gen = gen_;
    if (++count_ == n_) {
      count_ = 0;
      ++gen_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return gen_ != gen; });
    }
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  int n_, count_ = 0;
  uint64_t gen_ = 0;
};

// A wave's exchange area: each lane's words, and its barrier.
struct Wave {
  Barrier barrier{kWaveSize};
  std::vector<uint32_t> words[kWaveSize];
};

struct Block {
  explicit Block(int threads) : barrier(threads), waves(size_t(threads / kWaveSize)) {}
  Barrier barrier;
  std::vector<Wave> waves;
  dim3 id;
  std::vector<uint64_t> dynamic_shared;  // the launch's dynamic shared memory (8-byte words)
};

struct ThreadState {
  Block* block = nullptr;
  int tid = 0;
};
inline ThreadState& self() {
  static thread_local ThreadState s;
  return s;
}
inline Wave& my_wave() { return self().block->waves[size_t(self().tid / kWaveSize)]; }
// The running workgroup's dynamic shared memory (`extern __shared__`): one buffer for the launch,
// as workgroups run one at a time; filled with 0xA5 bytes once, so a read of LDS that the kernel
// never wrote sees garbage rather than zeros, as on a device.
inline void* dynamic_shared() { return self().block->dynamic_shared.data(); }

// Every lane of the wave gives `mine`; returns all 32 lanes' words (lane-major), after which the
// wave may exchange again.
inline std::vector<std::vector<uint32_t>> exchange(const std::vector<uint32_t>& mine) {
  Wave& w = my_wave();
  const int lane = self().tid % kWaveSize;
  w.words[lane] = mine;
  w.barrier.wait();
  std::vector<std::vector<uint32_t>> all(w.words, w.words + kWaveSize);
  w.barrier.wait();
  return all;
}

// Where a test asks (tests/emulation/test_attention_int8_emulated.cpp), kernels/attention.hip's
// int8 QKᵀ variant records its exact int32 scores and each key tile's scale factor here, so the
// test compares them bit for bit with the host op's arithmetic: sum[(head·tq + query)·tk + key]
// and c[(head·tq + query)·tiles + tile]; each element is written by one lane. Null: nothing kept.
struct Int8Scores {
  int32_t* sum = nullptr;
  float* c = nullptr;
  int tq = 0, tk = 0, tiles = 0;
};
inline Int8Scores& int8_scores() {
  static Int8Scores s;
  return s;
}
inline void record_int8_score(int head, int query, int key, int32_t sum, float c) {
  const Int8Scores& s = int8_scores();
  if (!s.sum || query >= s.tq || key >= s.tk) return;
  s.sum[(int64_t(head) * s.tq + query) * s.tk + key] = sum;
  s.c[(int64_t(head) * s.tq + query) * s.tiles + key / 32] = c;  // one 32-key block a tile
}

// kernel<<<grid, block>>>(args...): block.x host threads run the workgroups in order, all of
// them finishing one (a barrier) before any starts the next, so `__shared__` (static) memory is
// one workgroup's at a time.
template <class Kernel, class... Args>
void launch(Kernel kernel, dim3 grid, dim3 block_dim, size_t shared_bytes, Args... args) {
  const int threads = int(block_dim.x);
  Block block(threads);
  block.dynamic_shared.assign((shared_bytes + 7) / 8, 0xA5A5A5A5A5A5A5A5ull);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      self().block = &block;
      self().tid = t;
      for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
          for (unsigned bx = 0; bx < grid.x; ++bx) {
            if (t == 0) block.id = dim3(bx, by, bz);
            block.barrier.wait();  // the id is set, and the previous workgroup is done
            kernel(args...);
            block.barrier.wait();
          }
    });
  for (std::thread& th : pool) th.join();
}

}  // namespace emu

inline unsigned lane_id() { return unsigned(emu::self().tid % kWaveSize); }
inline unsigned thread_x() { return unsigned(emu::self().tid); }
inline unsigned block_x() { return emu::self().block->id.x; }
inline unsigned block_y() { return emu::self().block->id.y; }
inline unsigned block_z() { return emu::self().block->id.z; }
inline void sync_workgroup() { emu::self().block->barrier.wait(); }
// The attention's issue-priority hint (AMD's s_setprio; nothing on NVIDIA): no effect on results.
template <int kLevel>
inline void wave_priority() {}

inline float shfl(float v, int src_lane) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  const auto all = emu::exchange({bits});
  float out;
  std::memcpy(&out, &all[size_t(src_lane)][0], 4);
  return out;
}
inline float shfl_xor(float v, int lane_mask) { return shfl(v, int(lane_id()) ^ lane_mask); }
inline float wave_max(float v) {
  for (int m = kWaveSize / 2; m > 0; m /= 2) v = max_f(v, shfl_xor(v, m));
  return v;
}
inline float wave_sum(float v) {  // the devices' butterfly order
  for (int m = kWaveSize / 2; m > 0; m /= 2) v += shfl_xor(v, m);
  return v;
}
// The transcendental functions the row kernels (kernels/rows.hip) call, as the host's libm: the
// emulation proves those kernels' schedules and data movement, not the devices' approximations
// (moss-check compares those on a GPU within their tolerances).
inline float sqrt_f(float x) { return std::sqrt(x); }
inline float rsqrt_f(float x) { return 1.0f / std::sqrt(x); }
inline float exp_f(float x) { return std::exp(x); }
inline float fast_exp(float x) { return std::exp(x); }
inline float exp2_f(float x) { return std::exp2(x); }  // kernels/attention_device.h exp2_fast
inline float log_f(float x) { return std::log(x); }
inline float tanh_f(float x) { return std::tanh(x); }
inline float tanh_fast(float x) { return std::tanh(x); }
inline float fast_rcp(float x) { return 1.0f / x; }
inline float sigmoid_f(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// Set when a wave's registers break a precondition of the emulated instruction (gfx11: the two
// half-waves' copies of A or B differ); the test checks it after each case.
inline std::atomic<bool>& leaf_violation() {
  static std::atomic<bool> v{false};
  return v;
}

// The int8 leaf as mma_i8 issues it on MOSS_LEAF_EMULATED_TARGET, each instruction modelled from
// its register tables independently of the kernels' lane maps (g = lane / 4, t = lane % 4,
// r = lane % 16, h = lane / 16):
//   0   mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 twice (output columns 0-7, then 8-15), PTX
//       tables: A register p holds row g + 8 (p % 2), K 4t + 16 (p / 2) + byte; B register q of
//       instruction j holds K 4t + 16 q + byte of column 8j + g; accumulator e of instruction j
//       is row g + 8 (e / 2), column 8j + 2t + e % 2.
//   11  v_wmma_i32_16x16x16_iu8 twice (K 0-15, then 16-31), AMD's calculator for RDNA3: byte i of
//       the instruction's 4 VGPRs is K i of row (A) / column (B) r, lanes r and r + 16 equal;
//       output row m from half-wave m % 2, D[m][n] in lane 16 (m % 2) + n, VGPR m / 2.
//   12  v_wmma_i32_16x16x16_iu8 twice, AMD's calculator for RDNA4: byte i of the instruction's 2
//       VGPRs is K 8h + i of row / column r; D[m][n] in lane 16 (m / 8) + n, VGPR m % 8.
// The fp8 leaf (mma_f8) is the same pair of instructions on the same byte positions with the bytes
// read as OCP e4m3 and fp32 accumulators: v_wmma_f32_16x16x16_fp8_fp8 (AMD's calculator for RDNA4:
// every A and B cell as the iu8 form's, D as the bf16 form's) and mma.sync ... .f32.e4m3.e4m3.f32
// (the m16n8k32 fragments of .s8, CUTLASS's SM89 MMA_Traits); gfx11 has no fp8 form. So one model
// serves both, given how a byte reads (`value`) and the type its products are summed in (`Sum`: exact
// int32 for int8; double for e4m3, each product and the sum of 16 or 32 of them being exact in
// double, so the emulation rounds once, where it adds the sum to the fp32 accumulator).
template <class L, class Sum, class C, class A, class B, class Value>
void emulated_mma_bytes(C& acc, const A& a, const B& b, Value value) {
  constexpr int kWordsA = int(sizeof(a.w) / 4), kWordsB = int(sizeof(b.w) / 4);
  std::vector<uint32_t> mine;
  for (int32_t w : a.w) mine.push_back(uint32_t(w));
  for (int32_t w : b.w) mine.push_back(uint32_t(w));
  const auto all = emu::exchange(mine);
  auto byte_of = [&](int lane, int word, int e) { return Sum(value(uint8_t(all[size_t(lane)][size_t(word)] >> (8 * e)))); };
  const int lane = int(lane_id());
  for (int j = 0; j < 2; ++j) {
#if MOSS_LEAF_EMULATED_TARGET == 0
    (void)kWordsB;
    Sum Am[16][32], Bm[32][8];
    for (int l = 0; l < kWaveSize; ++l) {
      const int g = l / 4, t = l % 4;
      for (int p = 0; p < 4; ++p)
        for (int e = 0; e < 4; ++e) Am[g + 8 * (p % 2)][4 * t + 16 * (p / 2) + e] = byte_of(l, p, e);
      for (int q = 0; q < 2; ++q)
        for (int e = 0; e < 4; ++e) Bm[4 * t + 16 * q + e][g] = byte_of(l, kWordsA + 2 * j + q, e);
    }
    const int g = lane / 4, t = lane % 4;
    for (int e = 0; e < 4; ++e) {
      Sum sum = 0;
      for (int k = 0; k < 32; ++k) sum += Am[g + 8 * (e / 2)][k] * Bm[k][2 * t + e % 2];
      acc.x[4 * j + e] += sum;
    }
#elif MOSS_LEAF_EMULATED_TARGET == 11
    const int w0a = 4 * j, w0b = kWordsA + 4 * j;  // this instruction's 4 VGPRs of A, of B
    for (int r = 0; r < 16; ++r)
      for (int w = 0; w < 4; ++w)
        if (all[size_t(r)][size_t(w0a + w)] != all[size_t(r + 16)][size_t(w0a + w)] ||
            all[size_t(r)][size_t(w0b + w)] != all[size_t(r + 16)][size_t(w0b + w)])
          leaf_violation() = true;
    for (int i = 0; i < 8; ++i) {
      const int h = lane / 16, m = 2 * i + h, n = lane % 16;  // D[m][n] is this lane's VGPR i
      Sum sum = 0;
      for (int k = 0; k < 16; ++k) sum += byte_of(16 * h + m, w0a + k / 4, k % 4) * byte_of(16 * h + n, w0b + k / 4, k % 4);
      acc.x[i] += sum;
    }
#elif MOSS_LEAF_EMULATED_TARGET == 12
    const int w0a = 2 * j, w0b = kWordsA + 2 * j;  // this instruction's 2 VGPRs of A, of B
    Sum Am[16][16], Bm[16][16];
    for (int l = 0; l < kWaveSize; ++l)
      for (int i = 0; i < 8; ++i) {
        const int k = 8 * (l / 16) + i;
        Am[l % 16][k] = byte_of(l, w0a + i / 4, i % 4);
        Bm[k][l % 16] = byte_of(l, w0b + i / 4, i % 4);
      }
    for (int i = 0; i < 8; ++i) {
      const int m = 8 * (lane / 16) + i, n = lane % 16;
      Sum sum = 0;
      for (int k = 0; k < 16; ++k) sum += Am[m][k] * Bm[k][n];
      acc.x[i] += sum;
    }
#else
#error "MOSS_LEAF_EMULATED_TARGET: 0 (NVIDIA), 11 (gfx11) or 12 (gfx12)"
#endif
  }
  static_assert(kWordsA > 0 && kWordsB > 0, "fragments hold words");
  (void)sizeof(L);
}

template <class L, class C, class A, class B>
void emulated_mma_i8(C& acc, const A& a, const B& b) {
  emulated_mma_bytes<L, int32_t>(acc, a, b, [](uint8_t byte) { return int32_t(int8_t(byte)); });
}

template <class L, class C, class A, class B>
void emulated_mma_f8(C& acc, const A& a, const B& b) {
  static_assert(MOSS_LEAF_EMULATED_TARGET != 11 && sizeof(L) > 0, "gfx11 has no fp8 matrix instruction");
  emulated_mma_bytes<L, double>(acc, a, b, [](uint8_t byte) { return double(e4m3::to_f32(byte)); });
}

// The bf16 leaf as mma issues it on MOSS_LEAF_EMULATED_TARGET (fp32 accumulation), modelled from
// each instruction's register tables independently of kernels/matrix_layout.h's maps (g = lane / 4,
// t = lane % 4, r = lane % 16, h = lane / 16). Slot s of a fragment is the instruction's s-th
// 16-bit operand element (NVIDIA: register s / 2, low half when s is even; AMD: element s of the
// builtin's vector).
//   0   mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 twice (output columns 0-7, then
//       8-15), PTX tables: A slot s holds row g + 8 ((s / 2) % 2), K 2t + s % 2 + 8 (s / 4); B slot
//       e of instruction j (slot 4j + e) holds K 2t + e % 2 + 8 (e / 2) of column 8j + g;
//       accumulator e of instruction j is row g + 8 (e / 2), column 8j + 2t + e % 2.
//   11  v_wmma_f32_16x16x16_bf16 (wave32), AMD's calculator for RDNA3: A slot s of lane l is
//       A[r][s], B slot s is B[s][r], lanes r and r + 16 equal; D VGPR i of lane l is
//       D[2i + h][r].
//   12  v_wmma_f32_16x16x16_bf16 (wave32), AMD's calculator for RDNA4: A slot s of lane l is
//       A[r][8 (s / 4) + 4h + s % 4], B slot s is B[that K][r]; D VGPR i is D[8h + i][r].
// Each output is acc + the sum over K in K order, in fp32 (the devices' internal order and
// rounding of the 16 products are unspecified; the tests' tolerances cover that).
template <bool kF16, class C, class A, class B>
void emulated_mma_bf16(C& acc, const A& a, const B& b) {
  static_assert(!kF16, "the emulated leaf models the bf16 instruction only");
  constexpr int kSlotsA = int(sizeof(a.x) / sizeof(a.x[0])), kSlotsB = int(sizeof(b.x) / sizeof(b.x[0]));
  std::vector<uint32_t> mine;
  for (const auto& x : a.x) mine.push_back(bf16_bits(x));
  for (const auto& x : b.x) mine.push_back(bf16_bits(x));
  const auto all = emu::exchange(mine);
  auto value = [&](int lane, int slot) { return bf16_to_f32(uint16_t(all[size_t(lane)][size_t(slot)])); };
  float Am[16][16], Bm[16][16];  // A[m][k], B[k][n]
  for (int l = 0; l < kWaveSize; ++l) {
#if MOSS_LEAF_EMULATED_TARGET == 0
    const int g = l / 4, t = l % 4;
    for (int s = 0; s < 8; ++s) Am[g + 8 * ((s / 2) % 2)][2 * t + s % 2 + 8 * (s / 4)] = value(l, s);
    for (int j = 0; j < 2; ++j)
      for (int e = 0; e < 4; ++e) Bm[2 * t + e % 2 + 8 * (e / 2)][8 * j + g] = value(l, kSlotsA + 4 * j + e);
#elif MOSS_LEAF_EMULATED_TARGET == 11
    const int r = l % 16;
    for (int s = 0; s < 16; ++s) {
      if (all[size_t(l)][size_t(s)] != all[size_t(l ^ 16)][size_t(s)] ||
          all[size_t(l)][size_t(kSlotsA + s)] != all[size_t(l ^ 16)][size_t(kSlotsA + s)])
        leaf_violation() = true;
      Am[r][s] = value(l, s);
      Bm[s][r] = value(l, kSlotsA + s);
    }
#elif MOSS_LEAF_EMULATED_TARGET == 12
    const int r = l % 16, h = l / 16;
    for (int s = 0; s < 8; ++s) {
      const int k = 8 * (s / 4) + 4 * h + s % 4;
      Am[r][k] = value(l, s);
      Bm[k][r] = value(l, kSlotsA + s);
    }
#else
#error "MOSS_LEAF_EMULATED_TARGET: 0 (NVIDIA), 11 (gfx11) or 12 (gfx12)"
#endif
  }
  auto product = [&](int m, int n, float c) {
    for (int k = 0; k < 16; ++k) c += Am[m][k] * Bm[k][n];
    return c;
  };
  const int lane = int(lane_id());
#if MOSS_LEAF_EMULATED_TARGET == 0
  const int g = lane / 4, t = lane % 4;
  for (int j = 0; j < 2; ++j)
    for (int e = 0; e < 4; ++e) {
      float& d = acc.x[4 * j + e];
      d = product(g + 8 * (e / 2), 8 * j + 2 * t + e % 2, d);
    }
#elif MOSS_LEAF_EMULATED_TARGET == 11
  for (int i = 0; i < 8; ++i) acc.x[i] = product(2 * i + lane / 16, lane % 16, acc.x[i]);
#else
  for (int i = 0; i < 8; ++i) acc.x[i] = product(8 * (lane / 16) + i, lane % 16, acc.x[i]);
#endif
  static_assert(kSlotsA > 0 && kSlotsB > 0, "fragments hold slots");
}

}  // namespace moss

#define hipLaunchKernelGGL(kernel, grid, block, shmem, stream, ...) \
  ::moss::emu::launch(kernel, grid, block, size_t(shmem), __VA_ARGS__)
