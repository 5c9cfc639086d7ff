// The int8 QKᵀ attention's key quantization kernels' own source (kernels/attention_int8_keys.hip:
// the channel means in key order, then one workgroup of 8 waves per 32-key block of one head) run
// on the host through the device emulation of tests/emulation/runtime/portability.h (workgroups
// as host threads with real barriers and lane exchanges), against the host op
// (CoreOps::quantize_keys of the host backend): the int8 keys and the block scales must be the
// same bits, as on a GPU (`moss-check kernels --filter int8_attention`). Cases: Tk not a multiple
// of 32 or 64 (partial blocks, blocks of no key), one key, head dims 32, 64, 128, f32 and bf16
// keys at a row stride wider than the heads (a column slice), keys with a channel offset (what the
// smoothing removes), a NaN and an infinity in one head. Rows past Tk must be zeros whatever the
// buffer held before. While the host backend has no int8 QKᵀ attention, the comparison is skipped
// (the kernel's own checks still run).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/portability.h"  // the emulation: tests/emulation comes first on the include path
#include "same_bits.h"

#include "kernels/attention_int8_keys.hip"
#include "ops/backend.h"
#include "ops/core_ops.h"
#include "tensor/tensor.h"

namespace {

using namespace moss;

struct Case {
  int64_t tk, heads, head_dim;
  bool bf16;
  bool specials;
};

std::string name(const Case& c) {
  return "Tk " + std::to_string(c.tk) + " " + std::to_string(c.heads) + "x" + std::to_string(c.head_dim) +
         (c.bf16 ? " bf16" : " f32") + (c.specials ? " nan/inf" : "");
}

// Returns false (after its checks) when the host op refuses: a backend without the op.
bool run_case(const Case& c, uint64_t seed) {
  SCOPED_TRACE(name(c));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t width = c.heads * c.head_dim, ld = width + 8, pad = CoreOps::transposed_v_keys(c.tk);
  const int64_t blocks = c.heads * pad / kAttentionInt8KeyBlock;
  // The keys as the kernel reads them (rows of ld, f32 or bf16 bits) and as the host op's f32.
  std::vector<float> offset(static_cast<size_t>(width)), kv(static_cast<size_t>(c.tk * ld));
  for (float& f : offset) f = 3.0f * normal(rng);
  for (int64_t i = 0; i < c.tk * ld; ++i) {
    const float f = normal(rng) + offset[size_t(i % ld % width)];
    kv[size_t(i)] = c.bf16 ? bf16_to_f32(f32_to_bf16(f)) : f;
  }
  if (c.specials) {
    kv[size_t((c.tk / 2) * ld + 1)] = std::nanf("");                          // head 0
    kv[size_t((c.tk - 1) * ld + width - 1)] = -INFINITY;                       // the last head
  }
  std::vector<uint16_t> kb(kv.size());
  for (size_t i = 0; i < kv.size(); ++i) kb[i] = f32_to_bf16(kv[i]);
  Tensor kh = host_tensor(DType::F32, {c.tk, width});
  for (int64_t r = 0; r < c.tk; ++r) std::memcpy(kh.row<float>(r), &kv[size_t(r * ld)], size_t(width) * 4);

  // The kernels, as HipBackend::do_quantize_keys calls them, into buffers of 0x55 bytes.
  std::vector<float> means(static_cast<size_t>(width));
  std::vector<int8_t> q(static_cast<size_t>(c.heads * pad * c.head_dim), int8_t(0x55));
  std::vector<float> scale(static_cast<size_t>(blocks), -1.0f);
  attention_quantize_keys(c.bf16 ? static_cast<const void*>(kb.data()) : kv.data(), ld, c.bf16, int(c.tk),
                          int(c.heads), int(c.head_dim), int(pad), means.data(), q.data(), scale.data(), nullptr);
  int64_t tail = 0, unset = 0;
  for (int64_t h = 0; h < c.heads; ++h)
    for (int64_t j = c.tk; j < pad; ++j)
      for (int64_t d = 0; d < c.head_dim; ++d) tail += q[size_t((h * pad + j) * c.head_dim + d)] != 0;
  for (float s : scale) unset += s == -1.0f;
  EXPECT_EQ(tail, 0) << "int8 keys past Tk";
  EXPECT_EQ(unset, 0) << "block scales not written";

  std::unique_ptr<Backend> host = make_host_backend();
  CoreOps::QuantizedKeys want{host_tensor(DType::I8, {c.heads * pad, c.head_dim}), host_tensor(DType::F32, {blocks, 1}),
                              c.tk};
  try {
    host->core().quantize_keys(kh, c.heads, c.head_dim, want);
  } catch (const std::exception& e) {
    if (std::string(e.what()).find("no int8 QK^T attention") != std::string::npos) return false;
    throw;
  }
  int64_t differ = 0;
  for (size_t i = 0; i < q.size(); ++i)
    if (q[i] != want.q.ptr<int8_t>()[i] && differ++ == 0)
      ADD_FAILURE() << "q[" << i << "] " << int(q[i]) << ", host " << int(want.q.ptr<int8_t>()[i]);
  for (int64_t b = 0; b < blocks; ++b)
    if (!same_bits(scale[size_t(b)], want.scale.ptr<float>()[b]) && differ++ == 0)
      ADD_FAILURE() << "scale[" << b << "] " << scale[size_t(b)] << ", host " << want.scale.ptr<float>()[b];
  EXPECT_EQ(differ, 0);
  return true;
}

TEST(AttentionInt8KeysEmulated, BitIdenticalToTheHostOp) {
  const Case cases[] = {
      {1, 3, 32, false, false},   {77, 4, 32, false, false}, {100, 2, 128, true, false}, {33, 4, 64, true, false},
      {130, 2, 64, false, true},  {64, 2, 128, true, true},  {200, 3, 32, true, false},
  };
  uint64_t seed = 4901;
  bool compared = true;
  for (const Case& c : cases) compared = run_case(c, seed++) && compared;
  if (!compared) GTEST_SKIP() << "the host backend has no int8 QK^T attention: the kernels' own checks ran, "
                                 "the comparison with the host op did not";
}

}  // namespace
