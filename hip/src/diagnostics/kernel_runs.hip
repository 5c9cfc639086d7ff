// The device part of `self-test` and `bench` (kernel_runs.h): the kernel-check families of
// tools/check at a size cap or at the real shapes, and the DiT step on random device weights.
#include "diagnostics/kernel_runs.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

#include "kernel_families.h"
#include "model/dit.h"
#include "model/dit_weights.h"
#include "ops/hip/hip_backend.h"
#include "pipeline/record.h"
#include "pipeline/sampler.h"
#include "pipeline/schedule.h"
#include "runtime/devices.h"
#include "runtime/portability.h"

namespace moss {
namespace {

// The quick self-test's cap on any tensor a case makes: the tails and every kernel instantiation
// run (the largest small case, 4500 x 1024, walks more tiles than the card has multiprocessors),
// the 1024x1024-and-up shapes (their host replay takes tens of seconds) do not.
constexpr int64_t kQuickMaxElements = int64_t(1) << 23;

kcheck::Options options_for(int device, int64_t max_elements) {
  kcheck::Options o;
  o.device = device;
  o.data = "";  // the shipped binary has no goldens: the VAE's tiny-decoder case needs the source tree
  o.max_elements = max_elements;
  return o;
}

std::vector<FamilyVerdict> verdicts(const std::vector<kcheck::FamilyResult>& results) {
  std::vector<FamilyVerdict> out;
  for (const kcheck::FamilyResult& r : results)
    out.push_back({r.name, r.passed, r.failed, r.skipped, r.worst, r.seconds});
  return out;
}

// ---- random DiT weights, made on the device -----------------------------------------------------
// Element i of a tensor: uniform of standard deviation `sd` around `mean` (splitmix64 of seed, i).
__global__ __launch_bounds__(256) void random_bf16_kernel(uint16_t* out, int64_t n, uint64_t seed, float mean,
                                                          float sd) {
  const int64_t i = int64_t(block_x()) * 256 + thread_x();
  if (i < n) {
    uint64_t z = seed + 0x9E3779B97F4A7C15ull * uint64_t(i + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const float v = mean + (float(z >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f) * sd * 1.7320508f;
    union {
      float f;
      uint32_t u;
    } bits{v};
    out[i] = uint16_t((bits.u + 0x7FFFu + ((bits.u >> 16) & 1u)) >> 16);  // round to nearest even
  }
}

// Every DiT weight resident on the device, random: what a resident run's source holds, without
// a file (norm weights near 1, other vectors small, matrices scaled by their fan-in).
class RandomDitSource : public DitWeightSource {
 public:
  RandomDitSource(Backend& be, const DitConfig& cfg) {
    HipContext& ctx = *hip_context_of(be);
    uint64_t seed = 1;
    for (const ExpectedTensor& e : dit_expected_tensors(cfg)) {
      if (e.optional) continue;
      if (e.dtypes.empty() || e.dtypes[0] != DType::BF16) throw failure("bench: DiT tensor " + e.name + " is not bf16");
      Tensor t = be.alloc(DType::BF16, e.shape);
      const bool norm = e.shape.size() == 1 && e.name.find("norm") != std::string::npos;
      const float mean = norm ? 1.0f : 0.0f;
      const float sd = e.shape.size() == 1 ? (norm ? 0.05f : 0.02f) : float(1.0 / std::sqrt(double(e.shape.back())));
      const int64_t n = t.numel();
      const unsigned blocks = unsigned((n + 255) / 256);
      hipLaunchKernelGGL(random_bf16_kernel, dim3(blocks), dim3(256), 0, ctx.stream(), static_cast<uint16_t*>(t.data),
                         n, ++seed * 0x51ED27ull, mean, sd);
      MOSS_HIP_CHECK(hipGetLastError());
      bytes_ += t.nbytes();
      tensors_[e.name] = t;
    }
    MOSS_HIP_CHECK(hipStreamSynchronize(ctx.stream()));
  }
  Tensor get(const std::string& name) override {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) throw failure("bench: no random DiT tensor " + name);
    return it->second;
  }
  size_t bytes() const { return bytes_; }

 private:
  std::map<std::string, Tensor> tensors_;
  size_t bytes_ = 0;
};

// The full-size DiT (transformer/config.json of MOSS-Image).
DitConfig full_dit_config() {
  DitConfig c;
  c.dim = 3072;
  c.ffn_dim = 8192;
  c.heads = 24;
  c.layers = 42;
  c.text_dim = 4096;
  c.freq_dim = 256;
  c.latent_channels = 128;
  c.rope_base = 10000.0;
  return c;
}

struct StepTimes {
  std::vector<double> steps;
  double median_after_first() const {
    std::vector<double> s(steps.begin() + (steps.size() > 1 ? 1 : 0), steps.end());
    std::sort(s.begin(), s.end());
    return s.empty() ? 0 : s[s.size() / 2];
  }
};

// The CLI's denoise loop (pipeline/sampler.h) with cfg 3 (cond and uncond rows, as the CLI's
// default), 64 text tokens per row, every block resident.
StepTimes dit_steps(int device, const BenchOptions& o, size_t& weight_bytes, size_t& pool_bytes) {
  auto be = make_hip_backend(device);
  const DitConfig cfg = full_dit_config();
  auto source = std::make_unique<RandomDitSource>(*be, cfg);
  weight_bytes = source->bytes();
  Dit dit(*be, std::move(source), cfg);
  const int64_t tokens = 64, gh = o.height / 16, gw = o.width / 16;
  Tensor states = host_tensor(DType::F32, {tokens, cfg.text_dim});
  Tensor noise = host_tensor(DType::F32, {cfg.latent_channels, gh, gw});
  std::vector<float> v(size_t(std::max(states.numel(), noise.numel())));
  kcheck::fill(v, 7, 1.0f);
  std::copy_n(v.begin(), states.numel(), states.ptr<float>());
  std::copy_n(v.begin(), noise.numel(), noise.ptr<float>());
  const Dit::Text cond = dit.embed_text(states), uncond = dit.embed_text(states);
  StepTimes t;
  SamplerSettings s{3.0f, {}, nullptr};
  sample(dit, cond, &uncond, noise, make_schedule(o.steps, 5.0f), s,
         [&](int, int, double sec) { t.steps.push_back(sec); });
  // The allocator's pool after the steps: the weights and the largest step's activations and
  // workspace, which it keeps cached for the next step.
  const HipMemoryStats m = hip_memory_stats(*be);
  pool_bytes = m.in_use_bytes + m.cached_bytes;
  return t;
}

}  // namespace

std::vector<FamilyVerdict> run_kernel_self_test(int device, bool full) {
  return verdicts(kcheck::run_families(options_for(device, full ? 0 : kQuickMaxElements)));
}

std::string runtime_versions() {
  int runtime = 0, driver = 0;
  (void)hipRuntimeGetVersion(&runtime);
  (void)hipDriverGetVersion(&driver);
  auto text = [](int v) {
    // CUDA: 1000·major + 10·minor; HIP: 10000000·major + 100000·minor + patch.
    char b[32];
    if (kPlatformNvidia) std::snprintf(b, sizeof b, "%d.%d", v / 1000, (v % 1000) / 10);
    else std::snprintf(b, sizeof b, "%d.%d.%d", v / 10000000, (v / 100000) % 100, v % 100000);
    return std::string(b);
  };
  return std::string(kPlatformNvidia ? "CUDA" : "HIP") + " runtime " + text(runtime) + ", driver " + text(driver);
}

int run_bench(const BenchOptions& o, int device) {
  const DeviceInfo d = [&] {
    for (const DeviceInfo& x : list_devices())
      if (x.index == device) return x;
    throw failure("bench: device " + std::to_string(device) + " vanished");
  }();
  const char* path = std::getenv("MOSSINFER_KERNELS");
  const std::string kernels = path && *path ? path : "native";
  const kcheck::DevicePeaks peak = kcheck::device_peaks(device);
  std::printf("moss-infer-hip bench: %s\ndevice %d: %s (%s, %.1f GiB); %s; kernels: %s\n\n", engine_version().c_str(),
              device, d.name.c_str(), d.arch.c_str(), double(d.total_bytes) / double(1ull << 30),
              runtime_versions().c_str(), kernels.c_str());
  std::fflush(stdout);

  // 1. Every kernel at the real shapes, checked and timed (the families' own tables).
  const auto t0 = std::chrono::steady_clock::now();
  kcheck::Options ko = options_for(device, 0);
  std::vector<kcheck::FamilyResult> families;
  for (const char* f : {"dit", "te", "vae"}) {
    ko.family = f;
    for (kcheck::FamilyResult& r : kcheck::run_families(ko)) families.push_back(std::move(r));
  }
  const double kernel_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // 2. The DiT step, every block resident, on random weights made on the device.
  size_t weight_bytes = 0, pool_bytes = 0;
  StepTimes resident;
  std::string dit_error;
  try {
    resident = dit_steps(device, o, weight_bytes, pool_bytes);
  } catch (const std::exception& e) {
    dit_error = e.what();
  }

  // 3. The summary block.
  std::printf("\n```\n# moss-infer-hip bench summary\n%s\n", engine_version().c_str());
  std::printf("device %d: %s, %s, %.1f GiB; %s; kernels %s\n", device, d.name.c_str(), d.arch.c_str(),
              double(d.total_bytes) / double(1ull << 30), runtime_versions().c_str(), kernels.c_str());
  std::printf("ceilings: %.0f TFLOP/s dense bf16, %.2f TB/s (%s)\n", peak.tflops, peak.gbs / 1000, peak.source.c_str());
  bool ok = true;
  for (const kcheck::FamilyResult& r : families) {
    ok = ok && r.ok();
    std::printf("kernels %s: %d passed, %d failed, %.1f s\n", r.name.c_str(), r.passed, r.failed, r.seconds);
  }
  std::printf("kernel rates at the real shapes (%.0f s):\n", kernel_s);
  for (const kcheck::FamilyResult& r : families)
    for (const kcheck::Timing& t : r.timings) {
      if (t.ms <= 0) continue;
      if (t.flops <= 0 && t.bytes <= 0) {  // a whole stage (the VAE decode): its time alone
        std::printf("  %-4s %-40s %-28s %9.3f ms\n", r.name.c_str(), t.kernel.c_str(), t.shape.c_str(), t.ms);
        continue;
      }
      const double rate = t.flops > 0 ? t.flops / (t.ms * 1e-3) / 1e12 : t.bytes / (t.ms * 1e-3) / 1e9;
      const double share = 100 * rate / (t.flops > 0 ? peak.tflops : peak.gbs);
      std::printf("  %-4s %-40s %-28s %9.3f ms %8.1f %s %4.0f%%\n", r.name.c_str(), t.kernel.c_str(), t.shape.c_str(),
                  t.ms, rate, t.flops > 0 ? "TFLOP/s" : "GB/s   ", share);
    }
  if (dit_error.empty()) {
    std::printf("DiT step %dx%d, cfg 3 (2 rows), 42 of 42 blocks resident (%.1f GiB of random bf16 weights): "
                "%.4f s median of steps 2..%d (",
                o.width, o.height, double(weight_bytes) / double(1ull << 30), resident.median_after_first(), o.steps);
    for (size_t i = 0; i < resident.steps.size(); ++i) std::printf("%s%.4f", i ? " " : "", resident.steps[i]);
    std::printf(")\n");
    const double gib = double(1ull << 30);
    std::printf("memory plan: all 42 DiT blocks resident: %.1f GiB of weights, %.1f GiB with the step's activations "
                "and workspace (the allocator's pool after the steps), of %.1f GiB on the device\n",
                double(weight_bytes) / gib, double(pool_bytes) / gib, double(d.total_bytes) / gib);
  } else {
    ok = false;
    std::printf("DiT step %dx%d: failed: %s\n", o.width, o.height, dit_error.c_str());
  }
  std::printf("not measured yet: the streamed DiT step (--vram-budget %.1f), the text encoder's forward\n```\n",
              o.vram_budget_gib);
  return ok ? 0 : 1;
}

}  // namespace moss
