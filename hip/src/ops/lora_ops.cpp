// The LoRA family's public op: the operand checks every backend shares (shapes and dtypes;
// where the tensors live is the body's to check), then the backend's body inside the hook.
#include "ops/lora_ops.h"

#include <string>

namespace moss {
namespace {

const char* kOp = "lora_merge";

void check_factor(const LoraFactor& f, const char* which) {
  const std::string name = which;
  op_require(f.a.rank == 2 && f.a.dtype == DType::F32 && f.a.contiguous(), kOp,
             name + " must be a contiguous f32 matrix, not " + f.a.shape_str() + " " + dtype_name(f.a.dtype));
  if (!f.product()) return;
  op_require(f.b.rank == 2 && f.b.dtype == DType::F32 && f.b.contiguous(), kOp,
             name + "'s second half must be a contiguous f32 matrix, not " + f.b.shape_str() + " " +
                 dtype_name(f.b.dtype));
  op_require(f.a.cols() == f.b.rows(), kOp,
             name + "'s halves " + f.a.shape_str() + " and " + f.b.shape_str() + " do not fit (rank differs)");
}

}  // namespace

void LoraOps::merge(Tensor& w, const std::vector<LoraDelta>& deltas) {
  op_require(w.dtype == DType::BF16 || w.dtype == DType::F32, kOp,
             std::string("the weight must be BF16 or F32, not ") + dtype_name(w.dtype));
  op_require((w.rank == 1 || w.rank == 2) && w.contiguous(), kOp,
             "the weight must be a contiguous matrix or vector, not " + w.shape_str());
  const int64_t out = w.rows(), in = w.cols();
  for (const LoraDelta& d : deltas) {
    check_factor(d.f1, "factor 1");
    op_require(d.row0 >= 0, kOp, "row0 is negative");
    const int64_t rows1 = d.f1.rows(), cols1 = d.f1.cols();
    if (d.form == LoraDeltaForm::Kronecker) {
      check_factor(d.f2, "factor 2");
      const int64_t c = d.f2.rows(), dd = d.f2.cols();
      op_require(rows1 * c >= d.row0 + out && cols1 * dd == in, kOp,
                 "the Kronecker product of " + std::to_string(rows1) + "x" + std::to_string(cols1) + " and " +
                     std::to_string(c) + "x" + std::to_string(dd) + " does not cover rows " + std::to_string(d.row0) +
                     "+" + std::to_string(out) + " of width " + std::to_string(in));
      continue;
    }
    op_require(rows1 >= d.row0 + out && cols1 == in, kOp,
               "a delta of " + std::to_string(rows1) + "x" + std::to_string(cols1) + " does not cover rows " +
                   std::to_string(d.row0) + "+" + std::to_string(out) + " of width " + std::to_string(in));
    if (d.form == LoraDeltaForm::Hadamard) {
      check_factor(d.f2, "factor 2");
      op_require(d.f2.rows() == rows1 && d.f2.cols() == cols1, kOp,
                 "the Hadamard factors differ: " + std::to_string(rows1) + "x" + std::to_string(cols1) + " and " +
                     std::to_string(d.f2.rows()) + "x" + std::to_string(d.f2.cols()));
    }
  }
  run_op(hook_, [&] { return OpCall{"lora.merge " + op_dims(w) + " deltas:" + std::to_string(deltas.size())}; },
         [&] { do_merge(w, deltas); });
}

}  // namespace moss
