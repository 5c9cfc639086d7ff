// The one arithmetic the host samplers (sampler.cpp, sampler_unipc.cpp) need: a linear
// combination of latents, per element in double, stored as float.
#pragma once
#include <initializer_list>
#include <utility>
#include <vector>

namespace moss {

// Σ coefficient·vector (all of one size; the list may be built at run time).
inline std::vector<float> mix(const std::vector<std::pair<double, const std::vector<float>*>>& terms) {
  const size_t n = terms.front().second->size();
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) {
    double acc = 0.0;
    for (const auto& t : terms) acc += t.first * double((*t.second)[i]);
    out[i] = float(acc);
  }
  return out;
}

inline std::vector<float> mix(std::initializer_list<std::pair<double, const std::vector<float>*>> terms) {
  return mix(std::vector<std::pair<double, const std::vector<float>*>>(terms));
}

}  // namespace moss
