#include "model/dit_weights.h"

namespace moss {
namespace {

class UploadOnUse : public DitWeightSource {
 public:
  UploadOnUse(Backend& be, const WeightFiles& weights) : be_(be), weights_(weights) {}
  Tensor get(const std::string& name) override { return be_.upload(weights_.get(name)); }

 private:
  Backend& be_;
  WeightFiles weights_;  // shares the mappings with the caller's copy
};

// A block with the four norm weights both block kinds carry (under the block's prefix p), read
// first and in this order.
template <class Block>
Block block_with_norms(DitWeightSource& src, const std::string& p) {
  Block w;
  w.norm1 = src.get(p + "norm1.weight");
  w.norm2 = src.get(p + "norm2.weight");
  w.q_norm = src.get(p + "q_norm.weight");
  w.k_norm = src.get(p + "k_norm.weight");
  return w;
}

}  // namespace

std::unique_ptr<DitWeightSource> make_upload_on_use_source(Backend& be, const WeightFiles& weights) {
  return std::make_unique<UploadOnUse>(be, weights);
}

std::string dit_side_lora_name(const std::string& projection, size_t i, const char* role) {
  return projection + ".lora_side." + std::to_string(i) + "." + role;
}

DitLinear DitLinear::load(DitWeightSource& src, const std::string& prefix, bool with_bias) {
  DitLinear l;
  l.w = src.get(prefix + ".weight");
  if (with_bias) {
    l.b = src.get(prefix + ".bias");
    l.has_bias = true;
  }
  return l;
}

DitTextBlockWeights DitTextBlockWeights::load(DitWeightSource& src, int index) {
  const std::string p = "text_embedder.blocks." + std::to_string(index) + ".";
  DitTextBlockWeights w = block_with_norms<DitTextBlockWeights>(src, p);
  w.qkv = DitLinear::load(src, p + "qkv", true);
  w.proj = DitLinear::load(src, p + "proj", true);
  w.ffn_up = DitLinear::load(src, p + "ffn_up", true);
  w.ffn_gate = DitLinear::load(src, p + "ffn_gate", true);
  w.ffn_down = DitLinear::load(src, p + "ffn_down", true);
  return w;
}

DitMainBlockWeights DitMainBlockWeights::load(DitWeightSource& src, int index,
                                              const std::map<std::string, int64_t>& int8_groups,
                                              const DitSideForms& side) {
  const std::string p = "layers." + std::to_string(index) + ".";
  DitMainBlockWeights w = block_with_norms<DitMainBlockWeights>(src, p);
  auto projection = [&](const char* n) {
    const std::string name = p + "proj." + n;
    DitProjection out;
    out.w = src.get(name + ".weight");
    auto g = int8_groups.find(name);
    if (g != int8_groups.end()) {
      out.scale = src.get(name + ".weight_scale");
      out.group = g->second;
    }
    auto forms = side.find(name);
    if (forms != side.end())
      for (size_t i = 0; i < forms->second.size(); ++i) {
        DitSideLora l;
        l.form = forms->second[i];
        if (l.form == DitSideForm::LowRank) {
          l.down = src.get(dit_side_lora_name(name, i, "down"));
          l.up = src.get(dit_side_lora_name(name, i, "up"));
          l.coef = src.get(dit_side_lora_name(name, i, "coef"));
        } else {
          l.delta = src.get(dit_side_lora_name(name, i, "delta"));
        }
        out.side.push_back(l);
      }
    return out;
  };
  w.q = projection("q");
  w.k = projection("k");
  w.v = projection("v");
  w.o = projection("o");
  w.ffn_up_gate = projection("ffn_up_gate");
  w.ffn_down = projection("ffn_down");
  return w;
}

}  // namespace moss
