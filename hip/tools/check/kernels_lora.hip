// `moss-check kernels --family lora`: the LoRA merge (ops/lora_ops.h, kernels/lora_merge.hip) on
// the GPU backend against the host reference on the same random weights and factors, bit for bit
// (tolerance 0: the op defines each value's operations and their order, and both sides keep them).
// One case per form at the DiT's shapes (dim 3072, ffn 8192: the q projection, the fused
// ffn_up_gate, ffn_down) at rank 64, the rank the issue's target is stated for, and at odd sizes
// (tails of the 8-row, 32-column tiles): low rank over a bf16 and an f32 weight, a fused qkv's k
// rows (row0), several LoRAs on one weight in order, LyCORIS LoHa, LoKr with whole and halved
// factors, a full delta and a bias delta. The real-shape cases are timed; their rate is GB/s
// (the weight read and written once plus the factors read once).
//
// Group (--filter): "merge".
#include <cstdio>
#include <string>
#include <vector>

#include "kernel_check.h"
#include "ops/backend.h"
#include "ops/hip/hip_backend.h"

namespace {

using namespace moss;
using kcheck::Env;
using kcheck::fetch;
using kcheck::fill;
using kcheck::report;
using kcheck::shape_of;
using kcheck::time_it;

// A host tensor of random values (bf16-exact: the files hold bf16) and its device copy.
struct Pair {
  Tensor h, d;
};
Pair random_pair(Env& e, DType dt, const std::vector<int64_t>& dims, float scale) {
  kcheck::admit(e, dims);
  std::vector<float> v;
  v.resize(size_t(Tensor(nullptr, dt, dims).numel()));
  fill(v, ++e.seed, scale);
  Tensor h = host_tensor(dt, dims);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t b = f32_to_bf16(v[i]);
    if (dt == DType::BF16) h.ptr<uint16_t>()[i] = b;
    else h.ptr<float>()[i] = bf16_to_f32(b);
  }
  return {h, e.gpu.upload(h)};
}

// One factor on both sides: whole [rows, cols], or the product of [rows, rank] and [rank, cols].
struct FactorPair {
  LoraFactor h, d;
};
FactorPair random_factor(Env& e, int64_t rows, int64_t cols, int64_t rank, float scale) {
  if (rank == 0) {
    Pair a = random_pair(e, DType::F32, {rows, cols}, scale);
    return {{a.h, {}}, {a.d, {}}};
  }
  Pair a = random_pair(e, DType::F32, {rows, rank}, scale), b = random_pair(e, DType::F32, {rank, cols}, scale);
  return {{a.h, b.h}, {a.d, b.d}};
}

struct DeltaSpec {
  LoraDeltaForm form = LoraDeltaForm::Single;
  int64_t rank1 = 0, rank2 = 0;  // 0: the factor is whole
  int64_t rows1 = 0, cols1 = 0;  // factor 1's shape (Single, Hadamard: ΔW's; Kronecker: w1's)
  int64_t rows2 = 0, cols2 = 0;  // Kronecker: w2's
  int64_t row0 = 0;
  float coef = 1;
};

struct MergeSpec {
  std::string name;
  int64_t out, in;  // in alone (out 0): a bias of `in` values
  DType w = DType::BF16;
  std::vector<DeltaSpec> deltas;
  bool timed = false;
};

// Host merge on a host copy, device merge in place on the device copy; every value compared.
void merge_case(Env& e, const MergeSpec& s) {
  const std::vector<int64_t> dims = s.out ? std::vector<int64_t>{s.out, s.in} : std::vector<int64_t>{s.in};
  Pair w = random_pair(e, s.w, dims, 0.02f);
  std::vector<LoraDelta> host, device;
  double factor_bytes = 0;
  for (const DeltaSpec& d : s.deltas) {
    const float scale = d.form == LoraDeltaForm::Single ? 0.05f : 0.3f;
    FactorPair f1 = random_factor(e, d.rows1, d.cols1, d.rank1, scale), f2;
    if (d.form != LoraDeltaForm::Single)
      f2 = random_factor(e, d.form == LoraDeltaForm::Kronecker ? d.rows2 : d.rows1,
                         d.form == LoraDeltaForm::Kronecker ? d.cols2 : d.cols1, d.rank2, scale);
    for (const Tensor* t : {&f1.h.a, &f1.h.b, &f2.h.a, &f2.h.b}) factor_bytes += double(t->rank ? t->nbytes() : 0);
    host.push_back({d.form, f1.h, f2.h, d.row0, d.coef});
    device.push_back({d.form, f1.d, f2.d, d.row0, d.coef});
  }
  e.host.lora().merge(w.h, host);
  e.gpu.lora().merge(w.d, device);
  const std::vector<float> got = fetch(e, w.d);
  double ms = 0;
  std::string shape = s.out ? shape_of({s.out, s.in}) : shape_of({s.in});
  if (s.w == DType::F32) shape += " w:f32";
  const double bytes = 2.0 * double(w.h.nbytes()) + factor_bytes;
  if (s.timed) {
    ms = time_it(e, [&] { e.gpu.lora().merge(w.d, device); }, 5);
    kcheck::record(e, "lora_merge " + s.name, shape, ms, 0, bytes);
  }
  report(e, "lora_merge " + s.name, shape, got, to_f32_vector(w.h), s.in, 0.0, ms, 0, bytes);
}
const kcheck::Op<MergeSpec> op_merge{"lora_merge", merge_case};

constexpr int64_t kDim = 3072, kFfn = 8192, kRank = 64;

DeltaSpec low_rank(int64_t out, int64_t in, int64_t rank, float coef, int64_t row0 = 0) {
  return {LoraDeltaForm::Single, rank, 0, out, in, 0, 0, row0, coef};
}

void check_merge(Env& e) {
  using F = LoraDeltaForm;
  kcheck::run_cases(e, {
      // Low rank at the DiT's shapes, rank 64 (the issue's target), timed.
      op_merge({"low rank q", kDim, kDim, DType::BF16, {low_rank(kDim, kDim, kRank, 0.8f)}, true}),
      op_merge({"low rank ffn_up_gate", 2 * kFfn, kDim, DType::BF16, {low_rank(2 * kFfn, kDim, kRank, 1.0f)}, true}),
      op_merge({"low rank ffn_down", kDim, kFfn, DType::BF16, {low_rank(kDim, kFfn, kRank, -0.6f)}, true}),
      // Tails of the tiles, ranks 1 and 3, an f32 weight.
      op_merge({"low rank tails", 37, 45, DType::BF16, {low_rank(37, 45, 3, 1.5f)}}),
      op_merge({"low rank rank 1", 9, 33, DType::BF16, {low_rank(9, 33, 1, -2.0f)}}),
      op_merge({"low rank f32 weight", 37, 45, DType::F32, {low_rank(37, 45, 3, 0.7f)}}),
      // A fused qkv LoRA's k rows: ΔW has 3·rows, the weight is rows [rows, 2·rows).
      op_merge({"low rank qkv k rows", 200, 96, DType::BF16, {low_rank(600, 96, 8, 1.0f, 200)}}),
      // Several LoRAs on one weight, in order (one rounding at the end).
      op_merge({"several in order", 131, 77, DType::BF16,
                {low_rank(131, 77, 4, 0.9f), low_rank(131, 77, 16, -0.4f), low_rank(393, 77, 2, 1.3f, 131),
                 {F::Single, 0, 0, 131, 77, 0, 0, 0, 0.25f}}}),
      // LyCORIS LoHa, LoKr (w1 whole and w2 halved; both halved), full and bias deltas.
      op_merge({"LoHa", kDim, kDim, DType::BF16, {{F::Hadamard, 16, 16, kDim, kDim, 0, 0, 0, 0.5f}}, true}),
      op_merge({"LoHa tails", 37, 45, DType::BF16, {{F::Hadamard, 3, 5, 37, 45, 0, 0, 0, 1.0f}}}),
      op_merge({"LoKr w1 whole", kDim, kDim, DType::BF16, {{F::Kronecker, 0, 8, 4, 8, 768, 384, 0, 0.9f}}, true}),
      op_merge({"LoKr both halved", 36, 40, DType::BF16, {{F::Kronecker, 2, 3, 4, 8, 9, 5, 0, 1.1f}}}),
      op_merge({"full delta", kDim, kDim, DType::BF16, {{F::Single, 0, 0, kDim, kDim, 0, 0, 0, 1.0f}}, true}),
      op_merge({"bias delta", 0, kDim, DType::BF16, {{F::Single, 0, 0, 1, kDim, 0, 0, 0, -1.0f}}}),
  });
}

}  // namespace

void kcheck::lora_family(Table& table, const Options& o) {
  if (!o.selects("merge")) return;
  Env env(table, o, 5);
  std::printf("moss-check kernels --family lora on %s (%d multiprocessors)\n", env.gpu.name().c_str(),
              env.ctx.multiprocessors());
  group(table, o, "lora", "merge", [&] { check_merge(env); });
  print_timed_list(env.timings, device_peaks(env.ctx.device()));
}
