#include "model/int8_convrot_layers.h"

namespace moss {

std::vector<QuantizedDitLayer> int8_convrot_dit_layers(const DitConfig& cfg) {
  std::vector<QuantizedDitLayer> out;
  for (int n = 0; n < int(cfg.layers); ++n) {
    const std::string p = "layers." + std::to_string(n) + ".proj.";
    out.push_back({p + "qkv", {p + "q.weight", p + "k.weight", p + "v.weight"}, n});
    out.push_back({p + "o", {p + "o.weight"}, n});
    out.push_back({p + "ffn_up_gate", {p + "ffn_up_gate.weight"}, n});
    out.push_back({p + "ffn_down", {p + "ffn_down.weight"}, n});
  }
  return out;
}

}  // namespace moss
