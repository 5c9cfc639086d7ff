// The host reference of the LoRA family (ops/lora_ops.h): the merge's arithmetic written out as
// the header defines it, one output row per task. Built with -ffp-contract=off (hip/CMakeLists.txt):
// every product and every sum is rounded on its own, as the kernel (kernels/lora_merge.hip) does,
// so the two agree bit for bit whatever FMA the host CPU has.
#include <initializer_list>
#include <vector>

#include "ops/lora_ops.h"

namespace moss {
namespace {

// Row p of a factor into out[0, cols): the stored row, or the product's sums over k ascending.
void factor_row(const LoraFactor& f, int64_t p, float* out) {
  const int64_t cols = f.cols();
  const float* a = f.a.ptr<float>();
  if (!f.product()) {
    for (int64_t q = 0; q < cols; ++q) out[q] = a[p * cols + q];
    return;
  }
  const int64_t rank = f.a.cols();
  const float* b = f.b.ptr<float>();
  for (int64_t q = 0; q < cols; ++q) out[q] = 0.0f;
  for (int64_t k = 0; k < rank; ++k) {
    const float x = a[p * rank + k];
    const float* brow = b + k * cols;
    for (int64_t q = 0; q < cols; ++q) out[q] = out[q] + x * brow[q];
  }
}

// Row R of one delta's ΔW into d[0, in); `scratch` holds the factors' rows.
void delta_row(const LoraDelta& delta, int64_t R, int64_t in, float* d, std::vector<float>& scratch) {
  switch (delta.form) {
    case LoraDeltaForm::Single: factor_row(delta.f1, R, d); return;
    case LoraDeltaForm::Hadamard: {
      scratch.resize(size_t(in));
      factor_row(delta.f1, R, d);
      factor_row(delta.f2, R, scratch.data());
      for (int64_t i = 0; i < in; ++i) d[i] = d[i] * scratch[size_t(i)];
      return;
    }
    case LoraDeltaForm::Kronecker: {
      const int64_t c = delta.f2.rows(), dd = delta.f2.cols(), b1 = delta.f1.cols();
      scratch.resize(size_t(b1 + dd));
      float* row1 = scratch.data();
      float* row2 = scratch.data() + b1;
      factor_row(delta.f1, R / c, row1);
      factor_row(delta.f2, R % c, row2);
      for (int64_t j = 0; j < b1; ++j)
        for (int64_t l = 0; l < dd; ++l) d[j * dd + l] = row1[j] * row2[l];
      return;
    }
  }
}

class HostLoraOps final : public LoraOps {
 public:
  explicit HostLoraOps(ThreadPool& pool) : pool_(pool) {}

 protected:
  void do_merge(Tensor& w, const std::vector<LoraDelta>& deltas) override {
    op_require(w.where == Where::Host, "lora_merge", "the host backend merges host weights");
    for (const LoraDelta& d : deltas)
      for (const Tensor* t : {&d.f1.a, &d.f1.b, &d.f2.a, &d.f2.b})
        op_require(t->rank == 0 || t->where == Where::Host, "lora_merge", "the host backend takes host factors");
    const int64_t rows = w.rows(), in = w.cols();
    const bool bf16 = w.dtype == DType::BF16;
    pool_.parallel_for(rows, [&](int64_t r0, int64_t r1) {
      std::vector<float> x(static_cast<size_t>(in)), d(static_cast<size_t>(in)), scratch;
      for (int64_t o = r0; o < r1; ++o) {
        uint16_t* wb = bf16 ? w.ptr<uint16_t>() + o * in : nullptr;
        float* wf = bf16 ? nullptr : w.ptr<float>() + o * in;
        for (int64_t i = 0; i < in; ++i) x[size_t(i)] = bf16 ? bf16_to_f32(wb[i]) : wf[i];
        for (const LoraDelta& delta : deltas) {
          delta_row(delta, delta.row0 + o, in, d.data(), scratch);
          const float coef = delta.coef;
          for (int64_t i = 0; i < in; ++i) x[size_t(i)] = x[size_t(i)] + coef * d[size_t(i)];
        }
        for (int64_t i = 0; i < in; ++i) {
          if (bf16) wb[i] = f32_to_bf16(x[size_t(i)]);
          else wf[i] = x[size_t(i)];
        }
      }
    });
  }

 private:
  ThreadPool& pool_;
};

}  // namespace

std::unique_ptr<LoraOps> make_host_lora_ops(ThreadPool& pool) { return std::make_unique<HostLoraOps>(pool); }

}  // namespace moss
