// The LoRA family's host reference (ops/lora_ops.h): every form against the header's arithmetic
// spelled out here value by value (each product and sum forced to round on its own through
// volatile temporaries), the order of several deltas, the sum starting from +0, the one rounding,
// f32 weights and biases, the thread split, and the shared operand checks. The kernel is checked
// against this reference bit for bit by `moss-check kernels --family lora`.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <stdexcept>

#include "ops/lora_ops.h"

using namespace moss;

namespace {

Tensor random_f32(std::vector<int64_t> dims, std::mt19937& rng, float scale) {
  Tensor t = host_tensor(DType::F32, dims);
  std::normal_distribution<float> n(0.0f, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.ptr<float>()[i] = n(rng);
  return t;
}
Tensor random_bf16(std::vector<int64_t> dims, std::mt19937& rng, float scale) {
  const Tensor f = random_f32(dims, rng, scale);
  Tensor t = host_tensor(DType::BF16, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.ptr<uint16_t>()[i] = f32_to_bf16(f.ptr<float>()[i]);
  return t;
}
Tensor copy_of(const Tensor& t) {
  Tensor c = host_tensor(t.dtype, t.dims());
  std::memcpy(c.data, t.data, t.nbytes());
  return c;
}

float mul(float a, float b) {
  volatile float p = a * b;
  return p;
}
float add(float a, float b) {
  volatile float s = a + b;
  return s;
}
// F(p, q) as the header defines it.
float factor(const LoraFactor& f, int64_t p, int64_t q) {
  if (!f.product()) return f.a.ptr<float>()[p * f.a.cols() + q];
  float s = 0.0f;
  for (int64_t k = 0; k < f.a.cols(); ++k)
    s = add(s, mul(f.a.ptr<float>()[p * f.a.cols() + k], f.b.ptr<float>()[k * f.b.cols() + q]));
  return s;
}
float delta_value(const LoraDelta& d, int64_t r, int64_t q) {
  switch (d.form) {
    case LoraDeltaForm::Single: return factor(d.f1, r, q);
    case LoraDeltaForm::Hadamard: return mul(factor(d.f1, r, q), factor(d.f2, r, q));
    case LoraDeltaForm::Kronecker: {
      const int64_t c = d.f2.rows(), dd = d.f2.cols();
      return mul(factor(d.f1, r / c, q / dd), factor(d.f2, r % c, q % dd));
    }
  }
  return 0;
}
// The merge of the header, value by value.
Tensor spelled_out(const Tensor& w, const std::vector<LoraDelta>& deltas) {
  Tensor out = copy_of(w);
  const bool bf16 = w.dtype == DType::BF16;
  for (int64_t o = 0; o < w.rows(); ++o)
    for (int64_t i = 0; i < w.cols(); ++i) {
      const int64_t at = o * w.cols() + i;
      float x = bf16 ? bf16_to_f32(w.ptr<uint16_t>()[at]) : w.ptr<float>()[at];
      for (const LoraDelta& d : deltas) x = add(x, mul(d.coef, delta_value(d, d.row0 + o, i)));
      if (bf16) out.ptr<uint16_t>()[at] = f32_to_bf16(x);
      else out.ptr<float>()[at] = x;
    }
  return out;
}

void expect_same_bits(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.nbytes(), want.nbytes()) << what;
  int64_t differ = 0, first = -1;
  const size_t es = dtype_size(got.dtype);
  for (int64_t i = 0; i < got.numel(); ++i)
    if (std::memcmp(static_cast<const char*>(got.data) + i * es, static_cast<const char*>(want.data) + i * es, es)) {
      if (first < 0) first = i;
      ++differ;
    }
  EXPECT_EQ(differ, 0) << what << ": " << differ << " values differ, the first at " << first;
}

struct Forms {
  std::mt19937 rng{47};
  LoraDelta low_rank(int64_t rows, int64_t cols, int64_t rank, float coef, int64_t row0 = 0) {
    return {LoraDeltaForm::Single, {random_f32({rows, rank}, rng, 0.1f), random_f32({rank, cols}, rng, 0.1f)}, {}, row0, coef};
  }
  LoraDelta whole(int64_t rows, int64_t cols, float coef) {
    return {LoraDeltaForm::Single, {random_f32({rows, cols}, rng, 0.01f), {}}, {}, 0, coef};
  }
  LoraDelta loha(int64_t rows, int64_t cols, int64_t r1, int64_t r2, float coef) {
    return {LoraDeltaForm::Hadamard,
            {random_f32({rows, r1}, rng, 0.3f), random_f32({r1, cols}, rng, 0.3f)},
            {random_f32({rows, r2}, rng, 0.3f), random_f32({r2, cols}, rng, 0.3f)}, 0, coef};
  }
  // w1 [a, b] (whole, or halves of rank r1), w2 [c, d] (halves of rank r2, or whole when 0).
  LoraDelta lokr(int64_t a, int64_t b, int64_t c, int64_t d, int64_t r1, int64_t r2, float coef) {
    LoraFactor f1 = r1 ? LoraFactor{random_f32({a, r1}, rng, 0.3f), random_f32({r1, b}, rng, 0.3f)}
                       : LoraFactor{random_f32({a, b}, rng, 0.3f), {}};
    LoraFactor f2 = r2 ? LoraFactor{random_f32({c, r2}, rng, 0.3f), random_f32({r2, d}, rng, 0.3f)}
                       : LoraFactor{random_f32({c, d}, rng, 0.3f), {}};
    return {LoraDeltaForm::Kronecker, f1, f2, 0, coef};
  }
};

struct MergeCase {
  const char* name;
  int64_t rows, cols;  // rows 0: a bias of cols values
  DType dtype;
  std::function<std::vector<LoraDelta>(Forms&)> deltas;
};

}  // namespace

TEST(LoraOps, EveryFormMergesAsTheHeaderSpellsIt) {
  const std::vector<MergeCase> cases = {
      {"low rank", 37, 45, DType::BF16, [](Forms& f) { return std::vector<LoraDelta>{f.low_rank(37, 45, 4, 0.8f)}; }},
      {"low rank, rank 1, negative weight", 9, 33, DType::BF16,
       [](Forms& f) { return std::vector<LoraDelta>{f.low_rank(9, 33, 1, -2.0f)}; }},
      {"low rank into an f32 weight", 16, 24, DType::F32,
       [](Forms& f) { return std::vector<LoraDelta>{f.low_rank(16, 24, 3, 0.7f)}; }},
      {"a fused qkv's v rows (row0)", 20, 16, DType::BF16,
       [](Forms& f) { return std::vector<LoraDelta>{f.low_rank(60, 16, 8, 1.0f, 40)}; }},
      {"full delta", 12, 40, DType::BF16, [](Forms& f) { return std::vector<LoraDelta>{f.whole(12, 40, 1.0f)}; }},
      {"bias delta", 0, 40, DType::BF16, [](Forms& f) { return std::vector<LoraDelta>{f.whole(1, 40, -1.0f)}; }},
      {"LoHa", 24, 18, DType::BF16, [](Forms& f) { return std::vector<LoraDelta>{f.loha(24, 18, 3, 5, 0.5f)}; }},
      {"LoKr, w1 whole", 24, 40, DType::BF16,
       [](Forms& f) { return std::vector<LoraDelta>{f.lokr(4, 8, 6, 5, 0, 2, 0.9f)}; }},
      {"LoKr, both halved", 36, 40, DType::BF16,
       [](Forms& f) { return std::vector<LoraDelta>{f.lokr(4, 8, 9, 5, 2, 3, 1.1f)}; }},
      {"LoKr, both whole", 6, 6, DType::F32, [](Forms& f) { return std::vector<LoraDelta>{f.lokr(2, 3, 3, 2, 0, 0, 1.0f)}; }},
      {"several, in order", 31, 17, DType::BF16,
       [](Forms& f) {
         return std::vector<LoraDelta>{f.low_rank(31, 17, 4, 0.9f), f.loha(31, 17, 2, 2, -0.4f),
                                       f.low_rank(93, 17, 2, 1.3f, 31), f.whole(31, 17, 0.25f)};
       }},
  };
  for (const MergeCase& c : cases) {
    Forms forms;
    const std::vector<int64_t> dims = c.rows ? std::vector<int64_t>{c.rows, c.cols} : std::vector<int64_t>{c.cols};
    const Tensor base = c.dtype == DType::BF16 ? random_bf16(dims, forms.rng, 0.02f) : random_f32(dims, forms.rng, 0.02f);
    const std::vector<LoraDelta> deltas = c.deltas(forms);
    for (int threads : {1, 3}) {
      ThreadPool pool(threads);
      Tensor w = copy_of(base);
      make_host_lora_ops(pool)->merge(w, deltas);
      expect_same_bits(w, spelled_out(base, deltas), std::string(c.name) + ", " + std::to_string(threads) + " threads");
    }
    // The merge changed the weight (a test that cannot fail would pass on a no-op).
    Tensor w = copy_of(base);
    make_host_lora_ops(ThreadPool::global())->merge(w, deltas);
    EXPECT_NE(std::memcmp(w.data, base.data, w.nbytes()), 0) << c.name;
  }
}

TEST(LoraOps, OneRoundingAfterEveryDeltaAndTheSumStartsAtPlusZero) {
  auto ops = make_host_lora_ops(ThreadPool::global());
  auto one = [](float v) {
    Tensor t = host_tensor(DType::F32, {1, 1});
    t.ptr<float>()[0] = v;
    return t;
  };
  // bf16's step at 1 is 2^-7. 1 + 2^-8 alone is a tie that rounds back to 1 (to even); rounding
  // after each delta would keep 1 twice over, the one rounding of the fp32 sum gives 1 + 2^-7.
  Tensor w = host_tensor(DType::BF16, {1, 1});
  w.ptr<uint16_t>()[0] = f32_to_bf16(1.0f);
  const float half_step = 1.0f / 256;
  ops->merge(w, {{LoraDeltaForm::Single, {one(half_step), {}}, {}, 0, 1.0f}});
  EXPECT_EQ(bf16_to_f32(w.ptr<uint16_t>()[0]), 1.0f);
  ops->merge(w, {{LoraDeltaForm::Single, {one(half_step), {}}, {}, 0, 1.0f},
                 {LoraDeltaForm::Single, {one(half_step), {}}, {}, 0, 1.0f}});
  EXPECT_EQ(bf16_to_f32(w.ptr<uint16_t>()[0]), 1.0f + 1.0f / 128);
  // A product sum starts from +0: -0 plus a zero update gives +0 (a sum started from the first
  // product would keep -0).
  Tensor z = host_tensor(DType::BF16, {1, 1});
  z.ptr<uint16_t>()[0] = 0x8000;
  ops->merge(z, {{LoraDeltaForm::Single, {one(-0.0f), one(1.0f)}, {}, 0, 1.0f}});
  EXPECT_EQ(z.ptr<uint16_t>()[0], 0x0000);
}

TEST(LoraOps, OperandsThatDoNotFitAreRefusedNamingThem) {
  std::mt19937 rng(3);
  auto ops = make_host_lora_ops(ThreadPool::global());
  Tensor w = random_bf16({8, 6}, rng, 0.1f);
  const Tensor a82 = random_f32({8, 2}, rng, 0.1f), a26 = random_f32({2, 6}, rng, 0.1f), a36 = random_f32({3, 6}, rng, 0.1f);
  struct Bad {
    const char* why;
    std::vector<LoraDelta> deltas;
    const char* message;
  };
  Tensor bf16_factor = random_bf16({8, 6}, rng, 0.1f);
  const std::vector<Bad> bad = {
      {"halves of different rank", {{LoraDeltaForm::Single, {a82, a36}, {}, 0, 1}}, "do not fit"},
      {"rows past the delta", {{LoraDeltaForm::Single, {a82, a26}, {}, 1, 1}}, "does not cover rows"},
      {"a narrower delta", {{LoraDeltaForm::Single, {a82, {}}, {}, 0, 1}}, "does not cover rows"},
      {"a bf16 factor", {{LoraDeltaForm::Single, {bf16_factor, {}}, {}, 0, 1}}, "contiguous f32 matrix"},
      {"Hadamard factors that differ",
       {{LoraDeltaForm::Hadamard, {a82, a26}, {random_f32({4, 6}, rng, 0.1f), {}}, 0, 1}}, "Hadamard factors differ"},
      {"a Kronecker product of another shape",
       {{LoraDeltaForm::Kronecker, {random_f32({2, 2}, rng, 0.1f), {}}, {random_f32({4, 4}, rng, 0.1f), {}}, 0, 1}},
       "Kronecker product"},
      {"a negative row0", {{LoraDeltaForm::Single, {a82, a26}, {}, -1, 1}}, "row0"},
  };
  for (const Bad& b : bad) {
    const Tensor before = copy_of(w);
    try {
      ops->merge(w, b.deltas);
      ADD_FAILURE() << b.why << ": accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(b.message), std::string::npos) << b.why << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("lora_merge"), std::string::npos) << e.what();
    }
    EXPECT_EQ(std::memcmp(w.data, before.data, w.nbytes()), 0) << b.why << ": the weight changed";
  }
  Tensor f16 = host_tensor(DType::F16, {8, 6});
  EXPECT_THROW(ops->merge(f16, {{LoraDeltaForm::Single, {a82, a26}, {}, 0, 1}}), std::invalid_argument);
}
