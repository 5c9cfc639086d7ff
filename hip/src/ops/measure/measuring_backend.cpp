#include "ops/measure/measuring_backend.h"

namespace moss {
namespace {

// Each tensor's owner returns its bytes to the live counter when the last view goes.
std::shared_ptr<void> counted(size_t bytes, const std::shared_ptr<size_t>& live, const std::shared_ptr<size_t>& peak) {
  *live += bytes;
  if (*live > *peak) *peak = *live;
  return std::shared_ptr<void>(static_cast<void*>(nullptr), [bytes, live](void*) { *live -= bytes; });
}

class NoCoreOps : public CoreOps {
 public:
  explicit NoCoreOps(Backend& be) : be_(be) {}
  void linear(const Tensor&, const Tensor&, const Tensor*, Tensor&) override {}
  // Counts the product [M, 2F] that a backend without the fused epilogue materialises for the
  // call (the HIP fallback's scratch), so the plan holds on every GPU.
  void linear_gated_unit(GatedUnit, const Tensor&, const Tensor&, const Tensor*, Tensor& out) override {
    const Tensor product = be_.alloc(out.dtype, {out.rows(), 2 * out.cols()});
    (void)product;
  }
  void rms_norm(const Tensor&, const Tensor*, NormWeight, float, int64_t, Tensor&) override {}
  void modulate(Tensor&, const Tensor&, const Tensor&) override {}
  void norm_modulate(const Tensor&, const Tensor&, float, const Tensor&, const Tensor&, Tensor&) override {}
  void add_norm_modulate(Tensor&, const Tensor&, const Tensor&, const Tensor&, float, const Tensor&, const Tensor&,
                         Tensor&) override {}
  void norm_rope(const Tensor&, const Tensor&, float, int64_t, const Tensor&, const Tensor&, Tensor&) override {}
  void add(Tensor&, const Tensor&, const Tensor*) override {}
  void gated_unit(GatedUnit, const Tensor&, const Tensor&, Tensor&) override {}
  void silu(const Tensor&, Tensor&) override {}
  void rope(Tensor&, const Tensor&, const Tensor&, int64_t, int64_t) override {}
  void attention(const Tensor&, const Tensor&, const Tensor&, Tensor&, int64_t, int64_t, int64_t, float,
                 bool) override {}
  void embedding(const std::vector<int32_t>&, const Tensor&, Tensor&) override {}
  void copy(const Tensor&, Tensor&) override {}

 private:
  Backend& be_;
};

class NoTextOps : public TextOps {
 public:
  void causal_conv1d_silu(const Tensor&, const Tensor&, Tensor&) override {}
  void deltanet_gates(const Tensor&, const Tensor&, const Tensor&, const Tensor&, Tensor&, Tensor&) override {}
  void l2_norm(const Tensor&, float, int64_t, Tensor&) override {}
  void delta_rule_chunked(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, int64_t, float,
                          int64_t, Tensor*, Tensor&) override {}
  void delta_rule_recurrent(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, int64_t, float,
                            Tensor*, Tensor&) override {}
  void gated_rms_norm(const Tensor&, const Tensor&, const Tensor&, float, int64_t, Tensor&) override {}
};

class NoVaeOps : public VaeOps {
 public:
  void group_norm_stats(const Tensor&, int64_t, float, Tensor&) override {}
  void conv2d(const Tensor&, const Tensor&, const Tensor&, const Conv2dOptions&, Tensor&) override {}
  void batch_norm_unpatchify(const Tensor&, const Tensor&, const Tensor&, float, int64_t, Tensor&) override {}
  void group_norm_to_tokens(const Tensor&, const GroupNormInput&, Tensor&) override {}
  void add_tokens(Tensor&, const Tensor&) override {}
};

}  // namespace

MeasuringBackend::MeasuringBackend()
    : live_(std::make_shared<size_t>(0)),
      peak_(std::make_shared<size_t>(0)),
      weights_live_(std::make_shared<size_t>(0)),
      weights_peak_(std::make_shared<size_t>(0)) {
  core_ = std::make_unique<NoCoreOps>(*this);
  text_ = std::make_unique<NoTextOps>();
  vae_ = std::make_unique<NoVaeOps>();
}

Tensor MeasuringBackend::alloc(DType t, const std::vector<int64_t>& dims) {
  Tensor x(nullptr, t, dims, Where::Device);
  x.owner = counted(x.nbytes(), live_, peak_);
  return x;
}

Tensor MeasuringBackend::upload(const Tensor& host) {
  Tensor x(nullptr, host.dtype, host.dims(), Where::Device);
  x.owner = counted(x.nbytes(), weights_live_, weights_peak_);
  return x;
}

Tensor MeasuringBackend::download(const Tensor& t) { return host_tensor(t.dtype, t.dims()); }

}  // namespace moss
