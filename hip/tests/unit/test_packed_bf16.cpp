#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tensor/packed_bf16.h"
#include "tensor/tensor.h"

using namespace moss;

namespace {

// Weights as a trained matrix holds them: normal values of a small spread, in bf16.
std::vector<uint16_t> weights(int64_t n, float sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<uint16_t> v(static_cast<size_t>(n));
  for (uint16_t& x : v) x = f32_to_bf16(d(rng));
  return v;
}

std::vector<uint16_t> round_trip(const std::vector<uint16_t>& v, PackedBf16* layout_out = nullptr) {
  const PackedBf16 layout = plan_bf16_packing(v.data(), int64_t(v.size()));
  std::vector<uint8_t> packed(layout.bytes(), 0xAB);
  pack_bf16(v.data(), layout, packed.data());
  std::vector<uint16_t> out(v.size(), 0x7FC1);
  unpack_bf16_reference(layout, packed.data(), out.data());
  if (layout_out) *layout_out = layout;
  return out;
}

}  // namespace

TEST(PackedBf16, WeightsComeBackBitForBitInThreeQuartersOfTheBytes) {
  const std::vector<uint16_t> v = weights(3 * 256 * 40, 0.02f, 1);
  PackedBf16 layout;
  EXPECT_EQ(round_trip(v, &layout), v);
  EXPECT_LT(layout.exceptions, int64_t(v.size()) / 1000);  // values 2^14 below a chunk's largest: rare
  EXPECT_LT(double(layout.bytes()), 0.76 * double(v.size() * 2));
}

TEST(PackedBf16, EveryKindOfValueComesBack) {
  // Zeros of both signs, subnormals, infinities, NaNs, the extremes, and values far below their
  // chunk's largest (escaped) beside ones just within reach (offset 14), in chunks of every base.
  std::vector<uint16_t> v = weights(2048, 1.0f, 2);
  const uint16_t specials[] = {0x0000, 0x8000, 0x0001, 0x807F, 0x7F80, 0xFF80, 0x7FC0, 0xFFFF, 0x7F7F, 0xFF7F, 0x0080};
  for (size_t i = 0; i < v.size(); i += 37) v[i] = specials[(i / 37) % std::size(specials)];
  // Chunk 3: largest exponent 140; one value at 126 (offset 14, kept) and one at 125 (escaped).
  for (int64_t i = 3 * 256; i < 4 * 256; ++i) v[size_t(i)] = uint16_t(130 << 7 | (i & 0x7F));
  v[3 * 256 + 5] = uint16_t(140 << 7);
  v[3 * 256 + 6] = uint16_t(0x8000 | 126 << 7 | 3);
  v[3 * 256 + 7] = uint16_t(125 << 7 | 9);
  // Chunk 5 holds nothing finite.
  for (int64_t i = 5 * 256; i < 6 * 256; ++i) v[size_t(i)] = 0x7FC0;
  PackedBf16 layout;
  EXPECT_EQ(round_trip(v, &layout), v);
  int64_t escaped_in_chunk_3 = 0;
  const std::vector<uint8_t> packed = [&] {
    std::vector<uint8_t> p(layout.bytes());
    pack_bf16(v.data(), layout, p.data());
    return p;
  }();
  for (int64_t i = 3 * 256; i < 4 * 256; ++i)
    escaped_in_chunk_3 += (packed[layout.offsets_at() + size_t(i) / 2] >> (i % 2 ? 4 : 0) & 0xF) == PackedBf16::kEscape;
  EXPECT_EQ(packed[layout.bases_at() + 3], 140);
  EXPECT_EQ(escaped_in_chunk_3, 1);  // the value at 125
}

TEST(PackedBf16, TheLayoutKeepsItsSectionsAligned) {
  const std::vector<uint16_t> v = weights(8 * 1001, 0.05f, 3);  // not a whole number of chunks
  PackedBf16 layout;
  EXPECT_EQ(round_trip(v, &layout), v);
  EXPECT_EQ(layout.chunks(), (8 * 1001 + 255) / 256);
  for (size_t at : {layout.offsets_at(), layout.bases_at(), layout.exception_indices_at(), layout.exception_values_at(),
                    layout.bytes()})
    EXPECT_EQ(at % 16, 0u);
}

TEST(PackedBf16, RefusesCountsItCannotUnpack) {
  const std::vector<uint16_t> v(12, 0x3F80);
  EXPECT_THROW(plan_bf16_packing(v.data(), 12), std::invalid_argument);
  EXPECT_THROW(plan_bf16_packing(v.data(), 0), std::invalid_argument);
  EXPECT_FALSE(packable_bf16_count(12));
  EXPECT_TRUE(packable_bf16_count(16));
}

TEST(PackedBf16, APackingOfOtherValuesIsRefused) {
  std::vector<uint16_t> v = weights(512, 0.02f, 4);
  const PackedBf16 layout = plan_bf16_packing(v.data(), 512);
  v[7] = 0;  // one more exception than planned
  std::vector<uint8_t> packed(layout.bytes() + 64);
  EXPECT_THROW(pack_bf16(v.data(), layout, packed.data()), std::logic_error);
}
