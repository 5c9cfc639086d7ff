// The HIP LoRA family (ops/lora_ops.h) on device tensors: the weight merged in place by
// kernels/lora_merge, every delta of it in one launch; the deltas' descriptors go to the device
// through the context's scratch (stream-ordered, so the host's copy may go at once).
#include <initializer_list>
#include <string>
#include <vector>

#include "kernels/lora_merge.h"
#include "ops/hip/hip_context.h"

namespace moss {
namespace {

const char* kOp = "lora_merge";

LoraFactorArgs factor_args(const LoraFactor& f) {
  for (const Tensor* t : {&f.a, &f.b})
    if (t->rank) op_require(t->where == Where::Device, kOp, "the factors must be on the device (stage them with Backend::upload)");
  LoraFactorArgs a;
  a.a = f.a.ptr<const float>();
  a.rows = f.rows();
  a.cols = f.cols();
  if (f.product()) {
    a.b = f.b.ptr<const float>();
    a.rank = f.a.cols();
  }
  return a;
}

class HipLoraOps final : public LoraOps {
 public:
  explicit HipLoraOps(HipContext& ctx) : ctx_(ctx) {}

 protected:
  void do_merge(Tensor& w, const std::vector<LoraDelta>& deltas) override {
    op_require(w.where == Where::Device, kOp, "the weight must be on the device");
    op_require(w.rows() <= int64_t(0x7fffffff) * 8 && w.cols() <= int64_t(0xffff) * kWaveSize, kOp,
               "the weight " + w.shape_str() + " is too large for one launch");
    if (deltas.empty() || w.numel() == 0) return;
    std::vector<LoraDeltaArgs> args;
    for (const LoraDelta& d : deltas) {
      LoraDeltaArgs a;
      a.form = d.form == LoraDeltaForm::Single ? kLoraSingle : d.form == LoraDeltaForm::Hadamard ? kLoraHadamard
                                                                                              : kLoraKronecker;
      a.coef = d.coef;
      a.row0 = d.row0;
      a.f1 = factor_args(d.f1);
      if (d.form != LoraDeltaForm::Single) a.f2 = factor_args(d.f2);
      args.push_back(a);
    }
    const size_t bytes = args.size() * sizeof(LoraDeltaArgs);
    void* dev = ctx_.scratch(bytes);
    ctx_.copy_to_device(dev, args.data(), bytes);
    LoraMergeArgs m;
    m.w = w.data;
    m.w_bf16 = w.dtype == DType::BF16;
    m.rows = w.rows();
    m.cols = w.cols();
    m.deltas = static_cast<const LoraDeltaArgs*>(dev);
    m.count = int32_t(args.size());
    lora_merge(m, ctx_.stream());
  }

 private:
  HipContext& ctx_;
};

}  // namespace

std::unique_ptr<LoraOps> make_hip_lora_ops(HipContext& ctx) { return std::make_unique<HipLoraOps>(ctx); }

}  // namespace moss
