#include "ops/measure/measuring_backend.h"

#include "ops/host/host_factories.h"

namespace moss {
namespace {

// Each tensor's owner returns its bytes to the live counter when the last view goes.
std::shared_ptr<void> counted(size_t bytes, const std::shared_ptr<size_t>& live, const std::shared_ptr<size_t>& peak) {
  *live += bytes;
  if (*live > *peak) *peak = *live;
  return std::shared_ptr<void>(static_cast<void*>(nullptr), [bytes, live](void*) { *live -= bytes; });
}

// The pool of the families below: the calling thread alone (no worker threads start), since
// no body ever runs.
ThreadPool& no_workers() {
  static ThreadPool pool(1);
  return pool;
}

}  // namespace

// The hook that makes every op a no-op: the public op has checked its operands' shapes (as on
// the real backends), then the body is skipped. An op's declared scratch (OpCall) is allocated
// and dropped at once, so the peak holds what a GPU takes for the call.
class MeasuringBackend::SkipOps final : public OpHook {
 public:
  explicit SkipOps(MeasuringBackend& be) : be_(be) {}
  bool begin(const OpCall& call) override {
    if (!call.scratch_dims.empty()) (void)be_.alloc(call.scratch_dtype, call.scratch_dims);
    return false;
  }
  void end() override {}

 private:
  MeasuringBackend& be_;
};

MeasuringBackend::MeasuringBackend()
    : live_(std::make_shared<size_t>(0)),
      peak_(std::make_shared<size_t>(0)),
      weights_live_(std::make_shared<size_t>(0)),
      weights_peak_(std::make_shared<size_t>(0)),
      skip_(std::make_unique<SkipOps>(*this)) {
  // The host reference's families, whose bodies never run (the hook skips them all): any
  // family would do; these need nothing but a thread pool.
  // Its attention_int8_qk says yes, so an INT8 DiT's plan counts the quantized keys' buffer that
  // the portable kernels (every Radeon) allocate (a few MB more than NVIDIA's native path needs).
  core_ = make_host_core_ops(no_workers(), false, true, true);
  text_ = make_host_text_ops(no_workers());
  vae_ = make_host_vae_ops(no_workers());
  lora_ = make_host_lora_ops(no_workers());
  set_op_hook(skip_.get());
}

MeasuringBackend::~MeasuringBackend() = default;

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
