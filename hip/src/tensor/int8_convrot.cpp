#include "tensor/int8_convrot.h"

#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace moss::convrot {

bool valid_group_size(int64_t g) {
  if (g < 4) return false;
  while (g % 4 == 0) g /= 4;
  return g == 1;
}

void rotate_groups(float* x, int64_t n, int64_t g) {
  if (!valid_group_size(g) || n % g != 0)
    throw std::invalid_argument("convrot::rotate_groups: group " + std::to_string(g) + " for " + std::to_string(n) +
                                " values");
  for (int64_t g0 = 0; g0 < n; g0 += g) {
    float* v = x + g0;
    for (int64_t s = 1; s < g; s *= 4) {
      // Quadruples (base, base + s, base + 2s, base + 3s): base's digit at this stage is 0.
      for (int64_t base = 0; base < g; ++base) {
        if ((base / s) % 4 != 0) continue;
        const float a = v[base], b = v[base + s], c = v[base + 2 * s], d = v[base + 3 * s];
        v[base] = 0.5f * (((a + b) + c) - d);
        v[base + s] = 0.5f * (((a + b) - c) + d);
        v[base + 2 * s] = 0.5f * (((a - b) + c) + d);
        v[base + 3 * s] = 0.5f * (((-a + b) + c) + d);
      }
    }
  }
}

float quantize_row(const float* v, int64_t n, int8_t* q) {
  float absmax = 0.0f;
  bool finite = true;
  for (int64_t i = 0; i < n; ++i) {
    finite = finite && std::isfinite(v[i]);
    absmax = std::fmax(absmax, std::fabs(v[i]));
  }
  if (!finite) {
    for (int64_t i = 0; i < n; ++i) q[i] = 0;
    return std::nanf("");
  }
  // The reciprocal as a float constant, multiplied (comfy-kitchen's kernels), not a division.
  constexpr float kInv127 = 1.0f / 127.0f;
  const float s = std::fmax(absmax * kInv127, kScaleFloor);
  for (int64_t i = 0; i < n; ++i) {
    const float r = std::nearbyint(v[i] / s);  // the default rounding mode: half to even
    q[i] = int8_t(std::fmin(127.0f, std::fmax(-128.0f, r)));
  }
  return s;
}

std::string comfy_quant_json(int64_t g) {
  return "{\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": " + std::to_string(g) + "}";
}

int64_t comfy_quant_group(const std::string& record, const std::string& where) {
  const nlohmann::json j = nlohmann::json::parse(record, nullptr, false);
  if (!j.is_object()) throw failure(where + ": comfy_quant is not a JSON object");
  const nlohmann::json params = j.contains("params") && j["params"].is_object() ? j["params"] : nlohmann::json::object();
  // A key at the top level, else inside "params" (ComfyUI's comfy/ops.py reads both).
  auto key = [&](const char* name) -> const nlohmann::json* {
    if (j.contains(name)) return &j[name];
    if (params.contains(name)) return &params[name];
    return nullptr;
  };
  const nlohmann::json* format = key("format");
  if (!format || !format->is_string()) throw failure(where + ": comfy_quant has no format");
  const std::string f = format->get<std::string>();
  if (f != "int8_tensorwise")
    throw usage_error(where + ": quantization format '" + f +
                      "' is not supported (this engine runs int8_tensorwise with convrot: docs/int8_convrot.md)");
  const nlohmann::json* rot = key("convrot");
  if (!rot || !rot->is_boolean() || !rot->get<bool>())
    throw usage_error(where + ": int8_tensorwise without convrot is not supported (docs/int8_convrot.md)");
  const nlohmann::json* g = key("convrot_groupsize");
  if (!g) return kDefaultGroupSize;
  if (!g->is_number_integer() || !valid_group_size(g->get<int64_t>()))
    throw failure(where + ": comfy_quant convrot_groupsize " + g->dump() + " is not a power of 4");
  return g->get<int64_t>();
}

}  // namespace moss::convrot
