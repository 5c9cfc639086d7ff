// Helpers several unit tests share: catching the moss::Error a call throws, and the relative
// L2 distance the numeric tests judge outputs by.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
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

}  // namespace moss
