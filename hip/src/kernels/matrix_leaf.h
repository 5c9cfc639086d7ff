// The matrix leaf: one wave computes a 16x16x16 bf16 product with fp32 accumulation,
// D = A·B + C, in one of three implementations chosen at compile time:
//   gfx11 (RDNA3)  __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32        -> v_wmma_f32_16x16x16_bf16
//   gfx12 (RDNA4)  __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32_gfx12  -> v_wmma_f32_16x16x16_bf16
//   NVIDIA         two mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 (inline PTX, sm_80+)
// mma<true> is the same product on fp16 operands (the fragments' 16-bit slots then carry fp16
// bits): v_wmma_f32_16x16x16_f16 (builtins ..._f16_w32 / ..._f16_w32_gfx12) and the .f16 mma.sync.
// The f16 and bf16 forms of each instruction share every lane map (docs/matrix_layouts.md 5).
// Which lane holds which element of A, B and C is written down, per implementation, in
// kernels/matrix_layout.h; the loaders below go through exactly those maps, and the host
// emulation (tests/unit/test_matrix_layouts.cpp) proves them against models of the instructions.
//
// Use: all 32 lanes of the wave call every function here together (the instructions are
// wave-wide; call them in wave-uniform control flow with every lane active).
//   FragC acc; leaf::zero(acc);
//   leaf::load_a(fa, [&](int m, int k) { return A[...]; });   // A[m][k] as bf16
//   leaf::load_b(fb, [&](int k, int n) { return Bt[...]; });  // B[k][n] as bf16
//   leaf::mma(acc, fa, fb);
//   leaf::store_c(acc, [&](int m, int n, float v) { C[...] = v; });
#pragma once

#include <cstdint>

#include "runtime/portability.h"  // first: it makes the layout functions __host__ __device__
#include "kernels/matrix_layout.h"

namespace moss {
namespace leaf {

#if defined(MOSS_LEAF_EMULATED) && MOSS_LEAF_EMULATED_TARGET == 11  // tests/emulation: gfx11's leaf
using Layout = mma_layout::Gfx11;
#elif defined(MOSS_LEAF_EMULATED) && MOSS_LEAF_EMULATED_TARGET == 12  // tests/emulation: gfx12's leaf
using Layout = mma_layout::Gfx12;
#elif MOSS_PLATFORM_NVIDIA
using Layout = mma_layout::Nvidia;
#elif defined(__GFX11__)
using Layout = mma_layout::Gfx11;
#elif defined(__GFX12__)
using Layout = mma_layout::Gfx12;
#elif defined(__HIP_DEVICE_COMPILE__)
#error "matrix leaf: no bf16 WMMA implementation for this AMD target (gfx11 and gfx12 only)"
#else
// AMD host pass: device function bodies are parsed but never emitted; any layout will do.
using Layout = mma_layout::Gfx12;
#endif

// One lane's share of the operands (slot i of each lane per Layout).
struct FragA {
  bf16 x[Layout::kSlotsA];
};
struct FragB {
  bf16 x[Layout::kSlotsB];
};
struct FragC {
  float x[Layout::kSlotsC];
};

__device__ inline void zero(FragC& c) {
#pragma unroll
  for (int i = 0; i < Layout::kSlotsC; ++i) c.x[i] = 0.0f;
}

// The two operands, for code that walks a fragment's slots: visit(slot, element) for slots 0,
// kStep, 2 kStep, ... of this lane's share of kOp, element {row, col} being {m, k} of A or {k, n}
// of B (kStep 2: the first slot of each register pair).
enum class Operand { A, B };
template <Operand kOp, int kStep = 1, class Visit>
__device__ inline void for_each_slot(Visit visit) {
  const int lane = int(lane_id());
  constexpr int slots = kOp == Operand::A ? Layout::kSlotsA : Layout::kSlotsB;
#pragma unroll
  for (int i = 0; i < slots; i += kStep) visit(i, kOp == Operand::A ? Layout::a(lane, i) : Layout::b(lane, i));
}

// get(m, k) returns A[m][k] (bf16) of this 16x16 block; zero-pad outside the matrix in `get`.
template <class Get>
__device__ inline void load_a(FragA& f, Get get) {
  for_each_slot<Operand::A>([&](int i, mma_layout::Elem e) { f.x[i] = get(e.row, e.col); });
}

// get(k, n) returns B[k][n] (bf16); for a transposed weight Bt[n][k] that is Bt[n * ld + k].
template <class Get>
__device__ inline void load_b(FragB& f, Get get) {
  for_each_slot<Operand::B>([&](int i, mma_layout::Elem e) { f.x[i] = get(e.row, e.col); });
}

// put(m, n, value) receives every C[m][n] of the block exactly once over the wave.
template <class Put>
__device__ inline void store_c(const FragC& c, Put put) {
  const int lane = int(lane_id());
#pragma unroll
  for (int i = 0; i < Layout::kSlotsC; ++i) {
    const mma_layout::Elem e = Layout::c(lane, i);
    put(e.row, e.col, c.x[i]);
  }
}

// put(m, n, c0's value, c1's value) for every C[m][n] of the block exactly once over the wave: two
// accumulators of one layout walked together (the GEMM's gated-unit epilogue pairs a hidden and a
// gate accumulator, kernels/gemm_unit_rows.h).
template <class Put>
__device__ inline void store_c_pair(const FragC& c0, const FragC& c1, Put put) {
  const int lane = int(lane_id());
#pragma unroll
  for (int i = 0; i < Layout::kSlotsC; ++i) {
    const mma_layout::Elem e = Layout::c(lane, i);
    put(e.row, e.col, c0.x[i], c1.x[i]);
  }
}

#if MOSS_PLATFORM_NVIDIA && !defined(MOSS_LEAF_EMULATED)  // (the emulation models the instruction)
// Two bf16 slots in one 32-bit register, the lower slot in bits 15:0 (PTX fragment packing).
__device__ inline uint32_t pack_pair(bf16 lo, bf16 hi) {
  return uint32_t(bf16_bits(lo)) | (uint32_t(bf16_bits(hi)) << 16);
}

// acc += A·B as two m16n8k16 products. A: 4 registers shared by both instructions; instruction j
// reads B slots / C slots 4j..4j+3. kF16: the fragments' 16-bit slots carry fp16 bits and the
// fp16 instruction runs (PTX ISA: .f16 and .bf16 share the fragment layout).
#define MOSS_LEAF_MMA_M16N8K16(type)                                                                    \
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." type "." type ".f32 "                          \
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"                    \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                         \
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1))
template <bool kF16>
__device__ inline void mma_m16n8k16_pairs(FragC& acc, const FragA& a, const FragB& b) {
  const uint32_t a0 = pack_pair(a.x[0], a.x[1]), a1 = pack_pair(a.x[2], a.x[3]);
  const uint32_t a2 = pack_pair(a.x[4], a.x[5]), a3 = pack_pair(a.x[6], a.x[7]);
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const uint32_t b0 = pack_pair(b.x[4 * j], b.x[4 * j + 1]), b1 = pack_pair(b.x[4 * j + 2], b.x[4 * j + 3]);
    float* d = acc.x + 4 * j;
    if constexpr (kF16) MOSS_LEAF_MMA_M16N8K16("f16");
    else MOSS_LEAF_MMA_M16N8K16("bf16");
  }
}
#undef MOSS_LEAF_MMA_M16N8K16
#endif

// acc = A·B + acc for one 16x16x16 block; kF16: the slots hold fp16 bits, not bf16.
template <bool kF16 = false>
__device__ inline void mma(FragC& acc, const FragA& a, const FragB& b) {
#if defined(MOSS_LEAF_EMULATED)
  emulated_mma_bf16<kF16>(acc, a, b);  // the host emulation of the device (tests/emulation/runtime/portability.h)
#elif MOSS_PLATFORM_NVIDIA
  mma_m16n8k16_pairs<kF16>(acc, a, b);
#elif defined(__GFX11__) || defined(__GFX12__)
  // Operands: 16 values per lane on gfx11 (8 VGPRs, A and B duplicated in both half-waves), 8 on
  // gfx12 (4 VGPRs, no duplication); 8 fp32 per lane. clang-19's builtins take the bf16 bits as
  // short vectors and fp16 as _Float16 vectors.
  typedef short vab __attribute__((ext_vector_type(Layout::kSlotsA)));
  typedef _Float16 vah __attribute__((ext_vector_type(Layout::kSlotsA)));
  typedef float v8f __attribute__((ext_vector_type(8)));
  const v8f c = __builtin_bit_cast(v8f, acc);
  if constexpr (kF16) {
    const vah av = __builtin_bit_cast(vah, a), bv = __builtin_bit_cast(vah, b);
#if defined(__GFX11__)
    acc = __builtin_bit_cast(FragC, __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(av, bv, c));
#else
    acc = __builtin_bit_cast(FragC, __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(av, bv, c));
#endif
  } else {
    const vab av = __builtin_bit_cast(vab, a), bv = __builtin_bit_cast(vab, b);
#if defined(__GFX11__)
    acc = __builtin_bit_cast(FragC, __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(av, bv, c));
#else
    acc = __builtin_bit_cast(FragC, __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32_gfx12(av, bv, c));
#endif
  }
#endif
}

// ---- the int8 leaf: C (int32) += A·B for A 16x32 and B 32x16 int8, exact ----------------------------
// The INT8 ConvRot GEMM's product (kernels/int8_linear.h). Lane maps: mma_layout::Gfx11I8,
// Gfx12I8 and NvidiaI8 (kernels/matrix_layout.h, docs/matrix_layouts.md section 8), each two
// instructions:
//   gfx11  2 x __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32        -> v_wmma_i32_16x16x16_iu8
//   gfx12  2 x __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32_gfx12  -> v_wmma_i32_16x16x16_iu8
//   NVIDIA 2 x mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 (inline PTX, sm_80+)
// Both operands signed; no saturation (the caller keeps the sum in range: CoreOps::linear_int8's
// width limit). A fragment holds words of four consecutive K (the maps guarantee it), so the
// loaders ask for 4 bytes at a time.
#if defined(MOSS_LEAF_EMULATED) && MOSS_LEAF_EMULATED_TARGET == 11  // tests/emulation: gfx11's leaf
using LayoutI8 = mma_layout::Gfx11I8;
#elif defined(MOSS_LEAF_EMULATED) && MOSS_LEAF_EMULATED_TARGET == 12  // tests/emulation: gfx12's leaf
using LayoutI8 = mma_layout::Gfx12I8;
#elif MOSS_PLATFORM_NVIDIA
using LayoutI8 = mma_layout::NvidiaI8;
#elif defined(__GFX11__)
using LayoutI8 = mma_layout::Gfx11I8;
#else
using LayoutI8 = mma_layout::Gfx12I8;  // gfx12, or the AMD host pass (never emitted)
#endif
constexpr int kLeafK8 = 32;  // the int8 leaf's K

struct FragA8 {
  int32_t w[LayoutI8::kSlotsA / 4];
};
struct FragB8 {
  int32_t w[LayoutI8::kSlotsB / 4];
};
struct FragC32 {
  int32_t x[LayoutI8::kSlotsC];
};

__device__ inline void zero(FragC32& c) {
#pragma unroll
  for (int i = 0; i < LayoutI8::kSlotsC; ++i) c.x[i] = 0;
}

// get4(m, k0) returns A[m][k0 .. k0+3] as one little-endian word (A[m][k0] in bits 7:0); k0 is a
// multiple of 4. Zero-pad outside the matrix in `get4`.
template <class Get4>
__device__ inline void load_a8(FragA8& f, Get4 get4) {
  const int lane = int(lane_id());
#pragma unroll
  for (int w = 0; w < LayoutI8::kSlotsA / 4; ++w) {
    const mma_layout::Elem e = LayoutI8::a(lane, 4 * w);
    f.w[w] = get4(e.row, e.col);
  }
}

// get4(n, k0) returns B[k0 .. k0+3][n], i.e. Bt[n][k0 .. k0+3] of a transposed [n][k] weight.
template <class Get4>
__device__ inline void load_b8(FragB8& f, Get4 get4) {
  const int lane = int(lane_id());
#pragma unroll
  for (int w = 0; w < LayoutI8::kSlotsB / 4; ++w) {
    const mma_layout::Elem e = LayoutI8::b(lane, 4 * w);
    f.w[w] = get4(e.col, e.row);
  }
}

// put(m, n, value) receives every C[m][n] of the block exactly once over the wave.
template <class Put>
__device__ inline void store_c32(const FragC32& c, Put put) {
  const int lane = int(lane_id());
#pragma unroll
  for (int i = 0; i < LayoutI8::kSlotsC; ++i) {
    const mma_layout::Elem e = LayoutI8::c(lane, i);
    put(e.row, e.col, c.x[i]);
  }
}

// put(m, n, v0, v1) with C0[m][n] and C1[m][n]: two int32 accumulators walked together (the int8
// GEMM's gated-unit epilogue pairs a hidden and a gate accumulator, kernels/gemm_unit_rows.h).
template <class Put>
__device__ inline void store_c32_pair(const FragC32& c0, const FragC32& c1, Put put) {
  const int lane = int(lane_id());
#pragma unroll
  for (int i = 0; i < LayoutI8::kSlotsC; ++i) {
    const mma_layout::Elem e = LayoutI8::c(lane, i);
    put(e.row, e.col, c0.x[i], c1.x[i]);
  }
}

// acc = A·B + acc (int32, exact while the sum stays in range).
__device__ inline void mma_i8(FragC32& acc, const FragA8& a, const FragB8& b) {
#if defined(MOSS_LEAF_EMULATED)
  emulated_mma_i8<LayoutI8>(acc, a, b);  // the host emulation of the device (tests/emulation/runtime/portability.h)
#elif MOSS_PLATFORM_NVIDIA
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    int32_t* d = acc.x + 4 * j;
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a.w[0]), "r"(a.w[1]), "r"(a.w[2]), "r"(a.w[3]), "r"(b.w[2 * j]), "r"(b.w[2 * j + 1]));
  }
#elif defined(__GFX11__) || defined(__GFX12__)
  // clang-19: (bool A signed, A, bool B signed, B, C, bool clamp), the flags immediates; A and B
  // int vectors of 4 (gfx11: 16 bytes, duplicated over the half-waves) or 2 (gfx12) words.
  constexpr int kWords = LayoutI8::kSlotsA / 8;  // words per instruction
  typedef int vw __attribute__((ext_vector_type(kWords)));
  typedef int v8i __attribute__((ext_vector_type(8)));
  v8i c = __builtin_bit_cast(v8i, acc);
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    vw av, bv;
#pragma unroll
    for (int w = 0; w < kWords; ++w) {
      av[w] = a.w[kWords * j + w];
      bv[w] = b.w[kWords * j + w];
    }
#if defined(__GFX11__)
    c = __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32(true, av, true, bv, c, false);
#else
    c = __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32_gfx12(true, av, true, bv, c, false);
#endif
  }
  acc = __builtin_bit_cast(FragC32, c);
#endif
}

// ---- the fp8 leaf: C (fp32) += A·B for A 16x32 and B 32x16 in OCP FP8 E4M3 ----------------------------
// The product of the attention's P.V in fp8 (SageAttention2's idea; docs/attention_int8_qk.md), on
// the targets with an fp8 instruction. Lane maps: mma_layout::Gfx12F8 and NvidiaF8 (the int8 leaf's
// byte positions, proven for the fp8 instructions by tests/unit/test_matrix_layouts_fp8.cpp,
// docs/matrix_layouts.md section 10), each two instructions:
//   gfx12  2 x __builtin_amdgcn_wmma_f32_16x16x16_fp8_fp8_w32_gfx12 -> v_wmma_f32_16x16x16_fp8_fp8
//          (K 0-15, then K 16-31, C chained; twice the bf16 form's rate: 8 cycles against 16)
//   NVIDIA 2 x mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 (inline PTX, sm_89+; columns 0-7,
//          then 8-15, A shared)
// gfx11 (RDNA3) has no fp8 matrix instruction: using any of these functions there fails to compile.
// Operand bytes are e4m3 codes (kernels/fp8_e4m3_device.h makes them); a fragment holds words of four
// consecutive K, the lowest in bits 7:0, so the loaders ask for 4 codes at a time.
#if (defined(MOSS_LEAF_EMULATED) && MOSS_LEAF_EMULATED_TARGET == 11) || \
    (!defined(MOSS_LEAF_EMULATED) && defined(__GFX11__))
constexpr bool kLeafHasFp8 = false;
using LayoutF8 = mma_layout::Gfx12F8;  // only so that the declarations parse; every use is refused
#elif (defined(MOSS_LEAF_EMULATED) && MOSS_LEAF_EMULATED_TARGET == 0) || \
    (!defined(MOSS_LEAF_EMULATED) && MOSS_PLATFORM_NVIDIA)
constexpr bool kLeafHasFp8 = true;
using LayoutF8 = mma_layout::NvidiaF8;
#else
constexpr bool kLeafHasFp8 = true;
using LayoutF8 = mma_layout::Gfx12F8;  // gfx12, or the AMD host pass (never emitted)
#endif
// False on gfx11, for any T: the static_asserts below depend on a template parameter, so the
// refusal fires where a kernel instantiates an fp8 function, not merely where this header is read.
template <class T>
constexpr bool fp8_leaf_available = kLeafHasFp8 && sizeof(T) > 0;
#define MOSS_FP8_LEAF_REFUSAL \
  "matrix leaf: no fp8 matrix instruction on gfx11 (RDNA3); fp8 P.V runs on gfx12 and NVIDIA only, gfx11 keeps bf16 P.V"

struct FragAF8 {
  int32_t w[LayoutF8::kSlotsA / 4];
};
struct FragBF8 {
  int32_t w[LayoutF8::kSlotsB / 4];
};
struct FragCF8 {
  float x[LayoutF8::kSlotsC];
};

template <class Acc>
__device__ inline void zero_f8(Acc& c) {
  static_assert(fp8_leaf_available<Acc>, MOSS_FP8_LEAF_REFUSAL);
#pragma unroll
  for (int i = 0; i < LayoutF8::kSlotsC; ++i) c.x[i] = 0.0f;
}

// get4(m, k0) returns the codes of A[m][k0 .. k0+3] as one little-endian word (A[m][k0] in bits 7:0);
// k0 is a multiple of 4. Zero-pad (code 0) outside the matrix in `get4`.
template <class Get4>
__device__ inline void load_a_f8(FragAF8& f, Get4 get4) {
  static_assert(fp8_leaf_available<Get4>, MOSS_FP8_LEAF_REFUSAL);
  const int lane = int(lane_id());
#pragma unroll
  for (int w = 0; w < LayoutF8::kSlotsA / 4; ++w) {
    const mma_layout::Elem e = LayoutF8::a(lane, 4 * w);
    f.w[w] = get4(e.row, e.col);
  }
}

// get4(n, k0) returns the codes of B[k0 .. k0+3][n], i.e. Bt[n][k0 .. k0+3] of a transposed [n][k]
// operand (Vᵀ, a channel's values over the keys).
template <class Get4>
__device__ inline void load_b_f8(FragBF8& f, Get4 get4) {
  static_assert(fp8_leaf_available<Get4>, MOSS_FP8_LEAF_REFUSAL);
  const int lane = int(lane_id());
#pragma unroll
  for (int w = 0; w < LayoutF8::kSlotsB / 4; ++w) {
    const mma_layout::Elem e = LayoutF8::b(lane, 4 * w);
    f.w[w] = get4(e.col, e.row);
  }
}

// put(m, n, value) receives every C[m][n] of the block exactly once over the wave.
template <class Put>
__device__ inline void store_c_f8(const FragCF8& c, Put put) {
  static_assert(fp8_leaf_available<Put>, MOSS_FP8_LEAF_REFUSAL);
  const int lane = int(lane_id());
#pragma unroll
  for (int i = 0; i < LayoutF8::kSlotsC; ++i) {
    const mma_layout::Elem e = LayoutF8::c(lane, i);
    put(e.row, e.col, c.x[i]);
  }
}

// acc = A·B + acc, the products of e4m3 values accumulated in fp32 by the instruction.
template <class Acc>
__device__ inline void mma_f8(Acc& acc, const FragAF8& a, const FragBF8& b) {
  static_assert(fp8_leaf_available<Acc>, MOSS_FP8_LEAF_REFUSAL);
  static_assert(sizeof(Acc) == sizeof(FragCF8), "mma_f8 accumulates into a FragCF8");
#if defined(MOSS_LEAF_EMULATED)
  emulated_mma_f8<LayoutF8>(acc, a, b);  // the host emulation of the device (tests/emulation/runtime/portability.h)
#elif MOSS_PLATFORM_NVIDIA
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 890
  static_assert(sizeof(Acc) == 0, "matrix leaf: mma.sync ... .e4m3 needs sm_89 or newer");
#endif
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    float* d = acc.x + 4 * j;
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a.w[0]), "r"(a.w[1]), "r"(a.w[2]), "r"(a.w[3]), "r"(b.w[2 * j]), "r"(b.w[2 * j + 1]));
  }
#elif defined(__GFX12__)
  // clang-19: (A, B, C), A and B int vectors of 2 words (8 codes per lane), C 8 floats.
  typedef int v2i __attribute__((ext_vector_type(2)));
  typedef float v8f __attribute__((ext_vector_type(8)));
  v8f c = __builtin_bit_cast(v8f, acc);
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const v2i av = {a.w[2 * j], a.w[2 * j + 1]}, bv = {b.w[2 * j], b.w[2 * j + 1]};
    c = __builtin_amdgcn_wmma_f32_16x16x16_fp8_fp8_w32_gfx12(av, bv, c);
  }
  acc = __builtin_bit_cast(Acc, c);
#endif
}
#undef MOSS_FP8_LEAF_REFUSAL

}  // namespace leaf
}  // namespace moss
