// Host checks of kernels/gemm_layout.h, the shared-memory layout and ldmatrix lane maps of the
// NVIDIA GEMM kernel (GemmKernel::Mma), since no GPU runs here:
//   - the swizzle is a bijection of each row's chunks and leaves no bank conflict in any ldmatrix
//     phase or in the loaders' 16-byte stores (cp.async and converted chunks);
//   - a 16x16 A block and a 16x16 weight block, written into swizzled stages byte by byte, read
//     back through models of ldmatrix.x4 and mma.sync m16n8k16 written from the PTX ISA (not from
//     the project's headers), give A·Bᵀ exactly, at every row block and k16 step of a stage;
//   - the same models reject a wrong map (the test is sharp).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/gemm_layout.h"
#include "tensor/tensor.h"

namespace {

namespace gl = moss::gemm_layout;
using gl::RowChunk;
using SourceFn = RowChunk (*)(int lane);

constexpr int kLanes = 32;

// ---- swizzle ------------------------------------------------------------------------------------
TEST(GemmLayout, SwizzleIsABijectionOfEachRow) {
  for (int bk : {32, 64}) {
    const int cpr = gl::chunks_per_row(bk);
    for (int row = 0; row < 64; ++row) {
      std::vector<int> hits(size_t(cpr), 0);
      for (int c = 0; c < cpr; ++c) {
        const int off = gl::chunk_offset(row, c, bk);
        ASSERT_EQ(off / (bk * 2), row) << "chunk leaves its row";
        ASSERT_EQ(off % gl::kChunkBytes, 0);
        ++hits[size_t((off % (bk * 2)) / gl::kChunkBytes)];
      }
      for (int h : hits) EXPECT_EQ(h, 1) << "bk " << bk << " row " << row;
    }
  }
}

int bank_group(int byte_offset) { return (byte_offset / gl::kChunkBytes) % gl::kBankGroups; }

TEST(GemmLayout, LdmatrixPhasesAreConflictFree) {
  for (int bk : {32, 64})
    for (SourceFn source : {SourceFn(gl::a_source), SourceFn(gl::b_source)})
      for (int row0 = 0; row0 < 256; row0 += 16)
        for (int ks = 0; ks < bk / 16; ++ks)
          for (int q = 0; q < 4; ++q) {
            std::array<int, gl::kBankGroups> used{};
            for (int l = 8 * q; l < 8 * q + 8; ++l) {
              const RowChunk rc = source(l);
              ++used[size_t(bank_group(gl::chunk_offset(row0 + rc.row, 2 * ks + rc.chunk, bk)))];
            }
            for (int u : used) ASSERT_EQ(u, 1) << "bk " << bk << " row0 " << row0 << " ks " << ks << " q " << q;
          }
}

// The loaders: thread t stores chunk (t % cpr) of row t / cpr (+ passes); a warp's 32 16-byte
// stores take the minimum 4 shared-memory wavefronts when every bank group gets 4 of them.
TEST(GemmLayout, LoaderStoresAreConflictFree) {
  for (int bk : {32, 64}) {
    const int cpr = gl::chunks_per_row(bk);
    for (int warp = 0; warp < 8; ++warp) {
      std::array<int, gl::kBankGroups> used{};
      for (int lane = 0; lane < kLanes; ++lane) {
        const int t = warp * kLanes + lane;
        ++used[size_t(bank_group(gl::chunk_offset(t / cpr, t % cpr, bk)))];
      }
      for (int u : used) EXPECT_EQ(u, kLanes / gl::kBankGroups) << "bk " << bk << " warp " << warp;
    }
  }
}

// ---- models of the instructions (PTX ISA) --------------------------------------------------------
using Stage = std::vector<uint8_t>;

uint16_t read_b16(const Stage& s, int byte) {
  uint16_t v;
  std::memcpy(&v, &s[size_t(byte)], 2);
  return v;
}

// ldmatrix.sync.aligned.m8n8.x4.shared.b16: lanes 8q..8q+7 address rows 0..7 of matrix q; lane l
// receives in register q row l/4, elements 2(l%4) (bits 15:0) and 2(l%4)+1 (bits 31:16).
std::array<std::array<uint32_t, 4>, kLanes> ldmatrix_x4(const Stage& s, const std::array<int, kLanes>& address) {
  std::array<std::array<uint32_t, 4>, kLanes> r{};
  for (int l = 0; l < kLanes; ++l)
    for (int q = 0; q < 4; ++q) {
      const int row = address[size_t(8 * q + l / 4)];
      const int e = 2 * (l % 4);
      r[size_t(l)][size_t(q)] = uint32_t(read_b16(s, row + 2 * e)) | (uint32_t(read_b16(s, row + 2 * e + 2)) << 16);
    }
  return r;
}

float bf16_half(uint32_t reg, int h) { return moss::bf16_to_f32(uint16_t(h ? reg >> 16 : reg & 0xffffu)); }

// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32, g = l / 4, t = l % 4:
//   A regs: {a0,a1} (g, 2t..)  {a2,a3} (g+8, 2t..)  {a4,a5} (g, 2t+8..)  {a6,a7} (g+8, 2t+8..)
//   B regs: {b0,b1} (k 2t.., n g)  {b2,b3} (k 2t+8.., n g)
//   C: c0,c1 (g, 2t..)  c2,c3 (g+8, 2t..)
// Returns C[16][8] = A·B.
std::array<std::array<double, 8>, 16> mma_16816(const std::array<std::array<uint32_t, 4>, kLanes>& a,
                                                const std::array<std::array<uint32_t, 2>, kLanes>& b) {
  double A[16][16] = {}, B[16][8] = {};
  for (int l = 0; l < kLanes; ++l) {
    const int g = l / 4, t = l % 4;
    for (int r = 0; r < 4; ++r)
      for (int h = 0; h < 2; ++h) A[g + 8 * (r % 2)][2 * t + 8 * (r / 2) + h] = bf16_half(a[size_t(l)][size_t(r)], h);
    for (int r = 0; r < 2; ++r)
      for (int h = 0; h < 2; ++h) B[2 * t + 8 * r + h][g] = bf16_half(b[size_t(l)][size_t(r)], h);
  }
  std::array<std::array<double, 8>, 16> c{};
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n)
      for (int k = 0; k < 16; ++k) c[size_t(m)][size_t(n)] += A[m][k] * B[k][n];
  return c;
}

// A [rows][bk] and Bt [rows][bk] (bf16 bits) written into stages through chunk_offset; the 16x16
// blocks at row0 / k16 step ks read with the kernel's maps, multiplied, and the C elements placed
// through c_element; compared with the direct product.
struct Product {
  double max_error = 0;
};
Product run_block(int bk, int row0, int ks, SourceFn a_map, SourceFn b_map, std::mt19937& rng) {
  const int rows = 64;
  std::uniform_int_distribution<int> small(-8, 8);
  std::vector<uint16_t> a(size_t(rows * bk)), bt(size_t(rows * bk));
  for (auto& v : a) v = moss::f32_to_bf16(float(small(rng)) / 4);
  for (auto& v : bt) v = moss::f32_to_bf16(float(small(rng)) / 4);
  Stage sa(size_t(rows * bk * 2)), sb(size_t(rows * bk * 2));
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < bk / gl::kChunkElems; ++c) {
      std::memcpy(&sa[size_t(gl::chunk_offset(r, c, bk))], &a[size_t(r * bk + 8 * c)], 16);
      std::memcpy(&sb[size_t(gl::chunk_offset(r, c, bk))], &bt[size_t(r * bk + 8 * c)], 16);
    }
  std::array<int, kLanes> a_addr{}, b_addr{};
  for (int l = 0; l < kLanes; ++l) {
    const RowChunk ra = a_map(l), rb = b_map(l);
    a_addr[size_t(l)] = gl::chunk_offset(row0 + ra.row, 2 * ks + ra.chunk, bk);
    b_addr[size_t(l)] = gl::chunk_offset(row0 + rb.row, 2 * ks + rb.chunk, bk);
  }
  const auto fa = ldmatrix_x4(sa, a_addr);
  const auto fb = ldmatrix_x4(sb, b_addr);
  Product p;
  for (int j = 0; j < 2; ++j) {  // n8 tile j: registers 2j, 2j+1 of the B ldmatrix
    std::array<std::array<uint32_t, 2>, kLanes> b{};
    for (int l = 0; l < kLanes; ++l) b[size_t(l)] = {fb[size_t(l)][size_t(2 * j)], fb[size_t(l)][size_t(2 * j + 1)]};
    const auto c = mma_16816(fa, b);
    for (int l = 0; l < kLanes; ++l)
      for (int e = 0; e < 4; ++e) {
        const moss::mma_layout::Elem el = gl::c_element(l, e);
        // the lane's accumulator e, placed where the kernel's epilogue puts it
        const double got = c[size_t(l / 4 + 8 * (e / 2))][size_t(2 * (l % 4) + e % 2)];
        const int m = row0 + el.row, n = row0 + 8 * j + el.col;
        double want = 0;
        for (int k = 16 * ks; k < 16 * ks + 16; ++k)
          want += double(moss::bf16_to_f32(a[size_t(m * bk + k)])) * double(moss::bf16_to_f32(bt[size_t(n * bk + k)]));
        p.max_error = std::max(p.max_error, std::abs(got - want));
      }
  }
  return p;
}

TEST(GemmLayout, LdmatrixFragmentsMultiplyExactly) {
  std::mt19937 rng(7);
  for (int bk : {32, 64})
    for (int row0 = 0; row0 < 64; row0 += 16)
      for (int ks = 0; ks < bk / 16; ++ks)
        EXPECT_EQ(run_block(bk, row0, ks, gl::a_source, gl::b_source, rng).max_error, 0.0)
            << "bk " << bk << " row0 " << row0 << " ks " << ks;
}

// Sharpness: swapping the k halves of A, or reading B's matrices in A's order, is caught.
RowChunk a_k_swapped(int lane) { return {lane % 16, 1 - lane / 16}; }
RowChunk b_in_a_order(int lane) { return gl::a_source(lane); }
// The Wgmma kernel's stages with int8 operands (kernels/gemm_wgmma_int8.h): wgmma's s8 k32 reads,
// 32 bytes a step as bf16's k16, land on what the copy engine wrote (128 int8 a box row), for the
// consumers' A blocks and the B block of every stage; and the check is sharp: int8 bytes read at
// the bf16 model's offsets (2 bytes an element) miss them.
TEST(GemmLayout, WgmmaInt8ReadsTheCopyEnginesBoxes) {
  namespace sw = gl::sw128;
  constexpr uint32_t kStageBytes = 49152, kStageA = 16384;
  for (uint32_t s = 0; s < 4; ++s) {
    EXPECT_TRUE(sw::wgmma_reads_tma_layout(s * kStageBytes, 0, 64, 1)) << "stage " << s;
    EXPECT_TRUE(sw::wgmma_reads_tma_layout(s * kStageBytes, 64, 64, 1)) << "stage " << s;
    EXPECT_TRUE(sw::wgmma_reads_tma_layout(s * kStageBytes + kStageA, 0, 256, 1)) << "stage " << s;
  }
  int misses = 0;
  for (int kk = 0; kk < 4; ++kk)
    for (int row = 0; row < 64; ++row)
      for (int k = 0; k < 32; ++k)
        misses += sw::wgmma_address(sw::step_descriptor(0, 0, kk), row, k, 2) != sw::tma_address(0, row, 32 * kk + k, 1);
  EXPECT_GT(misses, 0);
}

TEST(GemmLayout, ModelsRejectWrongMaps) {
  std::mt19937 rng(11);
  EXPECT_GT(run_block(32, 16, 1, a_k_swapped, gl::b_source, rng).max_error, 0.0);
  EXPECT_GT(run_block(64, 0, 2, gl::a_source, b_in_a_order, rng).max_error, 0.0);
}

}  // namespace
