// The HIP backend: one non-blocking stream per backend, a HipContext shared by the op
// families, and a caching allocator for tensors.
//
// Allocator: requests are rounded up to a size class (four classes per power of two, so at
// most a quarter is wasted) and each class keeps a free list. A tensor's shared owner returns
// its block to the list when the last view dies; all work runs on the one stream, so a block
// handed out again is only touched by launches queued after the ones that used it before.
// Device memory is returned to the driver only when an allocation fails (then the cache is
// freed and the allocation retried) or when the last tensor and the backend are gone.
#include "ops/hip/hip_backend.h"

#include "kernels/packed_bf16.h"
#include "ops/hip/op_profiler.h"

#include <cstdio>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace moss {
namespace {

class DevicePool {
 public:
  DevicePool() = default;
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;
  ~DevicePool() {
    for (auto& [cls, blocks] : free_)
      for (void* p : blocks) (void)hipFree(p);
  }

  static size_t size_class(size_t bytes) {
    constexpr size_t kMin = 512;
    if (bytes <= kMin) return kMin;
    size_t top = kMin;
    while (top * 2 <= bytes) top *= 2;  // top <= bytes < 2 top
    const size_t step = top / 4;
    return (bytes + step - 1) / step * step;
  }

  void* take(size_t cls) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(cls);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_ -= cls;
        in_use_ += cls;
        return p;
      }
    }
    // Growing the pool in low-peak mode: first give back the cached blocks of other sizes, so
    // the memory the pool holds stays close to the live peak (a stage that allocates many sizes
    // once, like the VAE decode, would otherwise hold the sum of each size's peak).
    if (low_peak_ && cached_bytes() > 0) release_cache();
    void* p = nullptr;
    if (hipMalloc(&p, cls) != hipSuccess) {
      (void)hipGetLastError();
      release_cache();  // hipFree waits for the device, so no queued launch still uses them
      size_t free_b = 0, total_b = 0;
      (void)hipMemGetInfo(&free_b, &total_b);
      const hipError_t err = hipMalloc(&p, cls);
      if (err != hipSuccess) {
        (void)hipGetLastError();
        throw failure("out of device memory: a tensor of " + std::to_string(cls) + " bytes does not fit (" +
                      std::to_string(free_b >> 20) + " MiB free of " + std::to_string(total_b >> 20) + " MiB; " +
                      std::to_string(in_use_ >> 20) + " MiB held by live tensors)");
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    ++allocations_;
    in_use_ += cls;
    return p;
  }

  void give(void* p, size_t cls) {
    std::lock_guard<std::mutex> lock(mu_);
    free_[cls].push_back(p);
    in_use_ -= cls;
    cached_ += cls;
  }

  bool low_peak_ = false;  // see Backend::set_low_peak

  size_t cached_bytes() {
    std::lock_guard<std::mutex> lock(mu_);
    return cached_;
  }

  HipMemoryStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return {in_use_, cached_, allocations_};
  }

 public:
  void release_cache() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [cls, blocks] : free_) {
      for (void* p : blocks) (void)hipFree(p);
      cached_ -= cls * blocks.size();
      blocks.clear();
    }
  }

 private:
  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t in_use_ = 0, cached_ = 0, allocations_ = 0;
};

// Owns the backend's stream (declared first, destroyed last).
struct StreamHolder {
  struct Lazy {};
  hipStream_t stream = nullptr;
  explicit StreamHolder(int device) { create(device); }
  explicit StreamHolder(Lazy) {}
  void create(int device) {
    MOSS_HIP_CHECK(hipSetDevice(device));
    MOSS_HIP_CHECK(hipStreamCreateWithFlags(&stream, hipStreamNonBlocking));
  }
  ~StreamHolder() {
    if (stream) {
      (void)hipStreamSynchronize(stream);
      (void)hipStreamDestroy(stream);
    }
  }
  StreamHolder(const StreamHolder&) = delete;
  StreamHolder& operator=(const StreamHolder&) = delete;
};

class HipBackend final : public Backend {
 public:
  explicit HipBackend(int device)
      : stream_(device),
        ctx_(std::make_unique<HipContext>(device, stream_.stream)),
        pool_(std::make_shared<DevicePool>()) {
    core_ = make_hip_core_ops(*ctx_);
    text_ = make_hip_text_ops(*ctx_);
    vae_ = make_hip_vae_ops(*ctx_);
    lora_ = make_hip_lora_ops(*ctx_);
    // MOSSINFER_PROFILE=1: every op bracketed by events (ops/hip/op_profiler.h, the families'
    // hook); otherwise the families run without a hook.
    if ((profiler_ = OpProfiler::from_env(stream_.stream))) set_op_hook(profiler_.get());
  }
  ~HipBackend() override {
    if (profiler_) {
      try {
        profiler_->report(name());
      } catch (const std::exception& ex) {
        std::fprintf(stderr, "op profile: %s\n", ex.what());
      }
    }
    (void)hipStreamSynchronize(stream_.stream);
    if (copy_stream_.stream) (void)hipStreamSynchronize(copy_stream_.stream);
    for (hipEvent_t e : events_) (void)hipEventDestroy(e);
    // The op families hold a reference to the context: they go first.
    core_.reset();
    text_.reset();
    vae_.reset();
    lora_.reset();
    profiler_.reset();  // its events before the stream
  }

  DType gemm_input_dtype() const override { return DType::BF16; }

  std::string name() const override { return "hip " + ctx_->arch(); }
  Where where() const override { return Where::Device; }

  Tensor alloc(DType t, const std::vector<int64_t>& dims) override {
    Tensor out(nullptr, t, dims, Where::Device);
    const size_t cls = DevicePool::size_class(out.nbytes());
    out.data = pool_->take(cls);
    std::shared_ptr<DevicePool> pool = pool_;
    out.owner = std::shared_ptr<void>(out.data, [pool, cls](void* p) { pool->give(p, cls); });
    return out;
  }

  Tensor upload(const Tensor& host) override {
    if (host.where == Where::Device) return host;
    Tensor dev = alloc(host.dtype, host.dims());
    if (host.contiguous()) {
      ctx_->copy_to_device(dev.data, host.data, host.nbytes());
      return dev;
    }
    // A strided host view (its 2-D reading): pack its rows first.
    const size_t es = dtype_size(host.dtype), row_bytes = size_t(host.cols()) * es;
    std::vector<char> packed(size_t(host.rows()) * row_bytes);
    for (int64_t r = 0; r < host.rows(); ++r)
      std::memcpy(packed.data() + size_t(r) * row_bytes,
                  static_cast<const char*>(host.data) + size_t(r * host.row_stride()) * es, row_bytes);
    ctx_->copy_to_device(dev.data, packed.data(), packed.size());
    return dev;
  }

  Tensor download(const Tensor& t) override {
    if (t.where == Where::Host) return t;
    Tensor out = host_tensor(t.dtype, t.dims());
    const size_t es = dtype_size(t.dtype), row_bytes = size_t(t.cols()) * es;
    if (out.numel() > 0)
      MOSS_HIP_CHECK(hipMemcpy2DAsync(out.data, row_bytes, t.data, size_t(t.row_stride()) * es, row_bytes,
                                      size_t(t.rows()), hipMemcpyDeviceToHost, stream_.stream));
    MOSS_HIP_CHECK(hipStreamSynchronize(stream_.stream));
    return out;
  }

  void synchronize() override { MOSS_HIP_CHECK(hipStreamSynchronize(stream_.stream)); }

  void set_low_peak(bool on) override { pool_->low_peak_ = on; }
  void release_cached() override {
    MOSS_HIP_CHECK(hipStreamSynchronize(stream_.stream));
    pool_->release_cache();
  }
  size_t free_memory() const override {
    size_t free_b = 0, total_b = 0;
    MOSS_HIP_CHECK(hipMemGetInfo(&free_b, &total_b));
    return free_b + pool_->stats().cached_bytes;
  }
  size_t total_memory() const override {
    size_t free_b = 0, total_b = 0;
    MOSS_HIP_CHECK(hipMemGetInfo(&free_b, &total_b));
    return total_b;
  }

  // ---- weight streaming: a copy stream beside the compute stream, fences as events ----------
  // Thread-safe (the streaming source pins blocks from several threads): a thread's current
  // device is its own, so each call selects the backend's device before allocating.
  Tensor alloc_pinned(size_t bytes) override {
    MOSS_HIP_CHECK(hipSetDevice(ctx_->device()));
    void* p = nullptr;
    MOSS_HIP_CHECK(hipHostMalloc(&p, bytes ? bytes : 1, hipHostMallocDefault));
    Tensor out(p, DType::U8, {int64_t(bytes)}, Where::Host);
    out.owner = std::shared_ptr<void>(p, [](void* q) { (void)hipHostFree(q); });
    return out;
  }
  Fence copy_async(const Tensor& src, Tensor& dst, Fence after) override {
    if (src.nbytes() > dst.nbytes()) throw std::invalid_argument("copy_async: destination too small");
    ensure_copy_stream();
    if (after) MOSS_HIP_CHECK(hipStreamWaitEvent(copy_stream_.stream, event(after), 0));
    MOSS_HIP_CHECK(hipMemcpyAsync(dst.data, src.data, src.nbytes(), hipMemcpyHostToDevice, copy_stream_.stream));
    return record(copy_stream_.stream);
  }
  Fence compute_fence() override { return record(stream_.stream); }
  void compute_wait(Fence copy) override {
    if (copy) MOSS_HIP_CHECK(hipStreamWaitEvent(stream_.stream, event(copy), 0));
  }
  void unpack_bf16(const PackedBf16& layout, const Tensor& packed, Tensor& out) override {
    check_unpack_bf16(layout, packed, out, Where::Device);
    unpack_bf16_device(layout, static_cast<const uint8_t*>(packed.data), static_cast<uint16_t*>(out.data),
                       stream_.stream);
  }

  HipContext& context() { return *ctx_; }
  HipMemoryStats memory_stats() { return pool_->stats(); }

 private:
  // Fences are event ids in a ring, 1-based (0 means "nothing to wait for"). A fence is waited
  // on soon after it is made (the streaming source waits one block later), far inside the ring.
  static constexpr size_t kFenceRing = 512;
  void ensure_copy_stream() {
    if (!copy_stream_.stream) copy_stream_.create(ctx_->device());
  }
  hipEvent_t event(Fence f) { return events_[(f - 1) % kFenceRing]; }
  Fence record(hipStream_t s) {
    if (events_.empty()) {
      events_.resize(kFenceRing);
      for (hipEvent_t& e : events_) MOSS_HIP_CHECK(hipEventCreateWithFlags(&e, hipEventDisableTiming));
    }
    const Fence f = ++last_fence_;
    MOSS_HIP_CHECK(hipEventRecord(event(f), s));
    return f;
  }

  StreamHolder stream_;
  std::unique_ptr<HipContext> ctx_;
  std::shared_ptr<DevicePool> pool_;
  std::shared_ptr<OpProfiler> profiler_;  // null unless MOSSINFER_PROFILE is set
  StreamHolder copy_stream_{StreamHolder::Lazy{}};
  std::vector<hipEvent_t> events_;
  Fence last_fence_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_hip_backend(int device) {
  int count = 0;
  MOSS_HIP_CHECK(hipGetDeviceCount(&count));
  if (device < 0 || device >= count)
    throw usage_error("HIP device " + std::to_string(device) + " does not exist (" + std::to_string(count) +
                      " device(s))");
  return std::make_unique<HipBackend>(device);
}

HipContext* hip_context_of(Backend& be) {
  auto* hip = dynamic_cast<HipBackend*>(&be);
  return hip ? &hip->context() : nullptr;
}

HipMemoryStats hip_memory_stats(Backend& be) {
  auto* hip = dynamic_cast<HipBackend*>(&be);
  return hip ? hip->memory_stats() : HipMemoryStats{};
}

}  // namespace moss
