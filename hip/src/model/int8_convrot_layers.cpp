#include "model/int8_convrot_layers.h"

#include <set>

#include "io/files.h"
#include "tensor/int8_convrot.h"
#include "util/error.h"

namespace moss {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string t = "[";
  for (size_t i = 0; i < shape.size(); ++i) t += (i ? ", " : "") + std::to_string(shape[i]);
  return t + "]";
}

}  // namespace

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

std::map<std::string, int64_t> check_int8_convrot_dit(const WeightFiles& weights, const DitConfig& cfg) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const ExpectedTensor& e : dit_expected_tensors(cfg)) shapes[e.name] = e.shape;
  std::map<std::string, int64_t> groups;
  std::set<std::string> layer_tensors;
  auto where = [&](const std::string& name) { return weights.file_of(name) + ": " + name; };
  auto require = [&](const std::string& name) {
    if (!weights.has(name)) throw failure(weights.folder() + ": missing tensor " + name + " of the INT8 ConvRot layout");
    layer_tensors.insert(name);
    return weights.info(name);
  };
  for (const QuantizedDitLayer& l : int8_convrot_dit_layers(cfg)) {
    int64_t rows = 0;
    for (const std::string& s : l.sources) rows += shapes.at(s).at(0);
    const int64_t in = shapes.at(l.sources[0]).at(1);
    const TensorInfo w = require(l.name + ".weight");
    if (w.dtype != DType::I8 || w.shape != std::vector<int64_t>{rows, in})
      throw failure(where(w.name) + ": " + w.dtype_name + " " + shape_text(w.shape) + ", expected I8 [" +
                    std::to_string(rows) + ", " + std::to_string(in) + "]");
    const TensorInfo s = require(l.name + ".weight_scale");
    if (s.dtype != DType::F32 ||
        (s.shape != std::vector<int64_t>{rows} && s.shape != std::vector<int64_t>{rows, 1}))
      throw failure(where(s.name) + ": " + s.dtype_name + " " + shape_text(s.shape) + ", expected F32 [" +
                    std::to_string(rows) + "] or [" + std::to_string(rows) + ", 1]");
    const TensorInfo r = require(l.name + ".comfy_quant");
    if (r.dtype != DType::U8 || r.shape.size() != 1)
      throw failure(where(r.name) + ": " + r.dtype_name + " " + shape_text(r.shape) + ", expected U8 bytes");
    const Tensor bytes = weights.get(r.name);
    const int64_t g = convrot::comfy_quant_group(std::string(bytes.ptr<const char>(), size_t(bytes.numel())), where(r.name));
    if (in % g != 0)
      throw failure(where(r.name) + ": convrot_groupsize " + std::to_string(g) + " does not divide the input width " +
                    std::to_string(in));
    groups[l.name] = g;
  }
  for (const std::string& name : weights.names()) {
    if (layer_tensors.count(name)) continue;
    if (ends_with(name, ".comfy_quant") || ends_with(name, ".weight_scale") || weights.info(name).dtype == DType::I8)
      throw usage_error(where(name) + ": quantized, but this layer stays bf16 in the INT8 ConvRot layout "
                                      "(docs/int8_convrot.md section 5)");
  }
  return groups;
}

std::map<std::string, int64_t> int8_projection_groups(const std::map<std::string, int64_t>& layer_groups,
                                                      const DitConfig& cfg) {
  std::map<std::string, int64_t> out;
  for (const QuantizedDitLayer& l : int8_convrot_dit_layers(cfg)) {
    auto g = layer_groups.find(l.name);
    if (g == layer_groups.end()) continue;
    for (const std::string& source : l.sources)  // "layers.N.proj.q.weight" -> "layers.N.proj.q"
      out[source.substr(0, source.size() - std::string(".weight").size())] = g->second;
  }
  return out;
}

}  // namespace moss
