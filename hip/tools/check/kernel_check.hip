// The shared machinery of `moss-check kernels` (kernel_check.h says what each piece is).
#include "kernel_check.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "ops/hip/hip_backend.h"

namespace kcheck {

void fill(std::vector<float>& v, uint64_t seed, float scale) {
  const float a = scale * 1.7320508f;
  for (size_t i = 0; i < v.size(); ++i) {
    const uint64_t z = mix(seed * 0x9E3779B97F4A7C15ull + 0xD1B54A32D192ED03ull * (i + 1));
    v[i] = (float(z >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f) * a;
  }
}

float uniform(uint64_t seed, uint64_t i, float lo, float hi) {
  const uint64_t z = mix(seed * 0x9E3779B97F4A7C15ull + 0xD1B54A32D192ED03ull * (i + 1));
  return lo + (hi - lo) * float(z >> 40) * (1.0f / 16777216.0f);
}

std::string shape_of(std::initializer_list<int64_t> d) {
  std::string s;
  for (int64_t v : d) s += (s.empty() ? "" : "x") + std::to_string(v);
  return s;
}

static moss::HipContext& context_of(moss::Backend& gpu) {
  moss::HipContext* ctx = moss::hip_context_of(gpu);
  if (!ctx) throw moss::failure("make_hip_backend did not return a HIP backend");
  return *ctx;
}

Env::Env(Table& t, const Options& o, int default_reps)
    : host_backend(moss::make_host_backend()),
      gpu_backend(moss::make_hip_backend(o.gpu())),
      host(*host_backend),
      gpu(*gpu_backend),
      ctx(context_of(gpu)),
      table(t),
      reps(default_reps),
      sustain_s(o.sustain_s),
      max_elements(o.max_elements) {}
Env::~Env() = default;

void admit(int64_t max_elements, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  if (max_elements > 0 && n > max_elements) throw OverSizeCap();
}

moss::Tensor poisoned(Env& e, moss::DType dt, const std::vector<int64_t>& dims) {
  admit(e, dims);
  moss::Tensor t = e.gpu.alloc(dt, dims);
  poison(t, e.stream());
  return t;
}

std::vector<float> fetch(Env& e, const moss::Tensor& dev) { return moss::to_f32_vector(e.gpu.download(dev)); }

void report(Env& e, const std::string& kernel, const std::string& shape, const std::vector<float>& got,
            const std::vector<float>& want, int64_t cols, double tol, double ms, double flops, double bytes) {
  const Compare c = compare(got, want);
  if (!(c.finite && c.rel_l2 <= tol)) {
    double scale = 0;
    for (float w : want) scale = std::max(scale, double(std::fabs(w)));
    for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
      const double d = std::fabs(double(got[i]) - double(want[i]));
      if (!std::isfinite(got[i]) || d > 10 * tol * std::max(scale, 1e-30)) {
        std::printf("  %s %s: first bad element [%lld, %lld]: got %.6g, want %.6g\n", kernel.c_str(), shape.c_str(),
                    (long long)(int64_t(i) / cols), (long long)(int64_t(i) % cols), double(got[i]), double(want[i]));
        break;
      }
    }
    if (got.size() != want.size())
      std::printf("  %s %s: %zu values, expected %zu\n", kernel.c_str(), shape.c_str(), got.size(), want.size());
  }
  e.table.row(kernel, shape, c, tol, ms, flops, bytes);
}

double time_sustained(hipStream_t s, const std::function<void()>& fn, int reps, int sustain_s) {
  if (sustain_s <= 0) return time_ms(s, fn, reps);
  // The launch count that fills the time at the burst rate (the clock only falls from there, so
  // the timed run lasts at least that long), once to warm the card up to the power cap's clock,
  // once timed.
  const double burst_ms = std::max(time_ms(s, fn, 1), 1e-3);
  const int launches = int(std::min(1e7, std::ceil(sustain_s * 1000.0 / burst_ms)));
  time_ms(s, fn, launches);
  return time_ms(s, fn, launches);
}

double time_it(Env& e, const std::function<void()>& fn, int reps) {
  return time_sustained(e.stream(), fn, reps > 0 ? reps : e.reps, e.sustain_s);
}

void record(Env& e, const std::string& kernel, const std::string& shape, double ms, double flops, double bytes) {
  e.timings.push_back({kernel, shape, ms, flops, bytes});
  e.table.timings.push_back({kernel, shape, ms, flops, bytes});
}

void guarded(Table& table, const std::string& what, const std::function<void()>& fn) {
  try {
    fn();
  } catch (const OverSizeCap&) {
    table.skipped++;
  } catch (const std::exception& ex) {
    std::printf("  %s: stopped by an exception: %s\n", what.c_str(), ex.what());
    table.row(what, "-", Compare{0, 0, false}, 0, 0);
    (void)hipGetLastError();
  }
}

void group(Table& table, const Options& o, const std::string& family, const std::string& name,
           const std::function<void()>& fn) {
  if (!o.selects(name)) return;
  std::printf("-- %s/%s\n", family.c_str(), name.c_str());
  std::fflush(stdout);
  const auto t0 = std::chrono::steady_clock::now();
  guarded(table, name, fn);
  std::printf("  (%s: %.1f s)\n", name.c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

void run_cases(Env& e, const std::vector<Case>& cases) {
  for (const Case& c : cases) guarded(e.table, c.op, [&] { c.run(e); });
}

void print_time_table(const std::vector<Timing>& timings, const DevicePeaks& peak, const std::string& what) {
  const double kPeakTflops = peak.tflops, kPeakGBs = peak.gbs;
  std::printf("\ntime at the %s (ceilings: %.1f TFLOP/s dense bf16, %.2f TB/s; %s)\n", what.c_str(), kPeakTflops,
              kPeakGBs / 1000, peak.source.c_str());
  std::printf("%-34s %-26s %9s %12s %7s\n", "kernel", "shape", "ms", "rate", "share");
  for (const Timing& t : timings) {
    char rate[32], share[16];
    if (t.flops > 0) {
      const double tf = t.flops / (t.ms * 1e-3) / 1e12;
      std::snprintf(rate, sizeof rate, "%.1f TFLOP/s", tf);
      std::snprintf(share, sizeof share, "%.0f%%", 100 * tf / kPeakTflops);
      if (kPeakTflops <= 0) std::snprintf(share, sizeof share, "-");  // an unknown card's ceilings
    } else {
      const double gbs = t.bytes / (t.ms * 1e-3) / 1e9;
      std::snprintf(rate, sizeof rate, "%.0f GB/s", gbs);
      std::snprintf(share, sizeof share, "%.0f%%", 100 * gbs / kPeakGBs);
      if (kPeakGBs <= 0) std::snprintf(share, sizeof share, "-");
    }
    std::printf("%-34s %-26s %9.4f %12s %7s\n", t.kernel.c_str(), t.shape.c_str(), t.ms, rate, share);
  }
}

void print_timed_list(const std::vector<Timing>& timings, const DevicePeaks& peak) {
  const double kPeakTflops = peak.tflops, kPeakGBs = peak.gbs;
  std::printf("\ntimed cases (share of %.1f TFLOP/s dense bf16 or %.2f TB/s; %s):\n", kPeakTflops, kPeakGBs / 1000,
              peak.source.c_str());
  for (const Timing& t : timings) {
    if (t.ms <= 0) continue;
    if (t.flops > 0)
      std::printf("  %-34s %-30s %9.3f ms %7.1f TFLOP/s %5.1f%%\n", t.kernel.c_str(), t.shape.c_str(), t.ms,
                  t.flops / (t.ms * 1e-3) / 1e12, 100.0 * t.flops / (t.ms * 1e-3) / 1e12 / kPeakTflops);
    else
      std::printf("  %-34s %-30s %9.3f ms %7.0f GB/s     %5.1f%%\n", t.kernel.c_str(), t.shape.c_str(), t.ms,
                  t.bytes / (t.ms * 1e-3) / 1e9, 100.0 * t.bytes / (t.ms * 1e-3) / 1e9 / kPeakGBs);
  }
}

}  // namespace kcheck
