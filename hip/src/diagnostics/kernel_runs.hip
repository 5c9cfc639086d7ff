// The device part of `self-test` and `bench` (kernel_runs.h): the kernel-check families of
// tools/check at a size cap or at the real shapes, then bench's whole stages (bench_stages.h).
#include "diagnostics/kernel_runs.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

#include "kernel_families.h"
#include "diagnostics/bench_stages.h"
#include "ops/hip/hip_backend.h"
#include "pipeline/record.h"
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

  // 1. Every kernel at the real shapes, checked and timed (the families' own tables), unless
  // --stages-only.
  const auto t0 = std::chrono::steady_clock::now();
  kcheck::Options ko = options_for(device, 0);
  std::vector<kcheck::FamilyResult> families;
  for (const char* f : {"dit", "te", "vae"}) {
    if (o.stages_only) break;
    ko.family = f;
    for (kcheck::FamilyResult& r : kcheck::run_families(ko)) families.push_back(std::move(r));
  }
  const double kernel_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // 2. The whole stages on random weights (diagnostics/bench_stages.h): the text encoder, the DiT
  // step resident and streamed, the VAE decode.
  StageBench stages;
  {
    auto be = make_hip_backend(device);
    stages = run_stage_bench(*be, full_size_shapes(), o, 64, [](Backend& b) {
      const HipMemoryStats m = hip_memory_stats(b);
      return m.in_use_bytes + m.cached_bytes;
    });
  }

  // 3. The summary block.
  std::printf("\n```\n# moss-infer-hip bench summary\n%s\n", engine_version().c_str());
  std::printf("device %d: %s, %s, %.1f GiB; %s; kernels %s\n", device, d.name.c_str(), d.arch.c_str(),
              double(d.total_bytes) / double(1ull << 30), runtime_versions().c_str(), kernels.c_str());
  if (peak.tflops > 0 && peak.gbs > 0)
    std::printf("ceilings: %.0f TFLOP/s dense bf16, %.2f TB/s (%s)\n", peak.tflops, peak.gbs / 1000, peak.source.c_str());
  else
    std::printf("ceilings: unknown (%s)\n", peak.source.c_str());
  bool ok = true;
  for (const kcheck::FamilyResult& r : families) {
    ok = ok && r.ok();
    std::printf("kernels %s: %d passed, %d failed, %.1f s\n", r.name.c_str(), r.passed, r.failed, r.seconds);
  }
  if (o.stages_only) std::printf("kernels: not checked (--stages-only)\n");
  else std::printf("kernel rates at the real shapes (%.0f s):\n", kernel_s);
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
  for (const std::string& line : stages.lines) std::printf("%s\n", line.c_str());
  std::printf("```\n");
  ok = ok && stages.ok;
  return ok ? 0 : 1;
}

}  // namespace moss
