// Lane layouts of the 16x16x16 bf16 matrix leaf (D = A·B + C, A 16x16, B 16x16, C/D 16x16 fp32):
// for each implementation, which element of A, B and C lane `lane` holds in slot `i` of its
// fragment. These are the maps the kernels load and store through (kernels/matrix_leaf.h) and the
// maps the host emulation in tests/unit/test_matrix_layouts.cpp proves against a model of each
// instruction -- so they are plain constexpr functions that compile on the host with no HIP.
//
// Orientation is the maths one: A[m][k], B[k][n], C[m][n]; Elem{row, col} indexes the operand as
// written (for B, row = k and col = n). Kernels usually hold B transposed in memory ([n][k], a
// `[out][in]` weight), so they read element {k, n} of B at Bt[n * ld + k].
// Source of every formula: docs/matrix_layouts.md (machine-checked there against
// AMD's Matrix Instruction Calculator and the PTX ISA fragment tables).
#pragma once

// Device code includes runtime/portability.h first (kernels/matrix_leaf.h does), which defines
// MOSS_HOST_DEVICE as __host__ __device__; the host unit test includes this header alone.
#ifndef MOSS_HOST_DEVICE
#define MOSS_HOST_DEVICE
#endif

namespace moss {
namespace mma_layout {

struct Elem {
  int row, col;
};

// RDNA3 (gfx11), v_wmma_f32_16x16x16_bf16 in wave32. Per lane: A 16 bf16, B 16 bf16, C 8 fp32.
//   r = lane % 16, h = lane / 16.
//   A: slot i = A[r][i]        -- a whole row of A; lanes r and r+16 hold the SAME row (the
//   B: slot i = B[i][r]           hardware reads each half-wave's copy; both copies must match).
//   C: slot i = C[2i + h][r]   -- even rows in lanes 0-15, odd rows in lanes 16-31.
//   Packing: bf16 slot i sits in VGPR i/2 (low half when i is even); fp32 slot i in VGPR i.
struct Gfx11 {
  static constexpr int kSlotsA = 16, kSlotsB = 16, kSlotsC = 8;
  static MOSS_HOST_DEVICE constexpr Elem a(int lane, int i) { return {lane % 16, i}; }
  static MOSS_HOST_DEVICE constexpr Elem b(int lane, int i) { return {i, lane % 16}; }
  static MOSS_HOST_DEVICE constexpr Elem c(int lane, int i) { return {2 * i + lane / 16, lane % 16}; }
};

// RDNA4 (gfx12), v_wmma_f32_16x16x16_bf16 in wave32. Per lane: A 8 bf16, B 8 bf16, C 8 fp32,
// no duplication. r = lane % 16, h = lane / 16.
//   A: slot i = A[r][8h + i]   -- contiguous K numbering: lanes 0-15 hold K 0-7, lanes 16-31 K 8-15
//   B: slot i = B[8h + i][r]      (one 16-byte load per lane). The ISA numbers K differently
//                                 (K = 8*(i/4) + 4h + i%4), but the hardware pairs A and B slots
//                                 position by position, so any numbering shared by A AND B gives
//                                 A·B; mixing two numberings does not (the emulation checks both).
//   C: slot i = C[8h + i][r]   -- rows 0-7 in lanes 0-15, rows 8-15 in lanes 16-31.
struct Gfx12 {
  static constexpr int kSlotsA = 8, kSlotsB = 8, kSlotsC = 8;
  static MOSS_HOST_DEVICE constexpr Elem a(int lane, int i) { return {lane % 16, 8 * (lane / 16) + i}; }
  static MOSS_HOST_DEVICE constexpr Elem b(int lane, int i) { return {8 * (lane / 16) + i, lane % 16}; }
  static MOSS_HOST_DEVICE constexpr Elem c(int lane, int i) { return {8 * (lane / 16) + i, lane % 16}; }
};

// NVIDIA, two mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 (sm_80+): instruction j = 0, 1
// computes output columns 8j..8j+7 from the same A. g = lane / 4, t = lane % 4.
//   A (4 regs, shared): slot i = A[g + 8*((i/2)%2)][2t + i%2 + 8*(i/4)]
//       reg 0 = (g, 2t..2t+1), reg 1 = (g+8, 2t..), reg 2 = (g, 2t+8..), reg 3 = (g+8, 2t+8..)
//   B (2 regs per instruction): slot i = 4j + e, e = 0..3:  B[2t + e%2 + 8*(e/2)][8j + g]
//   C (4 fp32 per instruction): slot i = 4j + e:            C[g + 8*(e/2)][8j + 2t + e%2]
//   Packing: a 32-bit register holds slots 2p (bits 15:0) and 2p+1 (bits 31:16); both are
//   neighbours in K, i.e. one aligned 4-byte load from row-major A or from Bt ([n][k]).
struct Nvidia {
  static constexpr int kSlotsA = 8, kSlotsB = 8, kSlotsC = 8;
  static MOSS_HOST_DEVICE constexpr Elem a(int lane, int i) {
    return {lane / 4 + 8 * ((i / 2) % 2), 2 * (lane % 4) + i % 2 + 8 * (i / 4)};
  }
  static MOSS_HOST_DEVICE constexpr Elem b(int lane, int i) {
    return {2 * (lane % 4) + (i % 4) % 2 + 8 * ((i % 4) / 2), 8 * (i / 4) + lane / 4};
  }
  static MOSS_HOST_DEVICE constexpr Elem c(int lane, int i) {
    return {lane / 4 + 8 * ((i % 4) / 2), 8 * (i / 4) + 2 * (lane % 4) + (i % 4) % 2};
  }
};

// ---- the int8 leaf: 16x16x32, int8 A and B, int32 C (kernels/matrix_leaf.h, mma_i8) -------------
// A is 16x32 (A[m][k]), B 32x16 (B[k][n]), C 16x16 int32; one slot is one byte (int8) of A or B,
// one int32 of C. Each implementation is two instructions (docs/matrix_layouts.md section 8):
//   gfx11  2 x v_wmma_i32_16x16x16_iu8 over K halves 0-15 / 16-31 (C shared)
//   gfx12  2 x v_wmma_i32_16x16x16_iu8 over K halves 0-15 / 16-31 (C shared)
//   NVIDIA 2 x mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 over N halves 0-7 / 8-15 (A shared)
// In every map, slots 4w..4w+3 are four consecutive K of one row of A (one column of B), the lowest
// K in the lowest byte: a slot word is one aligned 4-byte load from row-major A or from Bt [n][k]
// (slot_words_are_k_quads checks it). C uses the same lane maps as the bf16 leaf's fp32 C.

// gfx11: instruction j reads slots 16j..16j+15 (4 VGPRs of bytes, byte i of a lane's operand in VGPR
// i/4 bits 8(i%4), AMD's calculator); each is the bf16 map of 2.2/2.3 with K offset 16j: lanes r and r+16 hold the
// same row of A (column of B), all 16 K of that half in order.
struct Gfx11I8 {
  static constexpr int kSlotsA = 32, kSlotsB = 32, kSlotsC = 8;
  static MOSS_HOST_DEVICE constexpr Elem a(int lane, int i) { return {lane % 16, i}; }
  static MOSS_HOST_DEVICE constexpr Elem b(int lane, int i) { return {i, lane % 16}; }
  static MOSS_HOST_DEVICE constexpr Elem c(int lane, int i) { return Gfx11::c(lane, i); }
};

// gfx12: instruction j reads slots 8j..8j+7 (2 VGPRs); within an instruction lanes 0-15 hold K 0-7
// of the half, lanes 16-31 K 8-15: for iu8 this is the ISA's own numbering (AMD's calculator), the
// same K order as the bf16 leaf's contiguous numbering of 3.3.
struct Gfx12I8 {
  static constexpr int kSlotsA = 16, kSlotsB = 16, kSlotsC = 8;
  static MOSS_HOST_DEVICE constexpr Elem a(int lane, int i) {
    return {lane % 16, 16 * (i / 8) + 8 * (lane / 16) + i % 8};
  }
  static MOSS_HOST_DEVICE constexpr Elem b(int lane, int i) {
    return {16 * (i / 8) + 8 * (lane / 16) + i % 8, lane % 16};
  }
  static MOSS_HOST_DEVICE constexpr Elem c(int lane, int i) { return Gfx12::c(lane, i); }
};

// NVIDIA m16n8k32 .s8 (PTX ISA fragment tables), g = lane / 4, t = lane % 4:
//   A (4 registers, shared by both instructions): slot i = A[g + 8*((i/4)%2)][4t + 16*(i/8) + i%4]
//   B (2 registers per instruction j): slot i = 8j + 4q + e: B[4t + 16q + e][8j + g]
//   C (4 int32 per instruction j): slot 4j + e = C[g + 8*(e/2)][8j + 2t + e%2] (the bf16 leaf's map)
struct NvidiaI8 {
  static constexpr int kSlotsA = 16, kSlotsB = 16, kSlotsC = 8;
  static MOSS_HOST_DEVICE constexpr Elem a(int lane, int i) {
    return {lane / 4 + 8 * ((i / 4) % 2), 4 * (lane % 4) + 16 * (i / 8) + i % 4};
  }
  static MOSS_HOST_DEVICE constexpr Elem b(int lane, int i) {
    return {4 * (lane % 4) + 16 * ((i % 8) / 4) + i % 4, 8 * (i / 8) + lane / 4};
  }
  static MOSS_HOST_DEVICE constexpr Elem c(int lane, int i) { return Nvidia::c(lane, i); }
};

// ---- the fp8 leaf: 16x16x32, OCP e4m3 A and B, fp32 C (kernels/matrix_leaf.h, mma_f8) ----------------
// The same shape and the same byte positions as the int8 leaf, read from the fp8 instructions' own
// tables (docs/matrix_layouts.md section 10), not assumed from the int8 ones:
//   gfx12  2 x v_wmma_f32_16x16x16_fp8_fp8 over K halves 0-15 / 16-31 (C shared): AMD's calculator
//          gives every A and B register cell of the fp8 form equal to the iu8 form's (byte i of lane
//          l is K 8(l/16) + i of row / column l % 16), and its D equal to the bf16 form's fp32 D;
//   NVIDIA 2 x mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 over N halves 0-7 / 8-15 (A
//          shared): the PTX ISA's m16n8k32 fragments are one table for .s8/.u8 and .e4m3/.e5m2.
// gfx11 has no fp8 instruction: there is no gfx11 map (the leaf refuses to compile there).
// tests/unit/test_matrix_layouts_fp8.cpp proves the maps against models of the fp8 instructions.
using Gfx12F8 = Gfx12I8;
using NvidiaF8 = NvidiaI8;

// Whether every slot word (slots 4w..4w+3) of A and of B is four consecutive K from a multiple of 4
// of one row of A / one column of B, the lowest K in slot 4w (the int8 loaders rely on it).
template <class L>
MOSS_HOST_DEVICE constexpr bool slot_words_are_k_quads() {
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < L::kSlotsA; ++i) {
      const Elem w = L::a(lane, i - i % 4), e = L::a(lane, i);
      if (w.col % 4 != 0 || e.row != w.row || e.col != w.col + i % 4) return false;
    }
    for (int i = 0; i < L::kSlotsB; ++i) {
      const Elem w = L::b(lane, i - i % 4), e = L::b(lane, i);
      if (w.row % 4 != 0 || e.col != w.col || e.row != w.row + i % 4) return false;
    }
  }
  return true;
}
static_assert(slot_words_are_k_quads<Gfx11I8>() && slot_words_are_k_quads<Gfx12I8>() &&
                  slot_words_are_k_quads<NvidiaI8>(),
              "int8 matrix layouts: every slot word is four consecutive K");

// Whether each lane's accumulator slots are kSlotsC consecutive rows of one column, slot i at row
// c(lane, 0).row + i (gfx12 only: gfx11 interleaves the rows over the half-waves, NVIDIA gives a
// lane two rows and two columns): a transposed store then writes them as one contiguous run
// (kernels/gemm_leaf.h, GemmOperands::y_transposed). Checked for all three below.
template <class L>
MOSS_HOST_DEVICE constexpr bool c_slots_are_column_runs() {
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < L::kSlotsC; ++i) {
      const Elem first = L::c(lane, 0), e = L::c(lane, i);
      if (e.col != first.col || e.row != first.row + i || first.row % L::kSlotsC != 0) return false;
    }
  return true;
}
static_assert(c_slots_are_column_runs<Gfx12>() && !c_slots_are_column_runs<Gfx11>() &&
                  !c_slots_are_column_runs<Nvidia>(),
              "matrix layouts: gfx12 alone keeps a lane's accumulator rows contiguous");

}  // namespace mma_layout
}  // namespace moss
