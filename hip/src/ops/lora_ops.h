// The op interface, LoRA family: the merge of LoRA updates into one weight (docs/loras.md),
//   W' = round(float(W) + Σ_i coef_i · ΔW_i)          (the deltas in the order given)
// in fp32 with one rounding per value (to bf16, or none for an f32 weight). One op, two bodies:
// the host reference (ops/host/lora_ops_host.cpp, what model/lora.cpp merges with on the host)
// and the HIP kernel (kernels/lora_merge.*), which give the same bits: the arithmetic below is
// defined once, operation by operation, and neither side lets its compiler fuse a product into
// an add (the host file is built with -ffp-contract=off, the kernel spells mul_rn / add_rn).
//
// The arithmetic, for the value at row o, column i of W (R = row0 + o, the row in ΔW's frame):
//   a factor F is a matrix or a product; F(p, q) = a[p, q], or the product's sum
//     s = 0.0f; for k = 0, 1, ..., r-1 ascending: s = s + a[p, k] · b[k, q]
//   (each product rounded to fp32, then each sum: no FMA);
//   ΔW(R, i) = Single:    F1(R, i)                      (low rank: a = up, b = down; full: a = diff)
//              Hadamard:  F1(R, i) · F2(R, i)            (LyCORIS LoHa: (w1a·w1b) ⊙ (w2a·w2b))
//              Kronecker: F1(R / c, i / d) · F2(R % c, i % d), F2 being [c, d]  (LyCORIS LoKr)
//   x = float(W[o, i]); for each delta in order: x = x + coef · ΔW(R, i)  (coef · ΔW rounded, then the sum);
//   W[o, i] = bf16(x) rounding to nearest even (an f32 weight keeps x).
// A 1-D weight (a bias) is the one-row matrix [1, n]; its delta the one-row diff_b.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "ops/op_hook.h"
#include "tensor/tensor.h"
#include "util/thread_pool.h"

namespace moss {

// A matrix of a delta, stored whole (b empty) or as the product a [P, r] · b [r, Q]. f32, on
// the backend the op runs on, contiguous.
struct LoraFactor {
  Tensor a, b;
  bool product() const { return b.rank != 0; }
  int64_t rows() const { return a.rows(); }
  int64_t cols() const { return product() ? b.cols() : a.cols(); }
};

enum class LoraDeltaForm { Single, Hadamard, Kronecker };

struct LoraDelta {
  LoraDeltaForm form = LoraDeltaForm::Single;
  LoraFactor f1, f2;   // f2 for Hadamard and Kronecker only
  int64_t row0 = 0;    // the weight's first row in ΔW's frame (a fused qkv's k and v: rows and 2·rows)
  float coef = 1;      // the LoRA's weight times its scale (alpha / rank)
};

class LoraOps : public OpFamily {
 public:
  // w (bf16 or f32, [out, in] contiguous, or a 1-D bias) <- the formula above. Every delta must
  // cover rows [row0, row0 + out) and all `in` columns of its ΔW.
  void merge(Tensor& w, const std::vector<LoraDelta>& deltas);

 protected:
  // The backend's body, called once the shared checks have passed; it checks where the tensors
  // live and what its kernels take.
  virtual void do_merge(Tensor& w, const std::vector<LoraDelta>& deltas) = 0;
};

// The host reference, on `pool`'s threads (a row per task; the rows are independent, so the
// result does not depend on the split).
std::unique_ptr<LoraOps> make_host_lora_ops(ThreadPool& pool);

}  // namespace moss
