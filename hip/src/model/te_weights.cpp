#include "model/te_weights.h"

#include <map>

namespace moss {
namespace {

// be.upload(weights.get(name)) on first use within a layer, kept until the next layer starts,
// so the prompts of one pass share one upload per layer.
class UploadOnUse : public TeWeightSource {
 public:
  UploadOnUse(Backend& be, const WeightFiles& weights) : be_(be), weights_(weights) {}
  void before_layer(int) override { cache_.clear(); }
  void end_pass() override { cache_.clear(); }
  Tensor get(int, const std::string& name) override {
    auto it = cache_.find(name);
    if (it != cache_.end()) return it->second;
    return cache_[name] = be_.upload(weights_.get(name));
  }

 private:
  Backend& be_;
  WeightFiles weights_;
  std::map<std::string, Tensor> cache_;
};

}  // namespace

const char* te_residency_name(TeResidency r) {
  switch (r) {
    case TeResidency::Auto: return "auto";
    case TeResidency::UploadOnUse: return "upload on use";
    case TeResidency::Streamed: return "streamed";
    case TeResidency::Resident: return "resident";
  }
  return "?";
}

TeResidency resolve_te_residency(const Backend& be, TeResidency residency) {
  if (residency != TeResidency::Auto) return residency;
  return be.where() == Where::Host ? TeResidency::UploadOnUse : TeResidency::Streamed;
}

std::unique_ptr<TeWeightSource> make_te_weight_source(Backend& be, const WeightFiles& weights,
                                                      const std::string& prefix, int layers, TeResidency residency) {
  switch (resolve_te_residency(be, residency)) {
    case TeResidency::Streamed: return make_te_streamed_source(be, weights, prefix, layers);
    case TeResidency::Resident: return make_te_resident_source(be, weights, prefix, layers);
    default: return std::make_unique<UploadOnUse>(be, weights);
  }
}

}  // namespace moss
