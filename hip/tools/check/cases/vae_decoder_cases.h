// Decoder-level cases of `moss-check kernels --family vae`: the mid block's projections through the HIP `linear`
// (f32 weights), the whole tiny-model decode on the HIP backend against golden_vae.safetensors,
// and the device memory and time of a 1024x1024 decode with random weights of the real shapes.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../golden_compare.h"
#include "vae_kernel_cases.h"
#include "io/safetensors.h"
#include "model/image_u8.h"
#include "model/vae.h"
#include "model/vae_config.h"
#include "ops/hip/hip_backend.h"

namespace vae_check {

// A table row that is a verdict rather than a comparison (memory, 8-bit images).
inline void verdict(kcheck::Table& t, const std::string& kernel, const std::string& shape, bool ok,
                    const std::string& detail, double ms = 0.0) {
  (ok ? t.passed : t.failed)++;
  std::printf("%-28s %-26s %9.4f  %s  %s\n", kernel.c_str(), shape.c_str(), ms, detail.c_str(), ok ? "ok" : "FAIL");
  std::fflush(stdout);
}

inline double gib(double bytes) { return bytes / double(size_t(1) << 30); }

// ---- the attention's 1x1 projections: CoreOps::linear with f32 weights -------------------------------
// y = x·wᵀ + b into the first N columns of a poisoned [M, width] buffer (to_out writes into a
// column slice of the fused qkv buffer in the decode).
inline void check_projection(kcheck::Table& table, moss::Backend& be, moss::HipContext& ctx, moss::Backend& host,
                             int64_t M, int64_t N, int64_t K, int64_t width, int reps, uint64_t seed) {
  const Tensor x = random_host({M, K}, seed, 1.0f, 0.1f);
  const Tensor w = random_host({N, K}, seed + 1, 1.0f / std::sqrt(float(K))), b = random_host({N}, seed + 2, 0.1f);
  Tensor want = moss::host_tensor(DType::F32, {M, N});
  host.core().linear(x, w, &b, want);
  const Tensor dx = be.upload(x), dw = be.upload(w), db = be.upload(b);
  Tensor wide = be.alloc(DType::F32, {M, width});
  kcheck::poison(wide, ctx.stream());
  Tensor y = wide.slice_cols(0, N);
  auto run = [&] { be.core().linear(dx, dw, &db, y); };
  run();
  const Tensor back = be.download(wide);
  std::vector<float> got(size_t(M * N));
  for (int64_t r = 0; r < M; ++r)
    std::memcpy(got.data() + r * N, back.ptr<const float>() + r * width, size_t(N) * 4);
  const std::string shape = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) +
                            (width > N ? " slice" : "");
  const kcheck::Compare c = compare_where("linear " + shape, got, values(want), {M, N}, kBf16Tolerance);
  const double ms = reps ? kcheck::time_ms(ctx.stream(), run, reps) : 0.0;
  table.row("linear f32-weight (G1)", shape, c, kBf16Tolerance, ms, 2.0 * double(M * N * K));
}

inline void check_projection_cases(kcheck::Table& table, moss::Backend& be, moss::HipContext& ctx,
                                   moss::Backend& host, int64_t max_elements = 0) {
  struct Projection {
    int64_t m, n, k, width;
    int reps;
    uint64_t seed;
  };
  const Projection cases[] = {
      {1024, 1152, 384, 1152, 0, 0xD0001},    // to_qkv, 256² image
      {1024, 384, 384, 1152, 0, 0xD0002},     // to_out into q's columns
      {64, 288, 96, 288, 0, 0xD0003},         // tiny model to_qkv
      {16384, 1152, 384, 1152, 10, 0xD0004},  // to_qkv at 1024²
  };
  for (const Projection& c : cases)
    kcheck::guarded(table, "linear f32-weight (G1)", [&] {
      kcheck::admit(max_elements, {c.m, c.width});
      check_projection(table, be, ctx, host, c.m, c.n, c.k, c.width, c.reps, c.seed);
    });
}

// ---- the tiny model's whole decode against the golden ------------------------------------------------
inline void check_tiny_decoder(kcheck::Table& table, moss::Backend& be, const std::string& data_dir) {
  const std::string folder = data_dir + "/tiny-moss/vae", golden_path = data_dir + "/golden_vae.safetensors";
  const moss::VaeConfig cfg = moss::parse_vae_config(folder + "/config.json");
  const moss::WeightFiles weights = moss::WeightFiles::open_folder(folder);
  const auto golden = moss::SafetensorsFile::open(golden_path);
  const auto meta = golden->metadata().find("cases");
  if (meta == golden->metadata().end()) throw moss::failure(golden_path + ": no 'cases' in the metadata");
  moss::VaeDecoder decoder(be, weights, cfg);
  for (const nlohmann::json& c : nlohmann::json::parse(meta->second)) {
    const int64_t id = c.at("case").get<int64_t>(), h = c.at("height").get<int64_t>(), w = c.at("width").get<int64_t>();
    const std::string p = "case" + std::to_string(id) + ".", shape = std::to_string(h) + "x" + std::to_string(w);
    const Tensor packed = golden->get(p + "latent_packed");

    const Tensor unpacked = decoder.unpack_latent(packed);
    const Tensor want_z = golden->get(p + "latent_unpacked_fp64");
    table.row("vae unpack (tiny)", shape,
              compare_where("vae unpack " + shape, values(unpacked), values(want_z), want_z.dims(), kFp32Tolerance),
              kFp32Tolerance, 0.0);

    decoder.decode(packed);  // warm: the allocator's first blocks
    const auto t0 = std::chrono::steady_clock::now();
    const Tensor image = decoder.decode(packed);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const Tensor want = golden->get(p + "image_fp64");
    // The decode's own tolerance: fp16-operand convolutions (TF32-class), the mid block's projections
    // and attention on bf16 operands (G1's linear, G2's attention).
    table.row("vae decode (tiny)", shape,
              compare_where("vae decode " + shape, values(image), values(want), want.dims(), kBf16Tolerance),
              kBf16Tolerance, ms);

    // 8-bit image: no value more than one level off. (The host backend's golden rule also caps the
    // share one level off at 0.5%; on the GPU the mid-block attention runs on bf16 operands, as
    // the issue allows, which moves up to about 1% of the values of this tiny random model by one
    // level: the share is reported, and issue 7's end-to-end rule, 2 levels on average, is
    // checked by moss-check cli-output.)
    const Tensor want_u8 = golden->get(p + "image_u8");
    const golden::U8Diff levels = golden::u8_diff(moss::image_to_u8(image), want_u8);
    const int64_t one_off = levels.one_off, worse = levels.comparable ? levels.more : 3 * h * w;
    const double share = double(one_off) / double(3 * h * w);
    char detail[160];
    std::snprintf(detail, sizeof detail, "%lld values one level off (%.3f%%), %lld more (limit 0)", (long long)one_off,
                  100.0 * share, (long long)worse);
    verdict(table, "vae decode u8 (tiny)", shape, worse == 0, detail);

    const size_t planned = moss::VaeDecoder::decode_activation_bytes(cfg, h, w);
    std::snprintf(detail, sizeof detail, "peak %zu bytes, planned %zu", decoder.last_peak_bytes(), planned);
    verdict(table, "vae activations (tiny)", shape, decoder.last_peak_bytes() == planned, detail);
  }
}

// ---- a 1024x1024 decode with random weights of the small decoder's shapes ------------------------------
inline Tensor random_weight(const moss::ExpectedTensor& e, uint64_t seed) {
  const std::vector<int64_t>& s = e.shape;
  auto ends_with = [&](const char* tail) {
    const std::string t(tail);
    return e.name.size() >= t.size() && e.name.compare(e.name.size() - t.size(), t.size(), t) == 0;
  };
  if (s.size() >= 2) {
    int64_t fan_in = 1;
    for (size_t i = 1; i < s.size(); ++i) fan_in *= s[i];
    return random_host(s, seed, 1.0f / std::sqrt(float(fan_in)));
  }
  if (ends_with("running_var")) return random_host(s, seed, 0.25f, 1.0f);
  if (ends_with("running_mean")) return random_host(s, seed, 0.5f);
  if (ends_with(".bias")) return random_host(s, seed, 0.05f);
  return random_host(s, seed, 0.1f, 1.0f);  // group-norm gamma
}

inline size_t device_used_bytes() {
  size_t free_b = 0, total_b = 0;
  MOSS_HIP_CHECK(hipMemGetInfo(&free_b, &total_b));
  return total_b - free_b;
}

inline void check_decode_memory(kcheck::Table& table, int device, int64_t size) {
  moss::VaeConfig cfg;
  cfg.file = "small decoder, random weights";
  cfg.block_out_channels = {96, 192, 384, 384};
  cfg.norm_num_groups = 32;

  // Random weights held in memory (no file: bench runs this case from the shipped binary).
  std::map<std::string, Tensor> tensors;
  uint64_t seed = 0xE0000;
  for (const moss::ExpectedTensor& e : moss::vae_expected_tensors(cfg))
    if (!e.optional) tensors[e.name] = random_weight(e, seed += 7);
  const moss::WeightFiles weights = moss::WeightFiles::in_memory("small decoder, random weights", tensors);

  auto be = moss::make_hip_backend(device);
  moss::VaeDecoder decoder(*be, weights, cfg);
  be->release_cached();  // the run releases the allocator's cache before the decode, too
  be->set_low_peak(true);
  const moss::HipMemoryStats pool0 = moss::hip_memory_stats(*be);
  const size_t used0 = device_used_bytes();
  const Tensor packed = random_host({cfg.packed_channels(), size / 16, size / 16}, 0xE1000, 1.0f);

  decoder.decode(packed);  // first decode: every device block it needs is allocated here
  const moss::HipMemoryStats pool1 = moss::hip_memory_stats(*be);
  const size_t used1 = device_used_bytes();
  // The best of three timed decodes (the first one above allocated every block).
  Tensor image;
  double ms = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    image = decoder.decode(packed);
    ms = std::min(ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }

  int64_t non_finite = 0;
  for (float v : values(image)) non_finite += !std::isfinite(v);
  const std::string shape = std::to_string(size) + "x" + std::to_string(size);
  char detail[256];
  std::snprintf(detail, sizeof detail, "image %s, %lld non-finite (best of 3; host upload and download included)",
                dims_text(image.dims()).c_str(), (long long)non_finite);
  verdict(table, "vae decode (small, random)", shape, non_finite == 0, detail, ms);
  table.timings.push_back({"vae decode (whole stage)", shape, ms, 0, 0});  // a stage: no rate

  // Bytes above the weights. live: the decoder's own count of its tensors (docs/vae.md 5.2's
  // bound); other: device memory the decode grew that is not the tensor pool (scratch arenas);
  // footprint: all device memory the decode added, the pool's cached free blocks included.
  const double pool_grew = double(pool1.in_use_bytes + pool1.cached_bytes) -
                           double(pool0.in_use_bytes + pool0.cached_bytes);
  const double footprint = double(used1) - double(used0), other = footprint - pool_grew;
  const size_t live = decoder.last_peak_bytes(), planned = moss::VaeDecoder::decode_activation_bytes(cfg, size, size);
  const double limit = 1.6 * double(size_t(1) << 30) * double(size * size) / (1024.0 * 1024.0);
  std::printf("  weights %.3f GiB on the device; pool %.3f GiB in use + %.3f GiB cached after the decode\n",
              gib(double(pool0.in_use_bytes)), gib(double(pool1.in_use_bytes)), gib(double(pool1.cached_bytes)));
  std::snprintf(detail, sizeof detail, "live tensors %.3f GiB (planned %.3f) + other %.3f GiB, limit %.2f GiB",
                gib(double(live)), gib(double(planned)), gib(other), gib(limit));
  verdict(table, "vae decode peak (live)", shape, live == planned && double(live) + other <= limit, detail);
  std::snprintf(detail, sizeof detail, "device grew %.3f GiB (pool %.3f + other %.3f), limit %.2f GiB", gib(footprint),
                gib(pool_grew), gib(other), gib(limit));
  verdict(table, "vae decode peak (device)", shape, footprint <= limit, detail);
  std::printf("  planned activations at 2048x2048: %.3f GiB\n",
              gib(double(moss::VaeDecoder::decode_activation_bytes(cfg, 2048, 2048))));
}

}  // namespace vae_check
