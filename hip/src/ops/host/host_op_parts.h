// What the host reference op families (core, text, VAE) share: their own operand conditions
// (the public ops have checked shapes; where a tensor lives is the backend's to check) and the
// loop the row norms start from.
#pragma once
#include <cstdint>
#include <string>

#include "ops/op_hook.h"
#include "tensor/tensor.h"
#include "util/thread_pool.h"

namespace moss {

// The host backend reads and writes every operand in place: it must be a host tensor.
inline void check_host(const Tensor& t, const char* op, const char* what) {
  op_require(t.where == Where::Host, op, std::string(what) + " must be on the host");
}

// An activation matrix of the core and text families: a host f32 tensor.
inline void check_f32_matrix(const Tensor& t, const char* op, const char* what) {
  check_host(t, op, what);
  op_require(t.dtype == DType::F32, op, std::string(what) + " must be f32");
}

// The row norms' common loop (rms_norm, l2_norm, gated_rms_norm): the rows of the f32 matrix x
// threaded over the pool; in each row, per group of `group` columns from column g0, the sum of
// squares in column order in one fp32 sum (the kernels' order), then norm_group(r, g0, ss)
// writes that group of row r.
template <class NormGroup>
void for_each_group_sum_of_squares(ThreadPool& pool, const Tensor& x, int64_t group, NormGroup norm_group) {
  const int64_t C = x.cols();
  pool.parallel_for(x.rows(), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x.row<const float>(r);
      for (int64_t g0 = 0; g0 < C; g0 += group) {
        float ss = 0.0f;
        for (int64_t c = 0; c < group; ++c) ss += xr[g0 + c] * xr[g0 + c];
        norm_group(r, g0, ss);
      }
    }
  }, 4);
}

}  // namespace moss
