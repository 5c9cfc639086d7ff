#include "model/dit_tables.h"

#include <cmath>

namespace moss {

std::vector<float> timestep_sinusoid(float timestep, int64_t freq_dim) {
  const int64_t half = freq_dim / 2;
  std::vector<float> e(size_t(2 * half));
  for (int64_t k = 0; k < half; ++k) {
    const double f = std::pow(10000.0, -double(k) / double(half));
    const double phase = double(timestep) * f;
    e[size_t(k)] = float(std::cos(phase));
    e[size_t(half + k)] = float(std::sin(phase));
  }
  return e;
}

std::vector<float> rope_bands(int64_t head_dim, double base) {
  const int64_t n = head_dim / 8;
  std::vector<float> b(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    // torch: base ** (arange(n, fp32) / n), then 1 / that, each in fp32.
    const float exponent = float(j) / float(n);
    const float power = float(std::pow(base, double(exponent)));
    b[size_t(j)] = 1.0f / power;
  }
  return b;
}

std::vector<std::array<float, 4>> dit_positions(int64_t n_text, int64_t gh, int64_t gw) {
  std::vector<std::array<float, 4>> pos;
  pos.reserve(size_t(gh * gw + n_text));
  // Centred image coordinates: half-integers when a side is even (the offset is in fp32).
  const float ci = float(double(gh - 1) / 2.0), cj = float(double(gw - 1) / 2.0);
  for (int64_t i = 0; i < gh; ++i)
    for (int64_t j = 0; j < gw; ++j) pos.push_back({0.0f, float(n_text), float(i) - ci, float(j) - cj});
  for (int64_t k = 0; k < n_text; ++k) pos.push_back({0.0f, float(k), 0.0f, 0.0f});
  return pos;
}

RopeTables rope_tables(const std::vector<std::array<float, 4>>& positions, int64_t head_dim, double base) {
  const std::vector<float> bands = rope_bands(head_dim, base);
  const int64_t n = int64_t(bands.size()), half = head_dim / 2, rows = int64_t(positions.size());
  RopeTables t{host_tensor(DType::F32, {rows, head_dim}), host_tensor(DType::F32, {rows, head_dim})};
  for (int64_t r = 0; r < rows; ++r) {
    float* s = t.sin.row<float>(r);
    float* c = t.cos.row<float>(r);
    for (int64_t p = 0; p < half; ++p) {
      const float phase = positions[size_t(r)][size_t(p / n)] * bands[size_t(p % n)];  // fp32 product
      s[p] = s[p + half] = float(std::sin(double(phase)));
      c[p] = c[p + half] = float(std::cos(double(phase)));
    }
  }
  return t;
}

}  // namespace moss
