#include "tensor/tensor.h"

#include <sstream>

namespace moss {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F64: case DType::I64: return 8;
    case DType::F32: case DType::I32: return 4;
    case DType::BF16: case DType::F16: return 2;
    case DType::U8: case DType::I8: case DType::BOOL: return 1;
    default: return 0;
  }
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::BF16: return "BF16";
    case DType::F16: return "F16";
    case DType::F64: return "F64";
    case DType::I32: return "I32";
    case DType::I64: return "I64";
    case DType::U8: return "U8";
    case DType::I8: return "I8";
    case DType::BOOL: return "BOOL";
    default: return "unknown";
  }
}

DType dtype_from_name(const std::string& s) {
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::F64, DType::I32, DType::I64, DType::U8,
                  DType::I8, DType::BOOL})
    if (s == dtype_name(t)) return t;
  return DType::Unknown;
}

static void set_dims(Tensor& t, const int64_t* d, size_t n) {
  if (n > size_t(kMaxRank)) throw std::invalid_argument("tensor rank above 4");
  t.rank = int(n);
  int64_t s = 1;
  for (int i = int(n) - 1; i >= 0; --i) {
    if (d[i] < 0) throw std::invalid_argument("negative tensor dimension");
    t.shape[i] = d[i];
    t.stride[i] = s;
    s *= d[i];
  }
}

Tensor::Tensor(void* d, DType t, std::initializer_list<int64_t> dims, Where w) : data(d), dtype(t), where(w) {
  set_dims(*this, dims.begin(), dims.size());
}
Tensor::Tensor(void* d, DType t, const std::vector<int64_t>& dims, Where w) : data(d), dtype(t), where(w) {
  set_dims(*this, dims.data(), dims.size());
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= shape[i];
  return n;
}

bool Tensor::contiguous() const {
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; --i) {
    if (shape[i] != 1 && stride[i] != s) return false;
    s *= shape[i];
  }
  return true;
}

std::string Tensor::shape_str() const {
  std::ostringstream o;
  o << '[';
  for (int i = 0; i < rank; ++i) o << (i ? ", " : "") << shape[i];
  o << ']';
  return o.str();
}

// The rows x cols block of t's rank-2 reading that starts at (r0, c0): a rank-2 view with t's
// row stride, both slices' one shape.
static Tensor block_view(const Tensor& t, int64_t r0, int64_t c0, int64_t rows, int64_t cols) {
  Tensor v = t;
  const int64_t rs = t.row_stride();
  v.rank = 2;
  v.shape[0] = rows; v.shape[1] = cols;
  v.stride[0] = rs; v.stride[1] = 1;
  v.data = static_cast<char*>(t.data) + size_t(r0 * rs + c0) * dtype_size(t.dtype);
  return v;
}

Tensor Tensor::slice_rows(int64_t r0, int64_t n) const {
  if (r0 < 0 || n < 0 || r0 + n > rows()) throw std::out_of_range("slice_rows out of range");
  return block_view(*this, r0, 0, n, cols());
}

Tensor Tensor::slice_cols(int64_t c0, int64_t n) const {
  if (c0 < 0 || n < 0 || c0 + n > cols()) throw std::out_of_range("slice_cols out of range");
  return block_view(*this, 0, c0, rows(), n);
}

Tensor Tensor::reshape(std::initializer_list<int64_t> dims) const {
  return reshape(std::vector<int64_t>(dims));
}

Tensor Tensor::reshape(const std::vector<int64_t>& dims) const {
  if (!contiguous()) throw std::invalid_argument("reshape of a non-contiguous tensor");
  Tensor v = *this;
  set_dims(v, dims.data(), dims.size());
  if (v.numel() != numel()) throw std::invalid_argument("reshape changes the element count");
  return v;
}

Tensor host_tensor(DType t, const std::vector<int64_t>& dims) {
  Tensor tmp(nullptr, t, dims);
  size_t bytes = tmp.nbytes();
  auto store = std::shared_ptr<char>(new char[bytes ? bytes : 1](), std::default_delete<char[]>());
  tmp.data = store.get();
  tmp.owner = store;
  return tmp;
}

Tensor host_tensor(DType t, std::initializer_list<int64_t> dims) {
  return host_tensor(t, std::vector<int64_t>(dims));
}

static float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, u;
  if (exp == 0) {
    if (man == 0) {
      u = sign;
    } else {  // subnormal
      exp = 127 - 15 + 1;
      while (!(man & 0x400)) { man <<= 1; --exp; }
      man &= 0x3ff;
      u = sign | (exp << 23) | (man << 13);
    }
  } else if (exp == 31) {
    u = sign | 0x7f800000u | (man << 13);
  } else {
    u = sign | ((exp - 15 + 127) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::vector<float> to_f32_vector(const Tensor& t) {
  if (t.where != Where::Host) throw std::invalid_argument("to_f32_vector needs a host tensor");
  std::vector<float> out(size_t(t.numel()));
  int64_t idx[kMaxRank] = {0, 0, 0, 0};
  const char* base = static_cast<const char*>(t.data);
  size_t es = dtype_size(t.dtype);
  for (size_t n = 0; n < out.size(); ++n) {
    int64_t off = 0;
    for (int i = 0; i < t.rank; ++i) off += idx[i] * t.stride[i];
    const char* p = base + size_t(off) * es;
    switch (t.dtype) {
      case DType::F32: { float f; std::memcpy(&f, p, 4); out[n] = f; break; }
      case DType::F64: { double d; std::memcpy(&d, p, 8); out[n] = float(d); break; }
      case DType::BF16: { uint16_t h; std::memcpy(&h, p, 2); out[n] = bf16_to_f32(h); break; }
      case DType::F16: { uint16_t h; std::memcpy(&h, p, 2); out[n] = f16_to_f32(h); break; }
      case DType::I32: { int32_t v; std::memcpy(&v, p, 4); out[n] = float(v); break; }
      case DType::I64: { int64_t v; std::memcpy(&v, p, 8); out[n] = float(v); break; }
      case DType::U8: out[n] = float(*reinterpret_cast<const uint8_t*>(p)); break;
      default: throw std::invalid_argument("to_f32_vector: unsupported dtype");
    }
    for (int i = t.rank - 1; i >= 0; --i) {
      if (++idx[i] < t.shape[i]) break;
      idx[i] = 0;
    }
  }
  return out;
}

}  // namespace moss
