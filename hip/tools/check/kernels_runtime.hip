// `moss-check kernels --family runtime`: does the HIP runtime work on this machine, and do the
// portability layer and the matrix leaf compute what they should? Runs on a real GPU (the H200 for
// the NVIDIA build) and prints one row per check (check, PASS/FAIL, time, detail); its counts go
// into the closing "N passed, M failed".
//
// Groups (--filter):
//   runtime      device list (--device N: that device, else the first supported one), memory
//                info, alloc/free, streams, events, pinned host memory, async copies both ways
//                across two streams;
//   portability  a trivial kernel, wave shuffles, the math helpers of runtime/portability.h;
//   matrix_tile  the matrix_tile kernel (cases/matrix_tile_kernel.h) against a host fp64
//                reference (exact on integer tiles, every output written, odd shapes and
//                strides, and a timed larger shape).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cases/matrix_tile_kernel.h"
#include "runtime/devices.h"
#include "runtime/portability.h"
#include "kernel_check.h"
#include "tensor/tensor.h"

namespace {

using moss::kWorkgroupSize;

// ---- kernels under test ---------------------------------------------------------------------------
__global__ __launch_bounds__(kWorkgroupSize) void axpy_kernel(float a, const float* x, float* y, int n) {
  const int i = int(moss::block_x()) * kWorkgroupSize + int(moss::thread_x());
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ __launch_bounds__(kWorkgroupSize) void wave_reduce_kernel(const float* x, float* sums, float* maxes) {
  const float v = x[moss::block_x() * kWorkgroupSize + moss::thread_x()];
  const float s = moss::wave_sum(v), m = moss::wave_max(v);
  if (moss::lane_id() == 0) {
    sums[moss::block_x()] = s;
    maxes[moss::block_x()] = m;
  }
}

enum MathFn { kExp, kFastExp, kLog, kSqrt, kRsqrt, kTanh, kSigmoid, kMathFns };
const char* const kMathNames[kMathFns] = {"exp_f", "fast_exp", "log_f", "sqrt_f", "rsqrt_f", "tanh_f", "sigmoid_f"};

__global__ __launch_bounds__(kWorkgroupSize) void math_kernel(const float* x, float* out, int n) {
  const int i = int(moss::block_x()) * kWorkgroupSize + int(moss::thread_x());
  if (i >= n) return;
  const float v = x[i], pos = moss::abs_f(v) + 1e-3f;
  out[kExp * n + i] = moss::exp_f(v);
  out[kFastExp * n + i] = moss::fast_exp(v);
  out[kLog * n + i] = moss::log_f(pos);
  out[kSqrt * n + i] = moss::sqrt_f(pos);
  out[kRsqrt * n + i] = moss::rsqrt_f(pos);
  out[kTanh * n + i] = moss::tanh_f(v);
  out[kSigmoid * n + i] = moss::sigmoid_f(v);
}

// ---- small RAII helpers -------------------------------------------------------------------------
struct DeviceBuffer {
  void* ptr = nullptr;
  explicit DeviceBuffer(size_t bytes) { MOSS_HIP_CHECK(hipMalloc(&ptr, bytes)); }
  ~DeviceBuffer() { (void)hipFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <class T> T* as() const { return static_cast<T*>(ptr); }
};
struct PinnedBuffer {
  void* ptr = nullptr;
  explicit PinnedBuffer(size_t bytes) { MOSS_HIP_CHECK(hipHostMalloc(&ptr, bytes, hipHostMallocDefault)); }
  ~PinnedBuffer() { (void)hipHostFree(ptr); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  template <class T> T* as() const { return static_cast<T*>(ptr); }
};
struct Stream {
  hipStream_t s = nullptr;
  Stream() { MOSS_HIP_CHECK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking)); }
  ~Stream() { (void)hipStreamDestroy(s); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
};
struct Event {
  hipEvent_t e = nullptr;
  Event() { MOSS_HIP_CHECK(hipEventCreate(&e)); }
  ~Event() { (void)hipEventDestroy(e); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};

template <class T>
std::vector<T> download(const void* dev, size_t count) {
  std::vector<T> host(count);
  MOSS_HIP_CHECK(hipMemcpy(host.data(), dev, count * sizeof(T), hipMemcpyDeviceToHost));
  return host;
}
template <class T>
void upload(void* dev, const std::vector<T>& host) {
  MOSS_HIP_CHECK(hipMemcpy(dev, host.data(), host.size() * sizeof(T), hipMemcpyHostToDevice));
}

std::string format(const char* fmt, double a, double b = 0, double c = 0, double d = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, a, b, c, d);
  return buf;
}

// ---- the table ---------------------------------------------------------------------------------
struct Outcome {
  bool ok;
  std::string detail;
};

// Rows of their own format, counted in the shared table.
struct Runner {
  kcheck::Table& table;
  void header() const { std::printf("%-28s %-6s %10s  %s\n", "check", "result", "time", "detail"); }
  bool run(const std::string& name, const std::function<Outcome()>& check) {
    const auto t0 = std::chrono::steady_clock::now();
    Outcome out{false, ""};
    try {
      out = check();
    } catch (const std::exception& e) {
      out = {false, e.what()};
    }
    (void)hipGetLastError();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    (out.ok ? table.passed : table.failed)++;
    std::printf("%-28s %-6s %8.2f ms  %s\n", name.c_str(), out.ok ? "PASS" : "FAIL", ms, out.detail.c_str());
    std::fflush(stdout);
    return out.ok;
  }
};

// ---- matrix_tile against the host --------------------------------------------------------------
struct GemmCase {
  int m, n, k, lda, ldb, ldc;
  bool integers;  // small integers: exact in bf16 and in every fp32 partial sum
};

// Runs matrix_tile_gemm once on poisoned output and compares every element (and the untouched
// padding between rows) with an fp64 reference on the same bf16 inputs.
Outcome check_matrix_tile(const GemmCase& g, std::mt19937& rng, double* tflops = nullptr) {
  std::vector<uint16_t> a(size_t(g.m) * g.lda, 0), b(size_t(g.n) * g.ldb, 0);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> small(-4, 4);
  auto draw = [&] { return g.integers ? float(small(rng)) : normal(rng); };
  for (int r = 0; r < g.m; ++r)
    for (int c = 0; c < g.k; ++c) a[size_t(r) * g.lda + c] = moss::f32_to_bf16(draw());
  for (int r = 0; r < g.n; ++r)
    for (int c = 0; c < g.k; ++c) b[size_t(r) * g.ldb + c] = moss::f32_to_bf16(draw());

  DeviceBuffer da(a.size() * 2), db(b.size() * 2), dc(size_t(g.m) * g.ldc * 4);
  upload(da.ptr, a);
  upload(db.ptr, b);
  MOSS_HIP_CHECK(hipMemset(dc.ptr, 0xff, size_t(g.m) * g.ldc * 4));  // NaN poison
  Stream stream;
  Event start, stop;
  MOSS_HIP_CHECK(hipEventRecord(start.e, stream.s));
  moss::matrix_tile_gemm(da.as<moss::bf16>(), db.as<moss::bf16>(), dc.as<float>(), g.m, g.n, g.k, g.lda, g.ldb, g.ldc,
                         stream.s);
  MOSS_HIP_CHECK(hipEventRecord(stop.e, stream.s));
  MOSS_HIP_CHECK(hipStreamSynchronize(stream.s));
  float ms = 0;
  MOSS_HIP_CHECK(hipEventElapsedTime(&ms, start.e, stop.e));
  const std::vector<float> c = download<float>(dc.ptr, size_t(g.m) * g.ldc);

  double err2 = 0, ref2 = 0, max_err = 0;
  size_t unwritten = 0, padding_touched = 0, mismatches = 0;
  for (int r = 0; r < g.m; ++r) {
    for (int col = 0; col < g.n; ++col) {
      double want = 0;
      for (int kk = 0; kk < g.k; ++kk)
        want += double(moss::bf16_to_f32(a[size_t(r) * g.lda + kk])) * moss::bf16_to_f32(b[size_t(col) * g.ldb + kk]);
      const float got = c[size_t(r) * g.ldc + col];
      if (std::isnan(got)) {
        ++unwritten;
        continue;
      }
      const double e = std::fabs(got - want);
      if (g.integers && e != 0) ++mismatches;
      err2 += e * e;
      ref2 += want * want;
      max_err = std::max(max_err, e);
    }
    for (int col = g.n; col < g.ldc; ++col) padding_touched += !std::isnan(c[size_t(r) * g.ldc + col]);
  }
  const double rel = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  const double flops = 2.0 * g.m * g.n * g.k;
  if (tflops) *tflops = flops / (ms * 1e-3) / 1e12;
  std::string detail = format("%dx%dx%d", g.m, g.n, g.k) + format(" rel_l2 %.2e max_err %.2e", rel, max_err) +
                       format(" %.3f ms", ms);
  bool ok = unwritten == 0 && padding_touched == 0;
  if (unwritten) detail += format(" UNWRITTEN %.0f", double(unwritten));
  if (padding_touched) detail += format(" PADDING WRITTEN %.0f", double(padding_touched));
  if (g.integers) {
    ok = ok && mismatches == 0;
    if (mismatches) detail += format(" INEXACT %.0f", double(mismatches));
  } else {
    // Products of bf16 are exact; only the fp32 accumulation differs from fp64 (tensor cores may
    // truncate while aligning, ~1e-6 expected). Layout errors show up as O(1) and in the exact cases.
    ok = ok && rel < 1e-4;
  }
  return {ok, detail};
}

// The runtime group: finds the device (-1: none supported, or not the one asked for).
int check_runtime(Runner& run, int requested) {
  int device = -1;
  run.run("devices", [&]() -> Outcome {
    const std::vector<moss::DeviceInfo> devices = moss::list_devices();
    std::string detail = std::to_string(devices.size()) + " device(s)";
    for (const moss::DeviceInfo& d : devices) {
      detail += "; [" + std::to_string(d.index) + "] " + d.name + " " + d.arch +
                format(" %.1f GiB ", d.total_bytes / 1073741824.0) + (d.supported ? "supported" : d.reason);
      if (d.supported && device < 0 && (requested < 0 || requested == d.index)) device = d.index;
    }
    if (device < 0) detail += requested < 0 ? "; no supported device" : "; --device is not a supported device";
    return {device >= 0, detail};
  });
  if (device < 0) return device;

  run.run("set device", [&]() -> Outcome {
    MOSS_HIP_CHECK(hipSetDevice(device));
    hipDeviceProp_t p{};
    MOSS_HIP_CHECK(hipGetDeviceProperties(&p, device));
    int runtime = 0;
    MOSS_HIP_CHECK(hipRuntimeGetVersion(&runtime));
    return {p.warpSize == moss::kWaveSize, std::string(p.name) + " " + moss::device_arch(p) +
                                               format(" warp %.0f, %.0f CUs/SMs, runtime %.0f", p.warpSize,
                                                      p.multiProcessorCount, runtime)};
  });

  run.run("memory info", []() -> Outcome {
    size_t free_b = 0, total_b = 0;
    MOSS_HIP_CHECK(hipMemGetInfo(&free_b, &total_b));
    return {free_b > 0 && free_b <= total_b, format("free %.2f GiB of %.2f GiB", free_b / 1073741824.0,
                                                    total_b / 1073741824.0)};
  });

  run.run("alloc/memset/free 1 GiB", []() -> Outcome {
    const size_t bytes = size_t(1) << 30;
    size_t free_before = 0, free_during = 0, total = 0;
    MOSS_HIP_CHECK(hipMemGetInfo(&free_before, &total));
    std::vector<uint8_t> tail;
    {
      DeviceBuffer buf(bytes);
      MOSS_HIP_CHECK(hipMemGetInfo(&free_during, &total));
      MOSS_HIP_CHECK(hipMemset(buf.ptr, 0x5a, bytes));
      tail.resize(4096);
      MOSS_HIP_CHECK(hipMemcpy(tail.data(), buf.as<uint8_t>() + bytes - tail.size(), tail.size(), hipMemcpyDeviceToHost));
    }
    bool pattern = true;
    for (uint8_t v : tail) pattern = pattern && v == 0x5a;
    const bool accounted = free_before >= free_during + bytes / 2;  // the allocation shows in free memory
    return {pattern && accounted, format("free %.2f -> %.2f GiB while held", free_before / 1073741824.0,
                                         free_during / 1073741824.0) +
                                      (pattern ? "" : " PATTERN WRONG")};
  });

  run.run("streams", []() -> Outcome {
    Stream s1, s2;
    MOSS_HIP_CHECK(hipStreamSynchronize(s1.s));
    MOSS_HIP_CHECK(hipStreamSynchronize(s2.s));
    return {hipStreamQuery(s1.s) == hipSuccess, "2 non-blocking streams created, idle, destroyed"};
  });

  run.run("events", []() -> Outcome {
    Stream s;
    Event a, b;
    DeviceBuffer buf(64 << 20);
    MOSS_HIP_CHECK(hipEventRecord(a.e, s.s));
    MOSS_HIP_CHECK(hipMemsetAsync(buf.ptr, 0, 64 << 20, s.s));
    MOSS_HIP_CHECK(hipEventRecord(b.e, s.s));
    MOSS_HIP_CHECK(hipEventSynchronize(b.e));
    float ms = -1;
    MOSS_HIP_CHECK(hipEventElapsedTime(&ms, a.e, b.e));
    return {ms >= 0 && hipEventQuery(b.e) == hipSuccess, format("64 MiB memset timed at %.3f ms", ms)};
  });

  run.run("pinned host memory", []() -> Outcome {
    const size_t n = 16 << 20;
    PinnedBuffer p(n * sizeof(uint32_t));
    for (size_t i = 0; i < n; ++i) p.as<uint32_t>()[i] = uint32_t(i * 2654435761u);
    bool ok = true;
    for (size_t i = 0; i < n; i += 4099) ok = ok && p.as<uint32_t>()[i] == uint32_t(i * 2654435761u);
    return {ok, "64 MiB page-locked, written and read on the host"};
  });

  run.run("async copies both ways", []() -> Outcome {
    // Pinned -> device on stream 1, device -> pinned on stream 2 ordered by an event.
    const size_t n = 64 << 20, bytes = n * sizeof(uint32_t);
    PinnedBuffer src(bytes), dst(bytes);
    for (size_t i = 0; i < n; ++i) src.as<uint32_t>()[i] = uint32_t(i ^ 0x9e3779b9u);
    std::memset(dst.ptr, 0, bytes);
    DeviceBuffer dev(bytes);
    Stream s1, s2;
    Event h2d_start, h2d_done, d2h_done;
    MOSS_HIP_CHECK(hipEventRecord(h2d_start.e, s1.s));
    MOSS_HIP_CHECK(hipMemcpyAsync(dev.ptr, src.ptr, bytes, hipMemcpyHostToDevice, s1.s));
    MOSS_HIP_CHECK(hipEventRecord(h2d_done.e, s1.s));
    MOSS_HIP_CHECK(hipStreamWaitEvent(s2.s, h2d_done.e, 0));
    MOSS_HIP_CHECK(hipMemcpyAsync(dst.ptr, dev.ptr, bytes, hipMemcpyDeviceToHost, s2.s));
    MOSS_HIP_CHECK(hipEventRecord(d2h_done.e, s2.s));
    MOSS_HIP_CHECK(hipStreamSynchronize(s2.s));
    float h2d_ms = 0, d2h_ms = 0;
    MOSS_HIP_CHECK(hipEventElapsedTime(&h2d_ms, h2d_start.e, h2d_done.e));
    MOSS_HIP_CHECK(hipEventElapsedTime(&d2h_ms, h2d_done.e, d2h_done.e));
    const bool same = std::memcmp(src.ptr, dst.ptr, bytes) == 0;
    return {same, format("256 MiB: H2D %.1f GB/s, D2H %.1f GB/s", bytes / (h2d_ms * 1e6), bytes / (d2h_ms * 1e6)) +
                      (same ? ", round trip identical" : ", ROUND TRIP DIFFERS")};
  });

  return device;
}

void check_portability(Runner& run) {
  run.run("trivial kernel (axpy)", []() -> Outcome {
    const int n = (1 << 20) + 7;  // a tail block
    std::vector<float> x(n), y(n);
    for (int i = 0; i < n; ++i) {
      x[i] = float(i % 1000);
      y[i] = float(i % 7);
    }
    DeviceBuffer dx(n * 4), dy(n * 4);
    upload(dx.ptr, x);
    upload(dy.ptr, y);
    const int blocks = (n + kWorkgroupSize - 1) / kWorkgroupSize;
    hipLaunchKernelGGL(axpy_kernel, dim3(blocks), dim3(kWorkgroupSize), 0, nullptr, 2.0f, dx.as<float>(),
                       dy.as<float>(), n);
    MOSS_HIP_CHECK(hipGetLastError());
    MOSS_HIP_CHECK(hipDeviceSynchronize());
    const std::vector<float> got = download<float>(dy.ptr, n);
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += got[i] != 2.0f * x[i] + y[i];
    return {bad == 0, format("y = 2x + y over %.0f elements, %.0f wrong", n, bad)};
  });

  run.run("wave sum / max (shuffles)", []() -> Outcome {
    const int blocks = 1024, n = blocks * kWorkgroupSize;
    std::vector<float> x(n);
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> dist(-1000, 1000);
    for (float& v : x) v = float(dist(rng));
    DeviceBuffer dx(n * 4), ds(blocks * 4), dm(blocks * 4);
    upload(dx.ptr, x);
    hipLaunchKernelGGL(wave_reduce_kernel, dim3(blocks), dim3(kWorkgroupSize), 0, nullptr, dx.as<float>(),
                       ds.as<float>(), dm.as<float>());
    MOSS_HIP_CHECK(hipGetLastError());
    const std::vector<float> sums = download<float>(ds.ptr, blocks), maxes = download<float>(dm.ptr, blocks);
    int bad = 0;
    for (int b = 0; b < blocks; ++b) {
      float s = 0, m = -1e30f;
      for (int l = 0; l < kWorkgroupSize; ++l) {
        s += x[b * kWorkgroupSize + l];
        m = std::max(m, x[b * kWorkgroupSize + l]);
      }
      bad += sums[b] != s || maxes[b] != m;
    }
    return {bad == 0, format("%.0f waves, %.0f wrong", blocks, bad)};
  });

  run.run("math helpers", []() -> Outcome {
    const int n = 4096;
    std::vector<float> x(n);
    for (int i = 0; i < n; ++i) x[i] = -12.0f + 24.0f * float(i) / float(n - 1);
    DeviceBuffer dx(n * 4), dout(size_t(kMathFns) * n * 4);
    upload(dx.ptr, x);
    hipLaunchKernelGGL(math_kernel, dim3((n + kWorkgroupSize - 1) / kWorkgroupSize), dim3(kWorkgroupSize), 0, nullptr,
                       dx.as<float>(), dout.as<float>(), n);
    MOSS_HIP_CHECK(hipGetLastError());
    const std::vector<float> out = download<float>(dout.ptr, size_t(kMathFns) * n);
    std::string detail;
    bool ok = true;
    for (int f = 0; f < kMathFns; ++f) {
      double worst = 0;
      for (int i = 0; i < n; ++i) {
        // pos rounded to float as the kernel computes it, so the reference sees the same input.
        const double v = x[i], pos = double(std::fabs(x[i]) + 1e-3f);
        const double want = f == kExp || f == kFastExp ? std::exp(v)
                            : f == kLog                ? std::log(pos)
                            : f == kSqrt               ? std::sqrt(pos)
                            : f == kRsqrt              ? 1.0 / std::sqrt(pos)
                            : f == kTanh               ? std::tanh(v)
                                                       : 1.0 / (1.0 + std::exp(-v));
        worst = std::max(worst, std::fabs(out[size_t(f) * n + i] - want) / std::max(std::fabs(want), 1e-6));
      }
      ok = ok && worst < 1e-5;
      detail += std::string(f ? ", " : "") + kMathNames[f] + format(" %.1e", worst);
    }
    return {ok, "max rel err on [-12, 12]: " + detail};
  });
}

// The matrix_tile cases: name, shape and strides, small integers (exact) or normal values; the
// timed one reports its rate too.
struct TileCase {
  const char* name;
  GemmCase g;
  bool rate;
};
const TileCase kTileCases[] = {
    {"matrix_tile exact (ints)", {48, 64, 96, 96, 96, 64, true}, false},
    {"matrix_tile exact, tails", {37, 29, 53, 53, 61, 35, true}, false},
    {"matrix_tile random, tails", {77, 45, 100, 108, 103, 50, false}, false},
    {"matrix_tile 512x1024x2048", {512, 1024, 2048, 2048, 2048, 1024, false}, true},
};

void check_matrix_tiles(Runner& run) {
  std::mt19937 rng(2024);
  for (const TileCase& c : kTileCases)
    run.run(c.name, [&] {
      double tflops = 0;
      Outcome o = check_matrix_tile(c.g, rng, c.rate ? &tflops : nullptr);
      if (c.rate) o.detail += format(" (%.2f TFLOP/s, untiled)", tflops);
      return o;
    });
}

}  // namespace

void kcheck::runtime_family(Table& table, const Options& o) {
  if (!o.selects_any({"runtime", "portability", "matrix_tile"})) return;
  Runner run{table};
  std::printf("moss-check kernels --family runtime: built for %s\n", moss::built_architectures().c_str());
  run.header();
  if (o.selects("runtime")) {
    if (check_runtime(run, o.device) < 0) return;
  } else {
    MOSS_HIP_CHECK(hipSetDevice(o.gpu()));
  }
  if (o.selects("portability")) check_portability(run);
  if (o.selects("matrix_tile")) check_matrix_tiles(run);
}
