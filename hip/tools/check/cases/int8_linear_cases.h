// The INT8 ConvRot linear's cases of `moss-check kernels --family dit`, group int8
// (CoreOps::linear_int8: the activation pass and the int8 GEMM of kernels/int8_linear.h).
//
// Every case runs the op on the GPU backend and on the host reference on the same values and
// demands BIT-IDENTICAL outputs (tolerance 0): the rotation and the row quantization are fp32
// elementwise operations in the host's order, the product is an exact int32 sum, and the
// epilogue one fixed fp32 formula, so any difference is a bug. y in bf16 is compared with the
// host's fp32 y rounded once to bf16. A NaN equals a NaN (the non-finite row's outputs); any
// other difference, or an element left at the NaN poison where the host has a number, counts.
// Cases: K of one and of several groups (G 4 to 1024), every GEMM kernel (on NVIDIA's native path
// the wgmma kernel wherever int8_gemm_wgmma_fits: k a multiple of 16 above 256, aligned operands;
// its cases below cover K ending inside a 128-byte step, M and N tails, y through the copy engine
// in bf16 and f32 and from registers, no bias, NaN rows; elsewhere tiled: k a multiple of 16 and
// 16-byte aligned operands; direct: the rest), K not a multiple of the tiled kernel's 64
// nor of the leaf's 32, odd M and N (tails of both tiles), bias none / bf16 / f32, x f32 / bf16 and as a column slice at an
// odd offset, y f32 / bf16, a weight at an odd address (the byte loads), rows of zeros, NaN and
// infinity; and the DiT's four projections at 1024x1024 (4160 rows; checked on 64 sampled rows,
// timed; skipped under self-test's size cap). Row: "linear_int8", the shape "MxKxN gG" and its
// options, "differ" in the rel_l2 column (the count of differing elements), ms, rate.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../kernel_check.h"
#include "ops/backend.h"
#include "tensor/tensor.h"

namespace int8_check {

using namespace moss;

struct Int8Spec {
  int64_t m, k, n, group;
  DType x = DType::BF16, y = DType::BF16;
  DType bias = DType::F32;  // U8: no bias
  bool bias_present = false;
  int64_t x_offset = 0;     // x a column slice at this offset of a wider matrix
  bool w_odd_address = false;
  bool specials = false;    // rows 1, 2, 3: NaN, infinity, zeros
  bool sampled = false;     // full size: the host replays 64 sampled rows
  bool timed = false;
};

inline uint64_t mix64(uint64_t z) { return kcheck::mix(z); }

// Whether two outputs are the same value: equal bits, or both NaN.
inline bool same(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  uint32_t ua, ub;
  std::memcpy(&ua, &a, 4);
  std::memcpy(&ub, &b, 4);
  return ua == ub;
}

inline void int8_case(kcheck::Env& e, const Int8Spec& s) {
  const int64_t width = s.k + s.x_offset;
  kcheck::admit(e, {s.m, width});
  kcheck::admit(e, {s.n, s.k});
  // x: normal values (f32, or their bf16 roundings), specials in rows 1-3.
  Tensor xh = host_tensor(DType::F32, {s.m, width});
  std::vector<float> v(size_t(s.m * width));
  kcheck::fill(v, ++e.seed, 1.0f);
  for (int64_t i = 0; i < s.m * width; ++i) {
    float f = s.x == DType::BF16 ? bf16_to_f32(f32_to_bf16(v[size_t(i)])) : v[size_t(i)];
    const int64_t r = i / width, c = i % width;
    if (s.specials && r == 1 && c == s.x_offset + s.k / 2) f = std::nanf("");
    if (s.specials && r == 2 && c == s.x_offset) f = -INFINITY;
    if (s.specials && r == 3) f = 0.0f;
    xh.ptr<float>()[i] = f;
  }
  Tensor xsrc = host_tensor(s.x, {s.m, width});
  for (int64_t i = 0; i < s.m * width; ++i) {
    if (s.x == DType::BF16) xsrc.ptr<uint16_t>()[i] = f32_to_bf16(xh.ptr<float>()[i]);
    else xsrc.ptr<float>()[i] = xh.ptr<float>()[i];
  }
  const Tensor xd_full = e.gpu.upload(xsrc);
  const Tensor xd = xd_full.slice_cols(s.x_offset, s.k);
  // The weight: bytes in [-128, 127] (a file's range), scales positive, the bias small.
  Tensor qw = host_tensor(DType::I8, {s.n, s.k});
  const uint64_t wseed = ++e.seed;
  for (int64_t i = 0; i < s.n * s.k; ++i) qw.ptr<int8_t>()[i] = int8_t(int(mix64(wseed * 0x9E3779B97F4A7C15ull + i) % 256) - 128);
  Tensor sw = host_tensor(DType::F32, {s.n, 1});
  const uint64_t sseed = ++e.seed;
  for (int64_t i = 0; i < s.n; ++i) sw.ptr<float>()[i] = kcheck::uniform(sseed, uint64_t(i), 1e-3f, 2e-2f);
  Tensor bh = host_tensor(DType::F32, {s.n});
  std::vector<float> bv(size_t(s.n));
  kcheck::fill(bv, ++e.seed, 0.5f);
  Tensor bsrc = host_tensor(s.bias == DType::BF16 ? DType::BF16 : DType::F32, {s.n});
  for (int64_t i = 0; i < s.n; ++i) {
    if (s.bias == DType::BF16) bsrc.ptr<uint16_t>()[i] = f32_to_bf16(bv[size_t(i)]);
    else bsrc.ptr<float>()[i] = bv[size_t(i)];
  }
  const Tensor bd = e.gpu.upload(bsrc);
  const Tensor* bias_d = s.bias_present ? &bd : nullptr;
  const Tensor* bias_h = s.bias_present ? &bsrc : nullptr;
  Tensor qwd;
  if (s.w_odd_address) {  // the weight one byte into its buffer: the GEMM's byte loads
    Tensor padded = host_tensor(DType::I8, {s.n * s.k + 1});
    std::memcpy(padded.ptr<int8_t>() + 1, qw.data, size_t(s.n * s.k));
    const Tensor buf = e.gpu.upload(padded);
    qwd = Tensor(static_cast<char*>(buf.data) + 1, DType::I8, {s.n, s.k}, Where::Device);
    qwd.owner = buf.owner;
  } else {
    qwd = e.gpu.upload(qw);
  }
  const Tensor swd = e.gpu.upload(sw);

  Tensor yd = kcheck::poisoned(e, s.y, {s.m, s.n});
  auto run = [&] { e.gpu.core().linear_int8(xd, qwd, swd, bias_d, s.group, yd); };
  run();
  const std::vector<float> all = kcheck::fetch(e, yd);
  // The host replay: every row, or the sampled rows (a row's output depends on that row alone).
  std::vector<int64_t> rows;
  if (s.sampled)
    for (int64_t i = 0; i < 64; ++i) rows.push_back(i == 63 ? s.m - 1 : std::min(s.m - 1, i * (s.m / 64) + i % 7));
  else
    for (int64_t r = 0; r < s.m; ++r) rows.push_back(r);
  Tensor xr = host_tensor(DType::F32, {int64_t(rows.size()), s.k});
  for (size_t i = 0; i < rows.size(); ++i)
    std::copy_n(xh.ptr<float>() + rows[i] * width + s.x_offset, s.k, xr.ptr<float>() + int64_t(i) * s.k);
  Tensor yh = host_tensor(DType::F32, {int64_t(rows.size()), s.n});
  e.host.core().linear_int8(xr, qw, sw, bias_h, s.group, yh);
  int64_t differ = 0, first = -1;
  for (size_t i = 0; i < rows.size(); ++i)
    for (int64_t c = 0; c < s.n; ++c) {
      float want = yh.ptr<float>()[int64_t(i) * s.n + c];
      if (s.y == DType::BF16) want = bf16_to_f32(f32_to_bf16(want));
      const float got = all[size_t(rows[i] * s.n + c)];
      if (!same(got, want)) {
        if (first < 0) {
          first = rows[i] * s.n + c;
          std::printf("  linear_int8: first difference at [%lld, %lld]: got %.9g, want %.9g\n", (long long)rows[i],
                      (long long)c, got, want);
        }
        ++differ;
      }
    }
  // Outside the checked rows, no element may keep the poison (a NaN where the input row is finite).
  if (s.sampled)
    for (size_t i = 0; i < all.size(); ++i)
      if (std::isnan(all[i])) {
        std::printf("  linear_int8: element [%lld, %lld] not written\n", (long long)(int64_t(i) / s.n),
                    (long long)(int64_t(i) % s.n));
        ++differ;
        break;
      }
  const double ms = s.timed ? kcheck::time_it(e, run) : 0;
  const double flops = 2.0 * double(s.m) * double(s.n) * double(s.k);
  const std::string shape = kcheck::shape_of({s.m, s.k, s.n}) + " g" + std::to_string(s.group) +
                            (s.x == DType::BF16 ? " x:bf16" : "") + (s.y == DType::BF16 ? " y:bf16" : "") +
                            (s.bias_present ? (s.bias == DType::BF16 ? " +b:bf16" : " +b:f32") : "") +
                            (s.x_offset ? " x:slice" : "") + (s.w_odd_address ? " w:odd" : "") +
                            (s.specials ? " nan/inf/0 rows" : "");
  e.table.row("linear_int8", shape, kcheck::Compare{double(differ), double(differ), true}, 0.0, ms, flops);
  if (s.timed) kcheck::record(e, "linear_int8", kcheck::shape_of({s.m, s.k, s.n}), ms, flops, 0);
}

inline void check_int8_linear(kcheck::Env& e) {
  const kcheck::Op<Int8Spec> op{"linear_int8", int8_case};
  constexpr DType F32 = DType::F32, BF16 = DType::BF16;
  const int64_t rows = 64 * 64 + 64, dim = 3072, ffn = 8192;  // the DiT at 1024x1024
  kcheck::run_cases(e, {
      op({4, 4, 5, 4, F32, F32}),                                   // the smallest group, one word of K (direct)
      op({11, 40, 13, 4, BF16, F32, F32, true}),                    // K not a multiple of 16: the direct kernel
      op({5, 64, 48, 16, F32, F32, F32, true}),                     // 4 groups of 16
      op({7, 48, 9, 16, BF16, F32, BF16, true}),                    // K not a multiple of 64 (a zero chunk)
      op({33, 192, 40, 64, BF16, BF16, BF16, true}),                // the tiny model's group, 3 groups
      op({17, 256, 23, 256, F32, BF16, F32, true}),                 // odd M and N tails, one group of 256
      op({130, 1024, 72, 256, BF16, BF16, F32, false, 3}),          // 4 groups; x a slice at an odd offset
      op({31, 384, 70, 64, BF16, F32, BF16, true, 0, true}),        // the weight at an odd address (direct, bytes)
      op({67, 512, 130, 256, BF16, BF16, BF16, true}),              // tiled: N past two 64-column tiles
      op({150, 256, 70, 64, F32, BF16, F32, true}),                 // tiled: M past a 128-row tile
      op({9, 256, 33, 64, F32, F32, F32, true, 0, false, true}),    // NaN, infinity and zero rows
      op({6, 1024, 17, 1024, BF16, BF16, BF16, true}),              // the largest group the kernels take
      // The wgmma kernel (NVIDIA native): its tails and store paths.
      op({200, 512, 264, 64, BF16, F32, F32, true}),                // f32 y via the copy engine; M, N past a tile
      op({70, 400, 300, 16, BF16, BF16, BF16, true}),               // K ends 16 bytes into a step; y from registers
      op({130, 640, 296, 64, F32, BF16, F32, false}),               // no bias; bf16 y via the copy engine
      op({9, 512, 40, 64, F32, F32, F32, true, 0, false, true}),    // NaN, infinity and zero rows
      op({rows, dim, 3 * dim, 256, BF16, BF16, BF16, true, 0, false, false, true, true}),  // qkv
      op({rows, dim, dim, 256, BF16, BF16, BF16, true, 0, false, false, true, true}),      // o
      op({rows, dim, 2 * ffn, 256, BF16, BF16, BF16, true, 0, false, false, true, true}),  // ffn_up_gate
      op({rows, ffn, dim, 256, BF16, BF16, BF16, true, 0, false, false, true, true}),      // ffn_down
  });
}

}  // namespace int8_check
