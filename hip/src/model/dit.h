// The MOSS-Image DiT (docs/model.md section 4): text embedder with its two blocks, shared
// modulation, 4-axis centred RoPE, SiTU FFNs, the main blocks (some may be skipped) and the
// video head. Written once against Backend& so the host reference and the HIP kernels run the
// same code; weights come from a DitWeightSource when each part runs.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "io/model_folder.h"
#include "io/safetensors.h"
#include "model/dit_weights.h"
#include "ops/backend.h"

namespace moss {

struct DitConfig {
  int64_t dim = 0, ffn_dim = 0, heads = 0, layers = 0, text_dim = 0, freq_dim = 0, latent_channels = 0;
  double rope_base = 10000.0;
  // An INT8 ConvRot DiT (docs/int8_convrot.md): the rotation group of each quantized main-block
  // projection ("layers.N.proj.q", ... "layers.N.proj.ffn_down"), whose weights are then an I8
  // `.weight` [out, in] and an F32 `.weight_scale` [out, 1]. Not in config.json: the loader fills
  // it from the file's comfy_quant records (model/int8_convrot_layers.h). Empty: all bf16.
  std::map<std::string, int64_t> int8_groups;
  // LoRA corrections kept beside INT8 projections (DitSideLora), by projection, in order. Not in
  // config.json: the engine fills it from the LoRA set (LoraMergePlan::dit_side_forms), whose
  // side tensors the weight files then hold. Empty: none.
  DitSideForms side_loras;
  int64_t head_dim() const { return dim / heads; }
  bool int8() const { return !int8_groups.empty(); }
};

// transformer/config.json (keys dim, ffn_dim, num_heads, num_layers, text_dim, freq_dim,
// latent_channels, rope_base); moss::failure naming the file and key when one is missing or bad.
DitConfig parse_dit_config(const std::string& config_json_path);
// The same from a parsed document; `source` names it in messages.
DitConfig dit_config_from_json(const nlohmann::json& config, const std::string& source);

// Every checkpoint tensor with the dtype and shape the config implies (rope.bands optional: it is
// recomputed, never read).
std::vector<ExpectedTensor> dit_expected_tensors(const DitConfig& cfg);

// y = x·wᵀ through the projection's op (CoreOps::linear, or linear_int8 for an INT8 one), then
// each LoRA correction kept beside it added to y in order, computed from x as given (the
// unrotated rows: DitSideLora). What Dit runs for every main-block projection.
void dit_project(Backend& be, const DitProjection& p, const Tensor& x, Tensor& y);

// Intermediate results of one forward, host f32: "temb" [dim], "modulation" [6, dim],
// "text_embedded" [T, dim], "block<i>" [gh·gw + T, dim] (image rows first) for each block run.
struct DitTrace {
  std::map<std::string, Tensor> tensors;
};

// A host f32 latent [C, gh, gw] as host f32 tokens [gh·gw, C], and back (exact copies).
Tensor latent_to_tokens(const Tensor& latent);
Tensor tokens_to_latent(const Tensor& tokens, int64_t gh, int64_t gw);

class Dit {
 public:
  // Checks the weights against the config, then reads each weight when its part runs
  // (be.upload(weights.get(name)) through make_upload_on_use_source).
  Dit(Backend& be, const WeightFiles& weights, const DitConfig& cfg);
  // The same with a caller-chosen weight source (resident or streamed on the GPU backend).
  Dit(Backend& be, std::unique_ptr<DitWeightSource> source, const DitConfig& cfg);

  // A prompt's text rows after text_embedder (proj + its two blocks), on the backend. They do
  // not depend on the timestep: compute them once per prompt.
  struct Text {
    Tensor rows;  // backend f32 [T, dim], contiguous
    int64_t tokens = 0;
  };
  Text embed_text(const Tensor& text_states);  // host f32 [T, text_dim]

  // One forward: latent host f32 [C, gh, gw] -> velocity host f32 [C, gh, gw]. The blocks listed
  // in skip_layers (0-based) are not run. The latent is used as given (no rounding).
  Tensor forward(const Tensor& latent, const Text& text, float timestep, const std::vector<int>& skip_layers,
                 DitTrace* trace = nullptr);

  // Several rows (cond and uncond) through one pass over the blocks: each block runs for every
  // row that does not skip it before the next block starts, so a streamed block's weights cross
  // to the device once per pass. Returns one velocity per row, in order.
  struct Row {
    const Text* text = nullptr;
    std::vector<int> skip_layers;
  };
  std::vector<Tensor> forward_rows(const Tensor& latent, const std::vector<Row>& rows, float timestep,
                                   DitTrace* trace = nullptr);

  // forward_rows on a token-major latent already on the backend: `tokens` f32 [gh·gw, C] (token
  // r·gw + c holds the latent's channels at (r, c); latent_to_tokens); returns each row's velocity
  // on the backend in the same layout. The sampler keeps its latent so on the device, so a step
  // moves nothing between host and device.
  std::vector<Tensor> forward_tokens(const Tensor& tokens, int64_t gh, int64_t gw, const std::vector<Row>& rows,
                                     float timestep, DitTrace* trace = nullptr);

  const DitConfig& config() const { return cfg_; }
  Backend& backend() { return be_; }

 private:
  struct Modulation;
  struct Workspace;
  struct RowState;
  struct Stack;
  Modulation timestep_modulation(float timestep);
  void text_block(int index, Tensor& x, const Tensor& sin, const Tensor& cos);
  // Block w for rows[first, first + count), adjacent in the stack, as one matrix.
  void main_block(const DitMainBlockWeights& w, Stack& st, std::vector<RowState>& rows, size_t first, size_t count,
                  const Modulation& mod, Workspace& ws);
  void apply_pending(Stack& st, RowState& row, const Modulation& mod);
  // Whether this forward's INT8 blocks take int8 QKᵀ (MOSSINFER_INT8_QK, else the backend's answer).
  bool int8_qk_attention() const;
  void attention(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out);
  // dit_project on this backend: the projection, then any LoRA corrections beside it, from x.
  void project(const DitProjection& p, const Tensor& x, Tensor& y);
  // The same from rows already rotated and quantized for an INT8 projection of their group; x:
  // the same rows unrotated, which a LoRA beside the projection reads (null where none is).
  void project(const DitProjection& p, const QuantizedRows& xq, const Tensor* x, Tensor& y);

  Tensor stacked_rope_tables(const std::vector<int64_t>& text_tokens, int64_t gh, int64_t gw);

  Backend& be_;
  std::unique_ptr<DitWeightSource> src_;
  DitConfig cfg_;
  // The stacked RoPE tables per shape {gh, gw, text tokens of each row}, made once: the denoise
  // loop does not rebuild and re-upload them every step.
  std::map<std::vector<int64_t>, Tensor> rope_tables_;
};

}  // namespace moss
