// The small library of kernel checks behind `moss-check kernels` (kernels_cmd.hip; llm.c's
// dev/cuda pattern, ggml's test-backend-ops idea): run a GPU op on random inputs, compare it with
// the host replay of the same op (ops/host), with outputs poisoned (NaN) beforehand so an
// unwritten element fails, time it, and print one table row per case and "N passed, M failed" at
// the end. Pieces: the device's ceilings, deterministic fills, poisoning, the comparison and its
// table row (Table, report), timing (time_ms, time_sustained, time_it, record and the two summary
// tables), the environment a family's cases run in (Env: host and GPU backends, stream, seed), the
// groups --filter picks (Options, group) and the case table (Op and Case: each row an op and its
// spec, shapes, dtypes, timed or not, as data; run_cases runs a table, each case guarded).
// The quick form (`moss-infer-hip self-test`): Options::max_elements caps the size of any tensor a
// case makes (admit); a case over the cap is skipped whole before it computes, so the same tables
// give the small shapes (tails, every kernel instantiation) without the real-shape cases.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ops/backend.h"
#include "ops/hip/hip_context.h"
#include "runtime/device_ceilings.h"
#include "runtime/portability.h"
#include "tensor/tensor.h"

namespace kcheck {

// The ceilings a timed kernel's rate is shown against: dense bf16 matrix rate and DRAM bandwidth.
// NVIDIA: the table of runtime/device_ceilings.h, by the card's name (measured, or its datasheet,
// said which); a card not in it has none (0, "unknown"), never another card's. AMD: from the device's own
// properties, CUs x dense bf16 WMMA flops per CU and clock (RDNA3 512, RDNA4 1024:
// bench/amd_model.md) x the peak clock, and 2 x memory clock x bus width (an estimate of the
// board's figure; the card's datasheet may differ by its memory's data rate).
struct DevicePeaks {
  double tflops = 0, gbs = 0;
  std::string source;
};
inline DevicePeaks device_peaks(int device) {
  hipDeviceProp_t p;
  MOSS_HIP_CHECK(hipGetDeviceProperties(&p, device));
  const std::string arch = moss::device_arch(p);
#if MOSS_PLATFORM_NVIDIA
  const moss::KnownCeilings known = moss::nvidia_ceilings(p.name);
  return {known.tflops, known.gbs, arch + ": " + known.source};
#else
  const double flops_per_cu_clk = arch.rfind("gfx12", 0) == 0 ? 1024.0 : 512.0;
  DevicePeaks d;
  d.tflops = p.multiProcessorCount * flops_per_cu_clk * (p.clockRate * 1e3) / 1e12;
  d.gbs = 2.0 * (p.memoryClockRate * 1e3) * (p.memoryBusWidth / 8.0) / 1e9;
  d.source = arch + ": " + std::to_string(p.multiProcessorCount) + " CUs at " + std::to_string(p.clockRate / 1000) +
             " MHz, " + std::to_string(p.memoryBusWidth) + "-bit memory";
  return d;
#endif
}

// Deterministic random host tensors.
struct Rng {
  std::mt19937_64 gen;
  explicit Rng(uint64_t seed) : gen(seed) {}
  float normal(float scale = 1.0f) { return std::normal_distribution<float>(0.0f, scale)(gen); }
  float uniform(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(gen); }
};

inline moss::Tensor random_host(moss::DType t, const std::vector<int64_t>& dims, Rng& rng, float scale = 1.0f) {
  moss::Tensor h = moss::host_tensor(t, dims);
  for (int64_t i = 0; i < h.numel(); ++i) {
    float v = rng.normal(scale);
    if (t == moss::DType::F32) h.ptr<float>()[i] = v;
    else if (t == moss::DType::BF16) h.ptr<uint16_t>()[i] = moss::f32_to_bf16(v);
    else throw std::invalid_argument("random_host: f32 or bf16 only");
  }
  return h;
}

// Fills a device tensor with NaN (0xFFFF bf16 / 0xFFFFFFFF f32 are NaN), so elements an op
// forgets to write are caught by the comparison.
inline void poison(const moss::Tensor& dev, hipStream_t s) {
  MOSS_HIP_CHECK(hipMemsetAsync(dev.data, 0xFF, dev.nbytes(), s));
}

struct Compare {
  double rel_l2 = 0, max_abs = 0;
  bool finite = true;
};

inline Compare compare(const std::vector<float>& got, const std::vector<float>& want) {
  Compare c;
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    if (!std::isfinite(got[i])) c.finite = false;
    double d = double(got[i]) - double(want[i]);
    num += d * d;
    den += double(want[i]) * double(want[i]);
    c.max_abs = std::fmax(c.max_abs, std::fabs(d));
  }
  c.rel_l2 = std::sqrt(num / (den > 0 ? den : 1.0));
  if (got.size() != want.size()) c.finite = false;
  return c;
}

// Times fn (already warmed up once) over `reps` launches on stream s; milliseconds each.
inline double time_ms(hipStream_t s, const std::function<void()>& fn, int reps = 10) {
  hipEvent_t a, b;
  MOSS_HIP_CHECK(hipEventCreate(&a));
  MOSS_HIP_CHECK(hipEventCreate(&b));
  fn();
  MOSS_HIP_CHECK(hipEventRecord(a, s));
  for (int i = 0; i < reps; ++i) fn();
  MOSS_HIP_CHECK(hipEventRecord(b, s));
  MOSS_HIP_CHECK(hipEventSynchronize(b));
  float ms = 0;
  MOSS_HIP_CHECK(hipEventElapsedTime(&ms, a, b));
  MOSS_HIP_CHECK(hipEventDestroy(a));
  MOSS_HIP_CHECK(hipEventDestroy(b));
  return double(ms) / reps;
}

// time_ms over `reps` launches, or, with sustain_s > 0 (--sustain), over as many launches as fill
// that many seconds, after as many again as a warm-up: the rate at the clock a sustained load leaves
// (the card's power cap), not a short burst's.
double time_sustained(hipStream_t s, const std::function<void()>& fn, int reps, int sustain_s);

struct Timing {
  std::string kernel, shape;
  double ms, flops, bytes;
};

struct Table {
  int passed = 0, failed = 0, skipped = 0;
  std::vector<Timing> timings;  // every family's timed cases (record), for bench's summary
  double worst = 0;  // the largest relative L2 / tolerance of a passing or failing row (0 when exact)
  void header() const {
    std::printf("%-28s %-26s %10s %10s %9s %8s %s\n", "kernel", "shape", "rel_l2", "max_err", "ms", "rate", "result");
  }
  // rate: achieved TFLOP/s (flops > 0) or GB/s (bytes > 0); tolerance on relative L2.
  void row(const std::string& kernel, const std::string& shape, const Compare& c, double tol, double ms,
           double flops = 0, double bytes = 0) {
    const bool ok = c.finite && c.rel_l2 <= tol;
    (ok ? passed : failed)++;
    if (c.finite && tol > 0) worst = std::fmax(worst, c.rel_l2 / tol);
    char rate[32] = "";
    if (flops > 0 && ms > 0) std::snprintf(rate, sizeof rate, "%.0fTF/s", flops / (ms * 1e-3) / 1e12);
    else if (bytes > 0 && ms > 0) std::snprintf(rate, sizeof rate, "%.0fGB/s", bytes / (ms * 1e-3) / 1e9);
    std::printf("%-28s %-26s %10.2e %10.2e %9.4f %8s %s\n", kernel.c_str(), shape.c_str(), c.rel_l2, c.max_abs, ms,
                rate, ok ? "ok" : (c.finite ? "FAIL" : "FAIL (non-finite/unwritten)"));
    std::fflush(stdout);
  }
  int finish() const {
    if (skipped) std::printf("%d cases over the size cap skipped\n", skipped);
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 && passed > 0 ? 0 : 1;
  }
};

// ---- the shared machinery of the kernel families (kernel_check.hip) -------------------------------
// splitmix64's finaliser (the fills' hash).
inline uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
// Deterministic uniform values of standard deviation `scale`, value i from seed (fast enough for
// 100M elements).
void fill(std::vector<float>& v, uint64_t seed, float scale);
// Uniform on [lo, hi): value i of `seed`.
float uniform(uint64_t seed, uint64_t i, float lo, float hi);

// "3x4x5".
std::string shape_of(std::initializer_list<int64_t> d);

// What `moss-check kernels` was asked for (kernels_cmd.hip's header says what each means).
struct Options {
  int device = -1;      // -1: not given (the runtime family picks the first supported device; others 0)
  std::string family = "all";
  std::string filter;   // run only the groups whose name contains this (all when empty)
  std::string data = "hip/tests/data";
  int sustain_s = 0;    // --sustain: timed cases run back to back this long (0: a short burst)
  int64_t max_elements = 0;  // cases making a tensor of more elements are skipped (0: no cap)
  int gpu() const { return device < 0 ? 0 : device; }
  bool selects(const std::string& group) const { return group.find(filter) != std::string::npos; }
  bool selects_any(std::initializer_list<const char*> groups) const {
    for (const char* g : groups)
      if (selects(g)) return true;
    return false;
  }
};

// A family's cases run here: the host replay's backend, the HIP backend on the chosen device, its
// stream, the shared table, the seed of the next random operand and the timed cases.
struct Env {
  Env(Table& t, const Options& o, int default_reps);
  ~Env();
  std::unique_ptr<moss::Backend> host_backend, gpu_backend;
  moss::Backend& host;
  moss::Backend& gpu;
  moss::HipContext& ctx;
  Table& table;
  int reps;  // time_it's launches when the case names none
  int sustain_s;  // Options::sustain_s
  int64_t max_elements;  // Options::max_elements
  uint64_t seed = 1;
  std::vector<Timing> timings;
  hipStream_t stream() const { return ctx.stream(); }
};

// A case over the size cap (Options::max_elements) throws this from admit: guarded counts it as
// skipped, neither passed nor failed.
struct OverSizeCap : std::exception {
  const char* what() const noexcept override { return "over the size cap"; }
};
// Throws OverSizeCap when a tensor of these dimensions exceeds the cap (none when the cap is 0).
void admit(int64_t max_elements, const std::vector<int64_t>& dims);
inline void admit(const Env& e, const std::vector<int64_t>& dims) { admit(e.max_elements, dims); }

// A device tensor of NaN (poisoned), of dtype dt (f32 when not named); admitted first.
moss::Tensor poisoned(Env& e, moss::DType dt, const std::vector<int64_t>& dims);
inline moss::Tensor poisoned(Env& e, const std::vector<int64_t>& dims) { return poisoned(e, moss::DType::F32, dims); }
std::vector<float> fetch(Env& e, const moss::Tensor& dev);

// One table row, the device's `got` against the host replay's `want` (a [*, cols] matrix) within
// `tol` (relative L2); a failing case first prints its first bad element (row, column).
void report(Env& e, const std::string& kernel, const std::string& shape, const std::vector<float>& got,
            const std::vector<float>& want, int64_t cols, double tol, double ms = 0, double flops = 0,
            double bytes = 0);
// Milliseconds per launch of fn over `reps` launches (0: the family's default); with --sustain, over
// as many launches as fill that many seconds, after as many again as a warm-up.
double time_it(Env& e, const std::function<void()>& fn, int reps = 0);
// A timed case for the family's closing summary.
void record(Env& e, const std::string& kernel, const std::string& shape, double ms, double flops, double bytes);

// Runs one case or group; an exception fails it (one row, with its message) and the run goes on.
void guarded(Table& table, const std::string& what, const std::function<void()>& fn);
// Runs group `name` of a family when the filter selects it ("-- family/name" first, its time after).
void group(Table& table, const Options& o, const std::string& family, const std::string& name,
           const std::function<void()>& fn);

// The closing summaries of the timed cases against the device's ceilings: a table under
// "time at the <what> (ceilings: ...)", or a list under "timed cases (share of ...)".
void print_time_table(const std::vector<Timing>& timings, const DevicePeaks& peak, const std::string& what);
void print_timed_list(const std::vector<Timing>& timings, const DevicePeaks& peak);

// One row of a case table: the op (its name for a row when the case throws) and the call with its
// spec, the op's own struct of shapes, dtypes and timed or not (each op names its tolerance).
struct Case {
  std::string op;
  std::function<void(Env&)> run;
};
// An op of a case table: its name and the function that runs one spec. A table lists its rows as
// op({spec...}): the braced list initialises the op's struct, so the row reads as data.
template <class Spec>
struct Op {
  const char* name;
  void (*fn)(Env&, const Spec&);
  Case operator()(Spec spec) const { return (*this)(name, spec); }
  // A row under a name of its own (the case's label when it throws).
  Case operator()(const char* label, Spec spec) const {
    auto f = fn;
    return {label, [f, spec](Env& e) { f(e, spec); }};
  }
};
// Runs a case table in order, each case guarded (a throwing case fails alone).
void run_cases(Env& e, const std::vector<Case>& cases);

// The families (kernels_runtime.hip, kernels_dit.hip, kernels_te.hip, kernels_vae.hip).
void runtime_family(Table& table, const Options& o);
void dit_family(Table& table, const Options& o);
void te_family(Table& table, const Options& o);
void vae_family(Table& table, const Options& o);
void lora_family(Table& table, const Options& o);  // kernels_lora.hip

}  // namespace kcheck
