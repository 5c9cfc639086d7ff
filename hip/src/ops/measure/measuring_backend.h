// A backend that computes nothing and counts memory: every op is a no-op (a hook, ops/op_hook.h,
// skips every body after the op's shape checks), alloc returns a
// tensor with a real shape but a null pointer, and the backend records the live and peak
// activation bytes (uploaded weights are counted separately). Running a model's own forward on
// it gives the exact device memory that implementation needs at a shape, so the memory planner
// never drifts from what the code really allocates.
#pragma once
#include <cstddef>
#include <memory>

#include "ops/backend.h"

namespace moss {

class MeasuringBackend : public Backend {
 public:
  MeasuringBackend();
  ~MeasuringBackend() override;
  std::string name() const override { return "measure"; }
  Where where() const override { return Where::Device; }
  Tensor alloc(DType t, const std::vector<int64_t>& dims) override;
  Tensor upload(const Tensor& host) override;
  Tensor download(const Tensor& t) override;  // zero-filled host tensor of t's shape
  // The GPU backend's choice (bf16 GEMM inputs), so the plan counts what the GPU allocates.
  DType gemm_input_dtype() const override { return DType::BF16; }

  size_t live_bytes() const { return *live_; }
  size_t peak_bytes() const { return *peak_; }
  size_t live_weight_bytes() const { return *weights_live_; }
  size_t peak_weight_bytes() const { return *weights_peak_; }
  void reset_peaks() {
    *peak_ = *live_;
    *weights_peak_ = *weights_live_;
  }

 private:
  class SkipOps;
  // Shared with the owners of the tensors handed out, so bytes return when a tensor dies.
  std::shared_ptr<size_t> live_, peak_, weights_live_, weights_peak_;
  std::unique_ptr<SkipOps> skip_;
};

}  // namespace moss
