#include "model/random_weights.h"

#include <cmath>
#include <algorithm>
#include <cstring>
#include <memory>

#include "util/thread_pool.h"

namespace moss {
namespace {

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Sum of four uniforms of one 64-bit draw, scaled to std 1: close enough to a normal for weights.
float pseudo_normal(uint64_t salt, uint64_t i) {
  const uint64_t r = splitmix(salt * 0x100000001b3ull + i);
  float s = 0;
  for (int k = 0; k < 4; ++k) s += float((r >> (16 * k)) & 0xffff) / 65535.0f - 0.5f;
  return s * 1.7320508f;
}

}  // namespace

WeightDraw weight_draw(const std::string& name, const std::vector<int64_t>& shape, bool zero_centred_norms) {
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  // An INT8 ConvRot scale [out, 1] (docs/int8_convrot.md): the I8 values (std kRandomI8Std) times
  // it have the float matrix's std, 1/sqrt(fan-in), which the caller gives as shape[1].
  if (has(".weight_scale") && shape.size() == 2 && shape[1] > 1)
    return {1.0f / (kRandomI8Std * std::sqrt(float(shape[1]))), 0.0f};
  if (has("running_var")) return {1.0f, 0.1f};
  if (has("running_mean")) return {0.0f, 0.1f};
  if (has("A_log")) return {0.5f, 0.3f};
  if (has("dt_bias")) return {0.0f, 0.5f};
  const bool is_norm = has("norm") && name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0;
  if (is_norm && shape.size() == 1) return {zero_centred_norms ? 0.0f : 1.0f, 0.05f};
  if (shape.size() == 1) return {0.0f, 0.02f};
  if (has("embed_tokens")) return {0.0f, 0.02f};
  int64_t fan_in = 1;
  for (size_t d = 1; d < shape.size(); ++d) fan_in *= shape[d];
  return {0.0f, 1.0f / std::sqrt(float(fan_in))};
}

void fill_random_weights(void* dst, DType dtype, int64_t first, int64_t n, WeightDraw draw, uint64_t salt) {
  char* out = static_cast<char*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const float v = draw.mean + draw.std * pseudo_normal(salt, uint64_t(first + i));
    if (dtype == DType::BF16) {
      const uint16_t x = f32_to_bf16(v);
      std::memcpy(out + 2 * i, &x, 2);
    } else if (dtype == DType::I8) {
      out[i] = char(int8_t(std::clamp(std::nearbyint(v), -127.0f, 127.0f)));
    } else {
      std::memcpy(out + 4 * i, &v, 4);
    }
  }
}

std::map<std::string, Tensor> random_host_weights(const std::vector<ExpectedTensor>& tensors, bool zero_centred_norms,
                                                  uint64_t salt0) {
  std::map<std::string, Tensor> out;
  uint64_t salt = salt0;
  for (const ExpectedTensor& e : tensors) {
    if (e.optional) continue;
    ++salt;
    const DType dtype = e.dtypes.empty() ? DType::BF16 : e.dtypes[0];
    // Not host_tensor: its zeroing would touch every page on this one thread before the fill
    // (tens of GiB for the full-size model); here each page is first touched by its filler.
    Tensor t(nullptr, dtype, e.shape);
    const std::shared_ptr<char> store(new char[std::max<size_t>(t.nbytes(), 1)], std::default_delete<char[]>());
    t.data = store.get();
    t.owner = store;
    // A scale's fan-in is its weight's width: the scale is [out, 1].
    std::vector<int64_t> draw_shape = e.shape;
    if (e.name.size() > 13 && e.name.compare(e.name.size() - 13, 13, ".weight_scale") == 0)
      for (const ExpectedTensor& w : tensors)
        if (w.name == e.name.substr(0, e.name.size() - 6) && w.shape.size() == 2) draw_shape = {e.shape[0], w.shape[1]};
    const WeightDraw draw = dtype == DType::I8 ? WeightDraw{0.0f, kRandomI8Std} : weight_draw(e.name, draw_shape, zero_centred_norms);
    const size_t elem = dtype_size(dtype);
    char* base = static_cast<char*>(t.data);
    ThreadPool::global().parallel_for(
        t.numel(), [&](int64_t b, int64_t e2) { fill_random_weights(base + size_t(b) * elem, dtype, b, e2 - b, draw, salt); },
        1 << 16);
    out[e.name] = t;
  }
  return out;
}

}  // namespace moss
