// Tensor: a non-owning view (pointer, dtype, shape, strides, where the data lives) plus an
// optional shared owner that keeps the storage alive (a host vector, a device buffer, or the
// mmap of a safetensors file). Ops take views; nothing here allocates device memory.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace moss {

enum class DType : uint8_t { F32, BF16, F16, F64, I32, I64, U8, I8, BOOL, Unknown };
enum class Where : uint8_t { Host, Device };

size_t dtype_size(DType t);
const char* dtype_name(DType t);       // safetensors spelling: "F32", "BF16", ...
DType dtype_from_name(const std::string& s);  // Unknown when not recognised

// bf16 <-> f32: round to nearest even, NaN kept quiet (as torch does).
inline float bf16_to_f32(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
inline float round_bf16(float f) { return bf16_to_f32(f32_to_bf16(f)); }

constexpr int kMaxRank = 4;

struct Tensor {
  void* data = nullptr;
  DType dtype = DType::F32;
  Where where = Where::Host;
  int rank = 0;
  int64_t shape[kMaxRank] = {1, 1, 1, 1};
  int64_t stride[kMaxRank] = {0, 0, 0, 0};  // in elements
  std::shared_ptr<void> owner;              // keeps the storage alive; may be null for views

  Tensor() = default;
  Tensor(void* d, DType t, std::initializer_list<int64_t> dims, Where w = Where::Host);
  Tensor(void* d, DType t, const std::vector<int64_t>& dims, Where w = Where::Host);

  int64_t numel() const;
  size_t nbytes() const { return size_t(numel()) * dtype_size(dtype); }
  bool contiguous() const;
  // A 2-D reading: rows = product of all but the last dim, cols = last dim.
  int64_t cols() const { return rank ? shape[rank - 1] : 1; }
  int64_t rows() const { return rank ? numel() / cols() : 1; }
  int64_t row_stride() const { return rank >= 2 ? stride[rank - 2] : cols(); }
  std::vector<int64_t> dims() const { return std::vector<int64_t>(shape, shape + rank); }
  std::string shape_str() const;

  template <class T> T* ptr() const { return static_cast<T*>(data); }
  template <class T> T* row(int64_t r) const { return static_cast<T*>(data) + r * row_stride(); }

  // Views (share the owner). Rows/cols slices keep the row stride.
  Tensor slice_rows(int64_t r0, int64_t n) const;   // rank-2 reading
  Tensor slice_cols(int64_t c0, int64_t n) const;   // rank-2 reading, row stride kept
  Tensor reshape(std::initializer_list<int64_t> dims) const;  // contiguous only
  Tensor reshape(const std::vector<int64_t>& dims) const;
};

// Host tensor with its own zero-filled storage.
Tensor host_tensor(DType t, std::initializer_list<int64_t> dims);
Tensor host_tensor(DType t, const std::vector<int64_t>& dims);
// Host fp32 copy of any host tensor (bf16/f16/f32/f64 converted; strides honoured).
std::vector<float> to_f32_vector(const Tensor& t);

}  // namespace moss
