// moss-check te-stream: the text encoder's weight sources on the GPU (model/te_weights.h).
//
//   moss-check te-stream [--model DIR] [--tokens 64,512] [--reps 5] [--device N] [--no-linear]
//     --model   a MOSS-Image folder (its text_encoder/ is used) or a text_encoder folder;
//               default hip/tests/data/tiny-moss (run from the repository root)
//     --tokens  prompt lengths (each case encodes two prompts, N and N/2+3 tokens, like a run
//               with cfg, then one prompt of N tokens for the timing)
//
// Checks (PASS/FAIL, "N passed, M failed", exit 0 only if all pass):
//   - streamed (two slots, copies overlapping compute) == resident, bit for bit, per prompt;
//   - upload-on-use == resident, bit for bit (every source serves the same fused projections);
//   - the prompts stacked (encode_many) against each encoded alone: equal within 1e-2 relative
//     L2 (bf16 GEMM operands), and the line says whether they are bit-identical (they are where
//     the GEMM picks the same tiling for both row counts).
// Timings (info): streamed pass (copies included), resident load (the warm-up of the kernels
// overlaps it), the first encode after the load, the resident encode of one prompt of N tokens
// (median of --reps, weights on the device: the figure to compare with transformers' forward),
// of N + 10 tokens as two prompts (the CLI's prompt + empty negative, stacked), and, unless
// --no-linear, each text-encoder projection shape's CoreOps::linear (the fused ones included) at
// M = 64, 74, 128, 512, 1024 with the weight bytes it streams per second.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "io/files.h"
#include "io/model_folder.h"
#include "golden_stages.h"
#include "kernel_check.h"
#include "model/text_encoder.h"
#include "ops/hip/hip_backend.h"
#include "util/error.h"
#include "subcommand.h"

namespace {

using namespace moss;

std::vector<int32_t> random_ids(int n, int64_t vocab, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int32_t& id : ids) id = int32_t(g() % uint64_t(vocab));
  return ids;
}

// "" when equal bit for bit, else where they first differ.
std::string first_difference(const Tensor& a, const Tensor& b) {
  if (a.dims() != b.dims()) return "shapes " + a.shape_str() + " vs " + b.shape_str();
  const float* x = a.ptr<const float>();
  const float* y = b.ptr<const float>();
  for (int64_t i = 0; i < a.numel(); ++i)
    if (std::memcmp(&x[i], &y[i], sizeof(float)) != 0) {
      char m[160];
      std::snprintf(m, sizeof m, "first difference at row %lld col %lld: %.9g vs %.9g", (long long)(i / a.cols()),
                    (long long)(i % a.cols()), double(x[i]), double(y[i]));
      return m;
    }
  return "";
}

double gib(size_t b) { return double(b) / double(size_t(1) << 30); }

void encode_case(golden::Tally& tally, Backend& gpu, const WeightFiles& w, const TextEncoderConfig& cfg, int n, int reps) {
  const std::vector<std::vector<int32_t>> prompts = {random_ids(n, cfg.vocab, 1000 + uint64_t(n)),
                                                     random_ids(n / 2 + 3, cfg.vocab, 2000 + uint64_t(n))};
  const std::string tag = std::to_string(n) + " tokens";

  std::vector<Tensor> streamed, resident, on_use;
  {
    gpu.release_cached();
    TextEncoder te(gpu, w, cfg, TeResidency::Streamed);
    const auto t0 = std::chrono::steady_clock::now();
    streamed = te.encode_many(prompts);
    const HipMemoryStats m = hip_memory_stats(gpu);
    std::printf("info %s streamed: pass %.3f s (two prompts, copies included); device in use after %.2f GiB\n",
                tag.c_str(), golden::seconds_since(t0), gib(m.in_use_bytes));
  }
  {
    gpu.release_cached();
    TextEncoder te(gpu, w, cfg, TeResidency::Resident);
    resident = te.encode_many(prompts);
    const HipMemoryStats m = hip_memory_stats(gpu);
    std::printf("info %s resident: load %.3f s, first encode %.4f s (two prompts); device in use %.2f GiB\n",
                tag.c_str(), te.times().load_s, te.times().encode_s, gib(m.in_use_bytes));
    auto median_of = [&](const std::vector<std::vector<int32_t>>& ps, const char* what) {
      std::vector<double> t;
      for (int r = 0; r < reps; ++r) {
        te.encode_many(ps);
        t.push_back(te.times().encode_s);
      }
      std::sort(t.begin(), t.end());
      std::printf("info %s resident encode, %s: median %.4f s, best %.4f s (%d reps)\n", tag.c_str(), what,
                  t[t.size() / 2], t.front(), reps);
    };
    median_of({prompts[0]}, "one prompt");
    median_of({prompts[0], random_ids(10, cfg.vocab, 3000)}, "two prompts stacked (N + 10 tokens, as the CLI)");
    // Stacked against alone: the per-token GEMMs see M = the sum of the rows instead of one
    // prompt's rows; everything else is row-independent or per prompt.
    for (size_t p = 0; p < prompts.size(); ++p) {
      const Tensor alone = te.encode(prompts[p]);
      const std::string d = first_difference(alone, resident[p]);
      const kcheck::Compare c = kcheck::compare(to_f32_vector(alone), to_f32_vector(resident[p]));
      char line[256];
      std::snprintf(line, sizeof line, "%s prompt %zu: stacked == alone within 1e-2 (rel L2 %.2e, max %.2e, %s)",
                    tag.c_str(), p, c.rel_l2, c.max_abs, d.empty() ? "bit-identical" : "not bit-identical");
      tally.check(c.finite && c.rel_l2 < 1e-2, line);
    }
  }
  {
    gpu.release_cached();
    TextEncoder te(gpu, w, cfg, TeResidency::UploadOnUse);
    const auto t0 = std::chrono::steady_clock::now();
    on_use = te.encode_many(prompts);
    std::printf("info %s upload on use: pass %.3f s\n", tag.c_str(), golden::seconds_since(t0));
  }
  for (size_t p = 0; p < prompts.size(); ++p) {
    const std::string d1 = first_difference(streamed[p], resident[p]);
    tally.check(d1.empty(), tag + " prompt " + std::to_string(p) + ": streamed == resident bit for bit" +
                                (d1.empty() ? "" : " (" + d1 + ")"));
    const std::string d2 = first_difference(on_use[p], resident[p]);
    tally.check(d2.empty(), tag + " prompt " + std::to_string(p) + ": upload on use == resident bit for bit" +
                                (d2.empty() ? "" : " (" + d2 + ")"));
  }
}

// CoreOps::linear at the text encoder's projection shapes: weight GB/s (bf16 weights read once).
void linear_table(Backend& gpu, const TextEncoderConfig& c) {
  struct Shape {
    const char* name;
    int64_t n, k;
  };
  const int64_t H = c.hidden;
  const std::vector<Shape> shapes = {
      {"attn q_proj (q|gate)", c.heads * 2 * c.head_dim, H}, {"attn k_proj", c.kv_heads * c.head_dim, H},
      {"attn o_proj", H, c.heads * c.head_dim},               {"dn in_proj_qkv", c.conv_width(), H},
      {"dn in_proj_z", c.linear_value_width(), H},            {"dn in_proj_a", c.linear_value_heads, H},
      {"dn out_proj", H, c.linear_value_width()},             {"mlp gate/up", c.intermediate, H},
      {"mlp down", H, c.intermediate},
      // The GEMMs the encoder runs: stacked weights (model/te_weights.h te_fused_groups).
      {"dn qkv|z|a|b (fused)", c.conv_width() + c.linear_value_width() + 2 * c.linear_value_heads, H},
      {"mlp gate|up (fused)", 2 * c.intermediate, H},
      {"attn k|v (fused)", 2 * c.kv_heads * c.head_dim, H}};
  hipStream_t s = hip_context_of(gpu)->stream();
  kcheck::Rng rng(7);
  std::printf("\n| linear | M | N | K | ms | weight GB/s | TFLOP/s |\n|---|---:|---:|---:|---:|---:|---:|\n");
  for (const Shape& sh : shapes) {
    const Tensor w = gpu.upload(kcheck::random_host(DType::BF16, {sh.n, sh.k}, rng, 0.02f));
    for (int64_t m : {64, 74, 128, 512, 1024}) {
      const Tensor x = gpu.upload(kcheck::random_host(DType::F32, {m, sh.k}, rng));
      Tensor y = gpu.alloc(DType::F32, {m, sh.n});
      const double ms = kcheck::time_ms(s, [&] { gpu.core().linear(x, w, nullptr, y); }, 20);
      std::printf("| %s | %lld | %lld | %lld | %.4f | %.0f | %.1f |\n", sh.name, (long long)m, (long long)sh.n,
                  (long long)sh.k, ms, double(sh.n * sh.k * 2) / (ms * 1e6), 2.0 * double(m * sh.n * sh.k) / (ms * 1e9));
    }
  }
  std::fflush(stdout);
}

int run(const std::vector<std::string>& args) {
  const std::string model = golden::flag(args, "--model", "hip/tests/data/tiny-moss");
  const std::string folder = dir_exists(model + "/text_encoder") ? model + "/text_encoder" : model;
  const TextEncoderConfig cfg = parse_text_encoder_config(folder + "/config.json");
  const WeightFiles w = WeightFiles::open_folder(folder);
  check_tensors(w, text_encoder_expected_tensors(cfg, text_encoder_prefix(w)), text_encoder_ignored_prefixes());
  std::unique_ptr<Backend> gpu = make_hip_backend(golden::device_flag(args));
  std::printf("moss-check te-stream: %s on %s (%lld layers, hidden %lld)\n", folder.c_str(), gpu->name().c_str(),
              (long long)cfg.layers, (long long)cfg.hidden);
  golden::Tally tally;
  const int reps = int(golden::int_flag(args, "--reps", 5, 1, 1000));
  for (int n : golden::int_list_flag(args, "--tokens").value_or(std::vector<int>{64, 512})) {
    try {
      encode_case(tally, *gpu, w, cfg, n, reps);
    } catch (const std::exception& e) {
      tally.check(false, std::to_string(n) + " tokens: stopped: " + e.what());
    }
  }
  if (!golden::has_flag(args, "--no-linear")) linear_table(*gpu, cfg);
  return tally.finish();
}

}  // namespace

static check::Registrar te_stream_registrar(
    "te-stream", "[--model DIR] [--tokens 64,512] [--reps 5] [--device N] [--no-linear]", run, true);
