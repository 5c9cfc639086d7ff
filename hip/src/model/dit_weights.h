// Where the DiT's weights come from. The model asks for a block's weights at the moment the
// block runs and drops them when it is done; the source decides what that costs: an upload per
// use (the default here), a resident copy, or a stream from disk on the GPU backend. Residency
// is the source's business, never the model code's.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "ops/backend.h"

namespace moss {

class DitWeightSource {
 public:
  virtual ~DitWeightSource() = default;
  // The named checkpoint tensor as the backend's ops read it; kept alive by the returned view.
  virtual Tensor get(const std::string& name) = 0;
  // A forward is about to run these main blocks, in this order (a streaming source starts
  // bringing in the first streamed one).
  virtual void begin_forward(const std::vector<int>& block_order) {}
  // Block `index` runs next: its weights must be usable once this returns (in stream order).
  virtual void before_block(int index) {}
  // Bytes a pass over every block copies to the device (a streaming source: its streamed blocks'
  // images, packed where they travel packed; 0 when every block is resident). `bench` divides it
  // by the step time for the copy rate.
  virtual size_t streamed_bytes_per_pass() const { return 0; }
};

// be.upload(weights.get(name)) on every request (on the host backend: the mmap'd view itself).
std::unique_ptr<DitWeightSource> make_upload_on_use_source(Backend& be, const WeightFiles& weights);

// A linear layer's weight and optional bias.
struct DitLinear {
  Tensor w, b;
  bool has_bias = false;
  const Tensor* bias() const { return has_bias ? &b : nullptr; }
  static DitLinear load(DitWeightSource& src, const std::string& prefix, bool with_bias);
};

// One text-embedder block (text_embedder.blocks.<i>.*): fused qkv and FFN projections, biases.
struct DitTextBlockWeights {
  Tensor norm1, norm2, q_norm, k_norm;
  DitLinear qkv, proj, ffn_up, ffn_gate, ffn_down;
  static DitTextBlockWeights load(DitWeightSource& src, int index);
};

// A LoRA's correction kept beside an INT8 ConvRot projection, which has no bf16 weight to merge
// it into (docs/loras.md, "LoRAs on an INT8 ConvRot DiT"). With x the projection's input as the
// layer gets it (unrotated, unquantized) and y its output:
//   LowRank: y += ((x·downᵀ)·upᵀ)·coef   down [r, K] and up [N, r] the file's factors (bf16 stays
//            bf16, f16 widens to f32), coef f32 [N] every element the LoRA's weight × scale
//            (CoreOps::add's gate);
//   Dense:   y += x·deltaᵀ               delta bf16 [N, K] = bf16(weight × scale × ΔW): LoHa,
//            LoKr and full deltas, made by the LoRA merge op on a zero weight.
// Its tensors are DiT tensors of the projection's block (dit_side_lora_name), so they stay
// resident or stream with the block as its weights do.
enum class DitSideForm { LowRank, Dense };
struct DitSideLora {
  DitSideForm form = DitSideForm::LowRank;
  Tensor down, up, coef;  // LowRank
  Tensor delta;           // Dense
};
// "<projection>.lora_side.<i>.<role>" (projection "layers.N.proj.o"; role down, up, coef or delta).
std::string dit_side_lora_name(const std::string& projection, size_t i, const char* role);
// Each projection's side corrections, in the order they apply: DitConfig::side_loras.
using DitSideForms = std::map<std::string, std::vector<DitSideForm>>;

// A main block's projection (no bias): a bf16 weight, or INT8 ConvRot (docs/int8_convrot.md):
// the I8 weight, its F32 row scales and the rotation group (CoreOps::linear_int8's operands);
// an INT8 one may carry LoRA corrections beside it.
struct DitProjection {
  Tensor w, scale;
  int64_t group = 0;  // 0: bf16
  std::vector<DitSideLora> side;
  bool int8() const { return group > 0; }
  // Whether its output adds corrections computed from the unrotated input x: then the input must
  // exist as rows of its own, beside any quantized rows made for linear_int8.
  bool side_lora() const { return !side.empty(); }
};

// One main block (layers.<i>.*): separate q/k/v/o, fused ffn_up_gate, no biases. `int8_groups`:
// DitConfig::int8_groups (the quantized projections and their groups); `side`: DitConfig::side_loras.
struct DitMainBlockWeights {
  Tensor norm1, norm2, q_norm, k_norm;
  DitProjection q, k, v, o, ffn_up_gate, ffn_down;
  // Whether any projection carries LoRA corrections (DitProjection::side_lora): the block's
  // unrotated activation rows are then needed as well as their quantized form.
  bool has_side_lora() const {
    for (const DitProjection* p : {&q, &k, &v, &o, &ffn_up_gate, &ffn_down})
      if (p->side_lora()) return true;
    return false;
  }
  static DitMainBlockWeights load(DitWeightSource& src, int index, const std::map<std::string, int64_t>& int8_groups,
                                  const DitSideForms& side = {});
};

}  // namespace moss
