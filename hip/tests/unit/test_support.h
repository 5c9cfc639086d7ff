// Helpers several unit tests share: catching the moss::Error a call throws, and the relative
// L2 distance the numeric tests judge outputs by.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"
#include "util/error.h"

namespace moss {

// Runs fn and returns the moss::Error it throws (failing the test when it throws none).
template <class Fn> Error error_of(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no moss::Error thrown";
  return Error(ExitCode::Ok, "");
}

// The exit code and message of the moss::Error fn throws; code -1 and no message when it throws
// none (for tests in which not throwing is one of the outcomes compared).
template <class Fn> std::pair<int, std::string> outcome_of(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    return {int(e.code()), e.what()};
  }
  return {-1, ""};
}

// ‖a − b‖ / ‖b‖ over the elements as f32, summed in double: b is the reference.
inline double rel_l2(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = to_f32_vector(a), y = to_f32_vector(b);
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    num += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
    den += double(y[i]) * y[i];
  }
  return std::sqrt(num / den);
}

// A host f32 tensor of normal values (mean 0, standard deviation sd) from a seeded generator.
inline Tensor random_normal(const std::vector<int64_t>& dims, uint32_t seed, float sd = 1.0f) {
  Tensor t = host_tensor(DType::F32, dims);
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, sd);
  for (int64_t i = 0; i < t.numel(); ++i) t.ptr<float>()[i] = dist(gen);
  return t;
}

// A host I8 [n, k] tensor uniform over [lowest, 127].
inline Tensor random_i8(int64_t n, int64_t k, uint32_t seed, int lowest = -128) {
  Tensor t = host_tensor(DType::I8, {n, k});
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(lowest, 127);
  for (int64_t i = 0; i < t.numel(); ++i) t.ptr<int8_t>()[i] = int8_t(dist(gen));
  return t;
}

}  // namespace moss
