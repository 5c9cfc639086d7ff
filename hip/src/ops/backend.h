// A backend: where tensors live plus the op families. The host reference and the HIP
// kernels are the two implementations; model code (text encoder, DiT, VAE) is written once
// against this interface.
#pragma once
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ops/core_ops.h"
#include "ops/lora_ops.h"
#include "ops/text_ops.h"
#include "ops/vae_ops.h"
#include "tensor/packed_bf16.h"
#include "tensor/tensor.h"

namespace moss {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "host", "hip gfx1100", "hip nvidia sm_90"
  virtual Where where() const = 0;

  // Uninitialised f32/bf16/... tensor on this backend (owned by the returned tensor).
  virtual Tensor alloc(DType t, const std::vector<int64_t>& dims) = 0;
  // The dtype the model code gives the activations that only feed GEMMs and attention (the
  // normalised-and-modulated GEMM inputs, q/k/v, the attention output, the gated FFN hidden):
  // f32 on the host reference, bf16 on the GPU, whose GEMM and attention kernels round their
  // operands to bf16 anyway (so storing bf16 halves the traffic and changes no result). The
  // residual stream stays f32 everywhere.
  virtual DType gemm_input_dtype() const { return DType::F32; }
  // A copy of a host tensor on this backend (the host backend may return the view itself
  // when the tensor is already usable there).
  virtual Tensor upload(const Tensor& host) = 0;
  // A contiguous host copy of a tensor of this backend.
  virtual Tensor download(const Tensor& t) = 0;
  virtual void synchronize() {}
  // Returns cached free device memory to the device (before a stage whose peak must stay
  // within a plan: the allocator's cache of other sizes would count against it).
  virtual void release_cached() {}
  // Low-peak mode: the allocator gives back its cached blocks before it grows, so a one-shot
  // stage of many tensor sizes (the VAE decode) holds about its live peak. Off for loops,
  // which reuse their blocks and would otherwise pay an allocation per size per pass.
  virtual void set_low_peak(bool on) {}
  // Device memory free now (the allocator's cache counted as free) and in all (bytes); 0 when
  // the backend has no device memory.
  virtual size_t free_memory() const { return 0; }
  virtual size_t total_memory() const { return 0; }

  // ---- weight streaming (docs/product.md section 5) ----------------------------------------------
  // Copies of weights run on a copy stream beside the compute stream. A fence marks the work a
  // stream has been given so far; the other stream can wait for it. The defaults are the
  // host's: copies are immediate and fences trivial.
  using Fence = uint64_t;
  // Uninitialised page-locked host bytes, so copies from them can overlap compute (host: plain
  // host memory). Thread-safe: streaming sources fill their images from several threads.
  virtual Tensor alloc_pinned(size_t bytes) { return host_tensor(DType::U8, {int64_t(bytes)}); }
  // dst (allocated on this backend, same bytes) <- src (pinned host), on the copy stream after
  // its earlier copies and after the compute fence `after`; returns the copy's fence.
  virtual Fence copy_async(const Tensor& src, Tensor& dst, Fence after);
  virtual Fence compute_fence() { return 0; }
  // The compute stream waits for a copy fence before its next op.
  virtual void compute_wait(Fence copy) {}
  // out (bf16, layout.n values) <- the values packed in `packed` (bytes; tensor/packed_bf16.h),
  // both on this backend, on the compute stream. The default is the host reference.
  virtual void unpack_bf16(const PackedBf16& layout, const Tensor& packed, Tensor& out);

  CoreOps& core() { return *core_; }
  TextOps& text() { return *text_; }
  VaeOps& vae() { return *vae_; }
  LoraOps& lora() { return *lora_; }

 protected:
  // Every op of the three families runs inside `hook` (ops/op_hook.h; null: none).
  void set_op_hook(OpHook* hook) {
    core_->set_hook(hook);
    text_->set_hook(hook);
    vae_->set_hook(hook);
    lora_->set_hook(hook);
  }

  std::unique_ptr<CoreOps> core_;
  std::unique_ptr<TextOps> text_;
  std::unique_ptr<VaeOps> vae_;
  std::unique_ptr<LoraOps> lora_;  // the merge of LoRA updates into the weights (docs/loras.md)
};

inline Backend::Fence Backend::copy_async(const Tensor& src, Tensor& dst, Fence) {
  if (dst.data && src.data) std::memcpy(dst.data, src.data, src.nbytes());
  return 0;
}

// Backend::unpack_bf16's operands, both where the backend keeps its tensors.
inline void check_unpack_bf16(const PackedBf16& layout, const Tensor& packed, const Tensor& out, Where where) {
  if (out.where != where || packed.where != where || out.dtype != DType::BF16 || out.numel() != layout.n ||
      !out.contiguous() || packed.nbytes() < layout.bytes())
    throw std::invalid_argument("unpack_bf16: out must be " + std::to_string(layout.n) + " contiguous bf16 values and packed " +
                                std::to_string(layout.bytes()) + " bytes, both on the " +
                                (where == Where::Device ? "device" : "host"));
}

inline void Backend::unpack_bf16(const PackedBf16& layout, const Tensor& packed, Tensor& out) {
  check_unpack_bf16(layout, packed, out, Where::Host);
  unpack_bf16_reference(layout, static_cast<const uint8_t*>(packed.data), static_cast<uint16_t*>(out.data));
}

// transposed_v: the host reference answers CoreOps::attention_reads_transposed_v with yes, so the
// DiT runs the flow AMD's attention takes (v projected transposed, Vᵀ read as it is); the
// results are the same bits either way, which the tests prove on the host.
// int8_unit_in_epilogue: its answer to CoreOps::int8_unit_in_gemm_epilogue (no: the INT8 FFN's
// flow of NVIDIA's native path, the f32 product and gated_unit_quantized; the same bits too).
// int8_qk_attention: its answer to CoreOps::attention_int8_qk, at every head_dim (no by default,
// so an INT8 DiT on the host keeps the bf16-K attention's results; yes runs the int8 QKᵀ
// reference, docs/attention_int8_qk.md, which changes the results within its quantization).
std::unique_ptr<Backend> make_host_backend(bool transposed_v = false, bool int8_unit_in_epilogue = true,
                                           bool int8_qk_attention = false);
// The GPU backend on HIP device `device` (ops/hip). Builds without device code refuse.
std::unique_ptr<Backend> make_hip_backend(int device);

}  // namespace moss
