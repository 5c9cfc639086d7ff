// Near-fp32 matrix products on the bf16 matrix leaf (kernels/matrix_leaf.h), for kernels whose
// operands are fp32 values that bf16 would round too coarsely (the Gated DeltaNet chunk products,
// which feed an fp32 state carried across thousands of tokens).
//
// An fp32 operand x is split into two bf16 parts, x ≈ hi + lo (see split() below). Then
//   x·y ≈ lo_x·hi_y + hi_x·lo_y + hi_x·hi_y
// (the lo·lo term, below 2^-18 of the product, is dropped): three leaf instructions keep about 17
// mantissa bits where one keeps 8. kSplit = false gives the plain bf16 product, one instruction
// (the lo halves are then never loaded nor used).
//
// Loaders take get(row, col) returning the fp32 element (zero outside the matrix) and go through
// the same lane maps as leaf::load_a / leaf::load_b. Every lane of the wave calls everything here
// together, in wave-uniform control flow, as for the leaf itself.
#pragma once

#include "kernels/matrix_leaf.h"

namespace moss {
namespace split_leaf {

// One fp32 value as its bf16 part(s): hi = bf16(x) and, split, lo = bf16(x − hi) (x − hi is exact),
// both rounded to nearest even, so |lo| <= 2^-9 |x| and hi + lo is within 2^-17 of x; the dropped
// lo·lo term is below 2^-18 of the product. (Truncating instead is cheaper on chips without a bf16
// convert but measured ~5x less accurate: a biased hi leaves |lo| up to 2^-8 |x|.)
template <bool kSplit>
__device__ inline void split(float x, bf16& hi, bf16& lo) {
  hi = to_bf16(x);
  if (kSplit) lo = to_bf16(x - to_float(hi));
}

template <bool kSplit>
struct FragA {
  leaf::FragA hi, lo;
};
template <bool kSplit>
struct FragB {
  leaf::FragB hi, lo;
};

// A[m][k] = get(m, k).
template <bool kSplit, class Get>
__device__ inline void load_a(FragA<kSplit>& f, Get get) {
  leaf::for_each_slot<leaf::Operand::A>(
      [&](int i, mma_layout::Elem e) { split<kSplit>(get(e.row, e.col), f.hi.x[i], f.lo.x[i]); });
}

// B[k][n] = get(k, n).
template <bool kSplit, class Get>
__device__ inline void load_b(FragB<kSplit>& f, Get get) {
  leaf::for_each_slot<leaf::Operand::B>(
      [&](int i, mma_layout::Elem e) { split<kSplit>(get(e.row, e.col), f.hi.x[i], f.lo.x[i]); });
}

// acc += A·B; the small cross terms first, so they are not lost against the large one.
template <bool kSplit>
__device__ inline void mma(leaf::FragC& acc, const FragA<kSplit>& a, const FragB<kSplit>& b) {
  if (kSplit) {
    leaf::mma(acc, a.lo, b.hi);
    leaf::mma(acc, a.hi, b.lo);
  }
  leaf::mma(acc, a.hi, b.hi);
}

// acc += A·B for one 16x16x16 block whose operands are read here: A[m][k] = get_a(m, k),
// B[k][n] = get_b(k, n).
template <bool kSplit, class GetA, class GetB>
__device__ inline void mma_loaded(leaf::FragC& acc, GetA get_a, GetB get_b) {
  FragA<kSplit> fa;
  FragB<kSplit> fb;
  load_a<kSplit>(fa, get_a);
  load_b<kSplit>(fb, get_b);
  mma<kSplit>(acc, fa, fb);
}

// put(m, n, value) receives every C[m][n] of the 16x16 block exactly once over the wave.
template <class Put>
__device__ inline void store(const leaf::FragC& c, Put put) {
  leaf::store_c(c, put);
}

}  // namespace split_leaf
}  // namespace moss
