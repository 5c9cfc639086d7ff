#include "model/te_weights.h"

#include <cstring>
#include <map>

namespace moss {
namespace {

// The tensors as one [Σrows, cols] host tensor, or nullopt when they differ in dtype or columns
// (or are not contiguous 2-D). copy_values false: the shape alone, no storage (data null).
std::optional<Tensor> stack_rows_on_host(const std::vector<Tensor>& parts, bool copy_values) {
  if (parts.empty()) return std::nullopt;
  int64_t rows = 0;
  for (const Tensor& t : parts) {
    if (t.rank != 2 || !t.contiguous() || t.dtype != parts[0].dtype || t.cols() != parts[0].cols())
      return std::nullopt;
    rows += t.rows();
  }
  if (!copy_values) return Tensor(nullptr, parts[0].dtype, {rows, parts[0].cols()}, Where::Host);
  Tensor out = host_tensor(parts[0].dtype, {rows, parts[0].cols()});
  char* dst = out.ptr<char>();
  for (const Tensor& t : parts) {
    std::memcpy(dst, t.data, t.nbytes());
    dst += t.nbytes();
  }
  return out;
}

// be.upload(weights.get(name)) on first use within a layer, kept until the next layer starts,
// so the prompts of one pass share one upload per layer.
class UploadOnUse : public TeWeightSource {
 public:
  UploadOnUse(Backend& be, const WeightFiles& weights, bool copy_values)
      : be_(be), weights_(weights), copy_values_(copy_values) {}
  void before_layer(int) override {
    cache_.clear();
    fused_.clear();
  }
  void end_pass() override { before_layer(-1); }
  Tensor get(int, const std::string& name) override {
    auto it = cache_.find(name);
    if (it != cache_.end()) return it->second;
    return cache_[name] = be_.upload(weights_.get(name));
  }
  // Stacked on the host, then uploaded (the host backend keeps the stacked copy itself).
  std::optional<Tensor> get_fused(int, const std::vector<std::string>& names) override {
    std::string key;
    for (const std::string& n : names) key += n + "|";
    auto it = fused_.find(key);
    if (it != fused_.end()) return it->second;
    std::vector<Tensor> parts;
    for (const std::string& n : names) parts.push_back(weights_.get(n));
    const std::optional<Tensor> stacked = stack_rows_on_host(parts, copy_values_);
    return fused_[key] = stacked ? std::optional<Tensor>(be_.upload(*stacked)) : std::nullopt;
  }

 private:
  Backend& be_;
  WeightFiles weights_;
  bool copy_values_;
  std::map<std::string, Tensor> cache_;
  std::map<std::string, std::optional<Tensor>> fused_;
};

}  // namespace

const std::vector<std::vector<std::string>>& te_fused_groups() {
  static const std::vector<std::vector<std::string>> groups = {
      {"linear_attn.in_proj_qkv.weight", "linear_attn.in_proj_z.weight", "linear_attn.in_proj_a.weight",
       "linear_attn.in_proj_b.weight"},
      {"mlp.gate_proj.weight", "mlp.up_proj.weight"},
      {"self_attn.k_proj.weight", "self_attn.v_proj.weight"},
  };
  return groups;
}

const char* te_residency_name(TeResidency r) {
  switch (r) {
    case TeResidency::Auto: return "auto";
    case TeResidency::UploadOnUse: return "upload on use";
    case TeResidency::Streamed: return "streamed";
    case TeResidency::Resident: return "resident";
    case TeResidency::PinnedHost: return "pinned host";
    case TeResidency::ShapesOnly: return "shapes only";
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
    case TeResidency::PinnedHost: return make_te_pinned_host_source(be, weights, prefix, layers);
    case TeResidency::ShapesOnly: return std::make_unique<UploadOnUse>(be, weights, false);
    default: return std::make_unique<UploadOnUse>(be, weights, true);
  }
}

}  // namespace moss
