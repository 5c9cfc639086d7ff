#include "util/sha256.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>
#include <algorithm>
#include <cerrno>

#include "util/error.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MOSS_SHA256_X86 1
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace moss {
namespace {

const uint32_t kK[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

// FIPS 180-4's compression of one block, as the standard writes it.
void block_portable(uint32_t* h_, const uint8_t* p) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i)
    w[i] = uint32_t(p[4 * i]) << 24 | uint32_t(p[4 * i + 1]) << 16 | uint32_t(p[4 * i + 2]) << 8 | p[4 * i + 3];
  for (int i = 16; i < 64; ++i) {
    const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
  for (int i = 0; i < 64; ++i) {
    const uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kK[i] + w[i];
    const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
  }
  h_[0] += a, h_[1] += b, h_[2] += c, h_[3] += d, h_[4] += e, h_[5] += f, h_[6] += g, h_[7] += h;
}

#ifdef MOSS_SHA256_X86
// The same compression on the SHA extensions. sha256rnds2 runs two rounds on the state split as
// {A,B,E,F} and {C,D,G,H} (lanes high to low) with two message words plus constants in its low
// lanes; sha256msg1/msg2 extend the schedule four words at a time:
//   W[g] = msg2(msg1(W[g-4], W[g-3]) + (W[g-2], W[g-1] shifted by one word), W[g-1])
// (W[g]: words 4g..4g+3; msg1 adds sigma0 of w[t-15] to w[t-16], the shift gives w[t-7], msg2 adds
// sigma1 of w[t-2]).
__attribute__((target("sha,ssse3,sse4.1"))) void blocks_sha_ni(uint32_t* h, const uint8_t* p, size_t count) {
  const __m128i big_endian = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
  // {A,B,C,D},{E,F,G,H} (lane 0 first) to {A,B,E,F},{C,D,G,H} (lane 3 first).
  __m128i abcd = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h));
  __m128i efgh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h + 4));
  const __m128i badc = _mm_shuffle_epi32(abcd, 0xB1);
  const __m128i hgfe = _mm_shuffle_epi32(efgh, 0x1B);
  __m128i abef = _mm_alignr_epi8(badc, hgfe, 8);
  __m128i cdgh = _mm_blend_epi16(hgfe, badc, 0xF0);
  for (; count > 0; --count, p += 64) {
    const __m128i abef_in = abef, cdgh_in = cdgh;
    __m128i w[4];
    for (int g = 0; g < 16; ++g) {
      __m128i& wg = w[g & 3];
      if (g < 4) {
        wg = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * g)), big_endian);
      } else {
        const __m128i w7 = _mm_alignr_epi8(w[(g - 1) & 3], w[(g - 2) & 3], 4);
        wg = _mm_sha256msg2_epu32(_mm_add_epi32(_mm_sha256msg1_epu32(wg, w[(g - 3) & 3]), w7), w[(g - 1) & 3]);
      }
      const __m128i wk = _mm_add_epi32(wg, _mm_loadu_si128(reinterpret_cast<const __m128i*>(kK + 4 * g)));
      // Rounds 4g and 4g+1 leave the new {A,B,E,F} in cdgh while the old one is the new {C,D,G,H};
      // rounds 4g+2 and 4g+3 (the upper two words) turn it back, each register under its name.
      cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
      abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0E));
    }
    abef = _mm_add_epi32(abef, abef_in);
    cdgh = _mm_add_epi32(cdgh, cdgh_in);
  }
  const __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
  const __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
  abcd = _mm_blend_epi16(feba, dchg, 0xF0);
  efgh = _mm_alignr_epi8(dchg, feba, 8);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h), abcd);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h + 4), efgh);
}
#endif

}  // namespace

bool Sha256::accelerated_available() {
#ifdef MOSS_SHA256_X86
  static const bool yes = [] {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
    const bool ssse3 = c & (1u << 9), sse41 = c & (1u << 19);
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    return ssse3 && sse41 && (b & (1u << 29));
  }();
  return yes;
#else
  return false;
#endif
}

Sha256::Sha256(Path path)
    : h_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19},
      accelerated_(path == Path::Fastest && accelerated_available()) {}

void Sha256::blocks(const uint8_t* p, size_t count) {
#ifdef MOSS_SHA256_X86
  if (accelerated_) return blocks_sha_ni(h_, p, count);
#endif
  for (; count > 0; --count, p += 64) block_portable(h_, p);
}

void Sha256::update(const void* data, size_t size) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  total_ += size;
  while (size > 0) {
    if (used_ == 0 && size >= 64) {
      const size_t whole = size / 64;
      blocks(p, whole);
      p += 64 * whole, size -= 64 * whole;
      continue;
    }
    const size_t n = std::min(size, 64 - used_);
    std::memcpy(buf_ + used_, p, n);
    used_ += n, p += n, size -= n;
    if (used_ == 64) blocks(buf_, 1), used_ = 0;
  }
}

std::string Sha256::hex() {
  const uint64_t bits = total_ * 8;
  const uint8_t one = 0x80, zero = 0;
  update(&one, 1);
  while (used_ != 56) update(&zero, 1);
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = uint8_t(bits >> (56 - 8 * i));
  update(len, 8);
  std::string out;
  char b[9];
  for (uint32_t v : h_) {
    std::snprintf(b, sizeof b, "%08x", v);
    out += b;
  }
  return out;
}

std::string sha256_file_hex(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw failure(path + ": cannot read: " + std::strerror(errno));
  Sha256 h;
  std::vector<char> buf(size_t(1) << 20);
  for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0;) h.update(buf.data(), n);
  if (std::ferror(f.get())) throw failure(path + ": read error");
  return h.hex();
}

}  // namespace moss
