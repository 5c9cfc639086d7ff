#include "model/dit.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/dit_tables.h"
#include "util/backend_env.h"
#include "util/error.h"
#include "util/interrupt.h"

namespace moss {

namespace {

// Attention's softmax scale for heads of hd dims.
float softmax_scale(int64_t hd) { return float(1.0 / std::sqrt(double(hd))); }

constexpr float kRmsEps = 1e-6f;

// An INT8 ffn_up_gate's output is kept in f32 (ffn_down's quantization reads fp32 values) for this
// many rows at a time: its SiTU unit, 2048 x 8192 f32 (64 MiB at full size), where the unit is in
// the int8 GEMM's epilogue (CoreOps::linear_int8_gated_unit), else the whole product [hidden |
// gate], 2048 x 2·8192 (128 MiB, half the bf16 product of every row at 1024x1024 with cfg, 8704
// rows); still 512 or 1024 output tiles for the GEMM.
constexpr int64_t kInt8FfnChunkRows = 2048;

std::string dims_text(const Tensor& t) { return t.shape_str() + " " + dtype_name(t.dtype); }

// A host copy that owns its storage (download may hand back the backend's own buffer on the
// host backend, which later ops overwrite).
Tensor snapshot(Backend& be, const Tensor& t) {
  const Tensor h = be.download(t);
  Tensor out = host_tensor(h.dtype, h.dims());
  std::memcpy(out.data, h.data, h.nbytes());
  return out;
}

// dst[c·rows + r] = src[r·cols + c]: a [rows, cols] f32 matrix transposed, in tiles so that
// both sides stay in cache.
void transpose(const float* src, int64_t rows, int64_t cols, float* dst) {
  constexpr int64_t kTile = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile)
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) dst[c * rows + r] = src[r * cols + c];
    }
}

}  // namespace

Tensor latent_to_tokens(const Tensor& latent) {
  if (latent.where != Where::Host || latent.dtype != DType::F32 || latent.rank != 3 || !latent.contiguous())
    throw failure("a latent must be a contiguous host f32 [C, gh, gw], got " + dims_text(latent));
  const int64_t C = latent.shape[0], n = latent.shape[1] * latent.shape[2];
  Tensor tokens = host_tensor(DType::F32, {n, C});
  transpose(latent.ptr<const float>(), C, n, tokens.ptr<float>());
  return tokens;
}

Tensor tokens_to_latent(const Tensor& tokens, int64_t gh, int64_t gw) {
  if (tokens.where != Where::Host || tokens.dtype != DType::F32 || tokens.rank != 2 || !tokens.contiguous() ||
      tokens.rows() != gh * gw)
    throw failure("latent tokens must be a contiguous host f32 [" + std::to_string(gh * gw) + ", C], got " +
                  dims_text(tokens));
  const int64_t C = tokens.cols();
  Tensor latent = host_tensor(DType::F32, {C, gh, gw});
  transpose(tokens.ptr<const float>(), gh * gw, C, latent.ptr<float>());
  return latent;
}

DitConfig parse_dit_config(const std::string& path) { return dit_config_from_json(read_json_file(path), path); }

DitConfig dit_config_from_json(const nlohmann::json& j, const std::string& path) {
  DitConfig c;
  // Sizes and counts: positive (config_int's lower bound) and bounded.
  read_config_ints(j, path,
                   {{c.dim, "dim"}, {c.ffn_dim, "ffn_dim"}, {c.heads, "num_heads"},
                    {c.layers, "num_layers", kConfigLayersMax}, {c.text_dim, "text_dim"}, {c.freq_dim, "freq_dim"},
                    {c.latent_channels, "latent_channels"}});
  c.rope_base = config_number(j, "rope_base", path);
  if (!(c.rope_base > 0)) throw failure(path + ": key 'rope_base' must be positive");
  if (c.dim % c.heads != 0 || c.head_dim() % 8 != 0)
    throw failure(path + ": key 'num_heads' must divide 'dim' into heads of a multiple of 8 columns (4 RoPE axes, "
                         "split-half rotation); got dim " + std::to_string(c.dim) + ", num_heads " +
                  std::to_string(c.heads));
  if (c.freq_dim % 2 != 0) throw failure(path + ": key 'freq_dim' must be even");
  return c;
}

std::vector<ExpectedTensor> dit_expected_tensors(const DitConfig& c) {
  const std::vector<DType> bf16{DType::BF16};
  const int64_t d = c.dim, f = c.ffn_dim, hd = c.head_dim();
  std::vector<ExpectedTensor> e;
  auto add = [&](const std::string& name, std::vector<int64_t> shape) { e.push_back({name, bf16, shape, false}); };
  auto linear = [&](const std::string& p, int64_t out, int64_t in, bool bias) {
    add(p + ".weight", {out, in});
    if (bias) add(p + ".bias", {out});
  };
  linear("video_embedder", d, c.latent_channels, true);
  linear("text_embedder.proj", d, c.text_dim, true);
  for (int i = 0; i < 2; ++i) {
    const std::string p = "text_embedder.blocks." + std::to_string(i) + ".";
    add(p + "norm1.weight", {d});
    add(p + "norm2.weight", {d});
    add(p + "q_norm.weight", {hd});
    add(p + "k_norm.weight", {hd});
    linear(p + "qkv", 3 * d, d, true);
    linear(p + "proj", d, d, true);
    linear(p + "ffn_gate", f, d, true);
    linear(p + "ffn_up", f, d, true);
    linear(p + "ffn_down", d, f, true);
  }
  linear("time_embedding.0", d, c.freq_dim, true);
  linear("time_embedding.2", d, d, true);
  linear("shared_block_modulation", 6 * d, d, true);
  for (int64_t i = 0; i < c.layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    add(p + "norm1.weight", {d});
    add(p + "norm2.weight", {d});
    add(p + "q_norm.weight", {hd});
    add(p + "k_norm.weight", {hd});
    // The projections, each bf16 or INT8 ConvRot (its I8 rows and their scales).
    auto projection = [&](const char* n, int64_t out, int64_t in) {
      const std::string name = p + "proj." + n;
      if (!c.int8_groups.count(name)) return linear(name, out, in, false);
      e.push_back({name + ".weight", {DType::I8}, {out, in}, false});
      e.push_back({name + ".weight_scale", {DType::F32}, {out, 1}, false});
    };
    for (const char* n : {"q", "k", "v", "o"}) projection(n, d, d);
    projection("ffn_up_gate", 2 * f, d);
    projection("ffn_down", d, f);
  }
  add("final_norm_video.weight", {d});
  linear("final_linear_video", c.latent_channels, d, false);
  linear("video_head_modulation", 2 * d, d, true);
  e.push_back({"rope.bands", {DType::F32}, {hd / 8}, true});
  return e;
}

// The timestep's vectors, on the backend: the six block rows (shift_a, scale_a, gate_a, shift_f,
// scale_f, gate_f) shared by every block, and the head's two (shift, scale).
struct Dit::Modulation {
  Tensor time;   // [1, dim], time_embedding output
  Tensor block;  // [1, 6·dim]
  Tensor head;   // [1, 2·dim]
  int64_t dim = 0;
  Tensor block_row(int k) const { return block.slice_cols(k * dim, dim); }
  // The gates of the pending updates, gate_a (o's) and gate_f (ffn_down's): every block's, since
  // the rows are shared by every block.
  Tensor attn_gate() const { return block_row(2); }
  Tensor ffn_gate() const { return block_row(5); }
  Tensor head_row(int k) const { return head.slice_cols(k * dim, dim); }
};

// One row's place in the forward: its rows [offset, offset + n) of the stacked residual stream
// (every row's [image; text] tokens one after another), and whether its last block left its
// updates pending. A block's two updates are not added to x as they come: its second norm
// normalises x + o's update without storing the sum, and the row's next block (or the head)
// adds both, o's then ffn_down's, inside its first norm (CoreOps::add_norm_modulate, the same
// fp32 operations as two adds), so the stream is written once per block instead of twice. The
// rows that run a block run it as one stacked matrix (Dit::Stack): one GEMM per projection for
// cond and uncond together, attention per row.
struct Dit::RowState {
  int64_t offset = 0, n = 0;
  bool pending = false;
};

// The stacked tensors of a forward, every row's rows in row order.
// The pending updates are the projections' outputs in the GEMM input dtype: bf16 on the GPU, as
// the official bf16 pipeline rounds them, which halves the bytes the GEMMs write and the norms
// read; f32 on the host.
struct Dit::Stack {
  Tensor x;            // f32 [ΣN, dim], the residual streams
  Tensor attn_update;  // [ΣN, dim]: pending o outputs (gate_a)
  Tensor ffn_update;   // [ΣN, dim]: pending ffn_down outputs (gate_f)
  Tensor sin, cos;     // f32 [ΣN, head_dim], each row's RoPE tables
};

// Scratch matrices of one forward, shared by the blocks.
struct Dit::Workspace {
  Tensor y, q, k, v, attn, gated;
  // An INT8 ffn_up_gate's output, f32, kInt8FfnChunkRows rows at a time: [rows, ffn_dim] (the unit
  // from the GEMM's epilogue) where every INT8 block fuses the unit (QuantizedInputs::ffn_unit),
  // else [rows, 2·ffn_dim] (the product before its unit). Empty for a bf16 DiT.
  Tensor up_gate;
  // An INT8 block's inputs rotated and quantized by the ops that produce them (QuantizedRows;
  // empty for a bf16 DiT): `model` dim wide (norm1's rows for q, k and v, norm2's for
  // ffn_up_gate; its group set for the layers it feeds), `ffn` ffn_dim wide (the SiTU unit's, for
  // ffn_down).
  QuantizedRows model, ffn;
  // v's whole buffer, where the backend's attention reads V transposed (CoreOps::
  // attention_reads_transposed_v): one row's Vᵀ [dim, keys padded to kTransposedVKeys] at a time.
  Tensor v_buffer;
  // An INT8 DiT whose attention takes int8 QKᵀ (int8_qk_attention; docs/attention_int8_qk.md):
  // one row's quantized keys at a time (CoreOps::QuantizedKeys, sized as v_buffer for all the
  // rows' keys; empty otherwise, and then every block runs the bf16-K attention).
  CoreOps::QuantizedKeys keys_buffer;
};

namespace {
// The tensors of the LoRA corrections cfg.side_loras names (DitSideLora), shaped by their
// projection's weight [out, in] and, for low rank, the rank `down` has in `weights`.
void add_side_lora_tensors(const DitConfig& cfg, const WeightFiles& weights, std::vector<ExpectedTensor>& e) {
  for (const auto& [projection, forms] : cfg.side_loras) {
    const std::vector<int64_t> layer = weights.info(projection + ".weight").shape;
    const int64_t out = layer.at(0), in = layer.at(1);
    for (size_t i = 0; i < forms.size(); ++i) {
      if (forms[i] == DitSideForm::Dense) {
        e.push_back({dit_side_lora_name(projection, i, "delta"), {DType::BF16}, {out, in}, false});
        continue;
      }
      const std::string down = dit_side_lora_name(projection, i, "down");
      const int64_t r = weights.has(down) ? weights.info(down).shape.at(0) : 0;
      e.push_back({down, {DType::BF16, DType::F32}, {r, in}, false});
      e.push_back({dit_side_lora_name(projection, i, "up"), {DType::BF16, DType::F32}, {out, r}, false});
      e.push_back({dit_side_lora_name(projection, i, "coef"), {DType::F32}, {out}, false});
    }
  }
}
}  // namespace

Dit::Dit(Backend& be, const WeightFiles& weights, const DitConfig& cfg)
    : be_(be), src_(make_upload_on_use_source(be, weights)), cfg_(cfg) {
  std::vector<ExpectedTensor> expected = dit_expected_tensors(cfg);
  add_side_lora_tensors(cfg, weights, expected);
  check_tensors(weights, expected);
}

Dit::Dit(Backend& be, std::unique_ptr<DitWeightSource> source, const DitConfig& cfg)
    : be_(be), src_(std::move(source)), cfg_(cfg) {}

namespace {
// y += each LoRA correction kept beside p (DitSideLora), in order, from x: the layer's unrotated,
// unquantized input rows (docs/loras.md, "LoRAs on an INT8 ConvRot DiT").
void add_side_loras(Backend& be, const DitProjection& p, const Tensor& x, Tensor& y) {
  CoreOps& ops = be.core();
  // The corrections in f32 (the rank's intermediate too), added to y in its own dtype, a run of
  // at most kSideRows rows at a time: the scratch is then bounded (ffn_up_gate's 16384 columns:
  // 64 MiB) where a whole 1024x1024 CFG forward's rows would take 0.5 GiB. Every row's values
  // are the same either way (the ops compute each row on its own).
  constexpr int64_t kSideRows = 1024;
  const int64_t rows = std::min(kSideRows, x.rows());
  Tensor c_all = be.alloc(DType::F32, {rows, y.cols()});
  for (const DitSideLora& l : p.side) {
    Tensor t_all;
    if (l.form == DitSideForm::LowRank) t_all = be.alloc(DType::F32, {rows, l.down.rows()});
    for (int64_t r0 = 0; r0 < x.rows(); r0 += rows) {
      const int64_t n = std::min(rows, x.rows() - r0);
      const Tensor xs = x.slice_rows(r0, n);
      Tensor ys = y.slice_rows(r0, n), c = c_all.slice_rows(0, n);
      if (l.form == DitSideForm::LowRank) {
        Tensor t = t_all.slice_rows(0, n);
        ops.linear(xs, l.down, nullptr, t);
        ops.linear(t, l.up, nullptr, c);
        ops.add(ys, c, &l.coef);
      } else {
        ops.linear(xs, l.delta, nullptr, c);
        ops.add(ys, c, nullptr);
      }
    }
  }
}
}  // namespace

void dit_project(Backend& be, const DitProjection& p, const Tensor& x, Tensor& y) {
  if (p.int8())
    be.core().linear_int8(x, p.w, p.scale, nullptr, p.group, y);
  else
    be.core().linear(x, p.w, nullptr, y);
  if (p.side_lora()) add_side_loras(be, p, x, y);
}

void Dit::project(const DitProjection& p, const Tensor& x, Tensor& y) { dit_project(be_, p, x, y); }

void Dit::project(const DitProjection& p, const QuantizedRows& xq, const Tensor* x, Tensor& y) {
  if (!p.int8() || p.group != xq.group)
    throw std::logic_error("dit: a projection given quantized rows must be INT8 of their group");
  be_.core().linear_int8(xq, p.w, p.scale, nullptr, y);
  if (!p.side_lora()) return;
  if (!x) throw std::logic_error("dit: a projection with LoRAs beside it needs its unrotated rows");
  add_side_loras(be_, p, *x, y);
}

namespace {
// The one place that decides which of a main block's inputs its producing op quantizes itself
// (the group, 0 for none): an input whose every layer is INT8 with one group. The fp32 rows are
// quantized then, never their bf16 roundings (docs/int8_convrot.md section 9), and once for the
// three attention projections. The attention output (o's input) is quantized by linear_int8's own
// activation pass; the SiTU unit only from the f32 output of an INT8 ffn_up_gate. That unit
// comes from the int8 GEMM's epilogue (CoreOps::linear_int8_gated_unit, then rotate_quantize for
// ffn_down) where both FFN layers are INT8, neither has a LoRA beside it and the backend says that
// is the faster way (CoreOps::int8_unit_in_gemm_epilogue; the same bits either way); else the f32
// product is kept and gated_unit(_quantized) applies it (a LoRA on ffn_up_gate adds to the
// product, one on ffn_down reads the unit's rows).
struct QuantizedInputs {
  int64_t attn = 0;       // norm1's rows, for q, k and v
  int64_t ffn = 0;        // norm2's rows, for ffn_up_gate
  int64_t ffn_down = 0;   // the gated unit's, for ffn_down
  bool ffn_unit = false;  // the unit in ffn_up_gate's epilogue
};
// The fused unit's condition, from a block's layers (is each FFN layer INT8, has it side LoRAs)
// and the backend's answer: one rule for the blocks and for the workspace that Dit::forward_rows
// sizes from the config.
bool ffn_unit_fused(bool up_gate_int8, bool down_int8, bool side_loras, bool unit_in_epilogue) {
  return up_gate_int8 && down_int8 && !side_loras && unit_in_epilogue;
}
QuantizedInputs quantized_inputs(const DitMainBlockWeights& w, bool unit_in_epilogue) {
  QuantizedInputs q;
  if (w.q.int8() && w.k.int8() && w.v.int8() && w.k.group == w.q.group && w.v.group == w.q.group) q.attn = w.q.group;
  if (w.ffn_up_gate.int8()) q.ffn = w.ffn_up_gate.group;
  if (w.ffn_up_gate.int8() && w.ffn_down.int8()) q.ffn_down = w.ffn_down.group;
  q.ffn_unit = ffn_unit_fused(w.ffn_up_gate.int8(), w.ffn_down.int8(),
                              w.ffn_up_gate.side_lora() || w.ffn_down.side_lora(), unit_in_epilogue);
  return q;
}
}  // namespace

void Dit::attention(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) {
  const int64_t hd = cfg_.head_dim();
  be_.core().attention(q, k, v, out, cfg_.heads, cfg_.heads, hd, softmax_scale(hd), false);
}

Dit::Text Dit::embed_text(const Tensor& states) {
  if (states.where != Where::Host || states.dtype != DType::F32 || states.rank != 2 || states.cols() != cfg_.text_dim)
    throw failure("DiT text states must be host f32 [T, " + std::to_string(cfg_.text_dim) + "], got " +
                  dims_text(states));
  CoreOps& ops = be_.core();
  const int64_t T = states.rows();
  Text text;
  text.tokens = T;
  text.rows = be_.alloc(DType::F32, {T, cfg_.dim});
  {
    DitLinear proj = DitLinear::load(*src_, "text_embedder.proj", true);
    ops.linear(be_.upload(states), proj.w, proj.bias(), text.rows);
  }
  // The text blocks see only the text rows, at positions (0, k, 0, 0).
  RopeTables rt = rope_tables(dit_positions(T, 0, 0), cfg_.head_dim(), cfg_.rope_base);
  const Tensor sin = be_.upload(rt.sin), cos = be_.upload(rt.cos);
  for (int i = 0; i < 2; ++i) text_block(i, text.rows, sin, cos);
  return text;
}

void Dit::text_block(int index, Tensor& x, const Tensor& sin, const Tensor& cos) {
  CoreOps& ops = be_.core();
  const DitTextBlockWeights w = DitTextBlockWeights::load(*src_, index);
  const int64_t T = x.rows(), d = cfg_.dim, f = cfg_.ffn_dim, hd = cfg_.head_dim();
  Tensor y = be_.alloc(DType::F32, {T, d}), qkv = be_.alloc(DType::F32, {T, 3 * d});
  Tensor q = be_.alloc(DType::F32, {T, d}), k = be_.alloc(DType::F32, {T, d}), a = be_.alloc(DType::F32, {T, d});

  ops.rms_norm(x, &w.norm1, NormWeight::Mul, kRmsEps, d, y);
  ops.linear(y, w.qkv.w, w.qkv.bias(), qkv);
  ops.rms_norm(qkv.slice_cols(0, d), &w.q_norm, NormWeight::Mul, kRmsEps, hd, q);
  ops.rms_norm(qkv.slice_cols(d, d), &w.k_norm, NormWeight::Mul, kRmsEps, hd, k);
  ops.rope(q, sin, cos, hd, hd);
  ops.rope(k, sin, cos, hd, hd);
  attention(q, k, qkv.slice_cols(2 * d, d), a);
  ops.linear(a, w.proj.w, w.proj.bias(), y);
  ops.add(x, y, nullptr);

  Tensor up = be_.alloc(DType::F32, {T, f}), gate = be_.alloc(DType::F32, {T, f}), h = be_.alloc(DType::F32, {T, f});
  ops.rms_norm(x, &w.norm2, NormWeight::Mul, kRmsEps, d, y);
  ops.linear(y, w.ffn_up.w, w.ffn_up.bias(), up);
  ops.linear(y, w.ffn_gate.w, w.ffn_gate.bias(), gate);
  ops.gated_unit(GatedUnit::Situ, up, gate, h);
  ops.linear(h, w.ffn_down.w, w.ffn_down.bias(), y);
  ops.add(x, y, nullptr);
}

Dit::Modulation Dit::timestep_modulation(float timestep) {
  CoreOps& ops = be_.core();
  const int64_t d = cfg_.dim;
  const std::vector<float> e = timestep_sinusoid(timestep, cfg_.freq_dim);
  Tensor e_host = host_tensor(DType::F32, {1, int64_t(e.size())});
  std::copy(e.begin(), e.end(), e_host.ptr<float>());

  Modulation m;
  m.dim = d;
  Tensor hidden = be_.alloc(DType::F32, {1, d});
  m.time = be_.alloc(DType::F32, {1, d});
  m.block = be_.alloc(DType::F32, {1, 6 * d});
  m.head = be_.alloc(DType::F32, {1, 2 * d});
  {
    DitLinear l0 = DitLinear::load(*src_, "time_embedding.0", true);
    DitLinear l2 = DitLinear::load(*src_, "time_embedding.2", true);
    ops.linear(be_.upload(e_host), l0.w, l0.bias(), hidden);
    ops.silu(hidden, hidden);
    ops.linear(hidden, l2.w, l2.bias(), m.time);
  }
  // No SiLU before either modulation (docs/model.md section 4, step 1).
  DitLinear shared = DitLinear::load(*src_, "shared_block_modulation", true);
  ops.linear(m.time, shared.w, shared.bias(), m.block);
  DitLinear head = DitLinear::load(*src_, "video_head_modulation", true);
  ops.linear(m.time, head.w, head.bias(), m.head);
  return m;
}

void Dit::apply_pending(Stack& st, RowState& row, const Modulation& mod) {
  if (!row.pending) return;
  Tensor x = st.x.slice_rows(row.offset, row.n);
  const Tensor ga = mod.attn_gate(), gf = mod.ffn_gate();
  be_.core().add(x, st.attn_update.slice_rows(row.offset, row.n), &ga);
  be_.core().add(x, st.ffn_update.slice_rows(row.offset, row.n), &gf);
  row.pending = false;
}

namespace {
// `buffer` read as a [dim, keys] matrix (a row's transposed V in the workspace).
Tensor transposed_v(const Tensor& buffer, int64_t dim, int64_t keys) {
  if (dim * keys > buffer.numel()) throw failure("dit: the transposed V does not fit its workspace");
  Tensor t(buffer.data, buffer.dtype, {dim, keys}, buffer.where);
  t.owner = buffer.owner;
  return t;
}

// The front of the workspace's quantized-keys buffers shaped for a row of `keys` keys.
CoreOps::QuantizedKeys quantized_keys_for(const CoreOps::QuantizedKeys& buffer, int64_t heads, int64_t head_dim,
                                          int64_t keys) {
  const int64_t rows = heads * CoreOps::transposed_v_keys(keys);
  if (rows > buffer.q.rows()) throw failure("dit: the quantized keys do not fit their workspace");
  CoreOps::QuantizedKeys kq{Tensor(buffer.q.data, DType::I8, {rows, head_dim}, buffer.q.where),
                            Tensor(buffer.scale.data, DType::F32, {rows / CoreOps::kInt8KeyBlock, 1},
                                   buffer.scale.where),
                            keys};
  kq.q.owner = buffer.q.owner;
  kq.scale.owner = buffer.scale.owner;
  return kq;
}
}  // namespace

// Whether an INT8 DiT's blocks take int8 QKᵀ (docs/attention_int8_qk.md): MOSSINFER_INT8_QK, else
// the backend's answer (the portable kernels: yes; NVIDIA's native path and the host: no). A
// bf16 DiT never does.
bool Dit::int8_qk_attention() const {
  if (!cfg_.int8()) return false;
  switch (int8_qk_setting()) {
    case Int8QkSetting::Never: return false;
    case Int8QkSetting::Always: return true;
    case Int8QkSetting::Backend: break;
  }
  return be_.core().attention_int8_qk(cfg_.head_dim());
}

void Dit::main_block(const DitMainBlockWeights& w, Stack& st, std::vector<RowState>& rows, size_t first,
                     size_t count, const Modulation& mod, Workspace& ws) {
  CoreOps& ops = be_.core();
  const int64_t hd = cfg_.head_dim();
  const int64_t off = rows[first].offset, n = rows[first + count - 1].offset + rows[first + count - 1].n - off;
  Tensor x = st.x.slice_rows(off, n);
  Tensor attn_update = st.attn_update.slice_rows(off, n), ffn_update = st.ffn_update.slice_rows(off, n);
  const Tensor sin = st.sin.slice_rows(off, n), cos = st.cos.slice_rows(off, n);
  const Tensor shift_a = mod.block_row(0), scale_a = mod.block_row(1), gate_a = mod.attn_gate();
  const Tensor shift_f = mod.block_row(3), scale_f = mod.block_row(4), gate_f = mod.ffn_gate();

  // Fused passes (CoreOps::norm_modulate, add_norm_modulate, norm_rope): the same fp32 operations
  // as add, rms_norm then modulate, rms_norm then rope; their outputs (ws.y, q, k, v, attn,
  // gated) are GEMM/attention inputs in the backend's gemm_input_dtype. The q and k projections
  // land in ws.q / ws.k in that dtype too; k is normalised and rotated in place, q inside each
  // row's attention (CoreOps::norm_rope_attention: on the portable kernels on its way into the
  // attention kernel, saving a pass).
  bool all_pending = true;
  for (size_t r = first; r < first + count; ++r) all_pending = all_pending && rows[r].pending;
  if (!all_pending)  // some row's first block: the others' updates go in on their own
    for (size_t r = first; r < first + count; ++r) apply_pending(st, rows[r], mod);
  const QuantizedInputs quantized = quantized_inputs(w, ops.int8_unit_in_gemm_epilogue());
  ws.model.group = quantized.attn;
  // A LoRA beside an INT8 layer needs the layer's unrotated rows too (DitSideLora): the quantizing
  // producer then also writes them.
  Tensor* attn_rows = w.q.side_lora() || w.k.side_lora() || w.v.side_lora() ? &ws.y : nullptr;
  const GatedUpdates last_updates = GatedUpdates().then(attn_update, gate_a).then(ffn_update, gate_f);
  if (all_pending && quantized.attn)  // the last block's two updates go into x here
    ops.add_norm_modulate_quantized(x, last_updates, SumTo::X, w.norm1, kRmsEps, shift_a, scale_a, ws.model, attn_rows);
  else if (all_pending)
    ops.add_norm_modulate(x, last_updates, SumTo::X, w.norm1, kRmsEps, shift_a, scale_a, ws.y);
  else if (quantized.attn)
    ops.norm_modulate_quantized(x, w.norm1, kRmsEps, shift_a, scale_a, ws.model, attn_rows);
  else
    ops.norm_modulate(x, w.norm1, kRmsEps, shift_a, scale_a, ws.y);
  if (quantized.attn) {  // one quantization of norm1's rows for the three
    project(w.q, ws.model, attn_rows, ws.q);
    project(w.k, ws.model, attn_rows, ws.k);
    project(w.v, ws.model, attn_rows, ws.v);
  } else {
    project(w.q, ws.y, ws.q);
    project(w.k, ws.y, ws.k);
  }
  ops.norm_rope(ws.k, w.k_norm, kRmsEps, hd, sin, cos, ws.k);
  // V as the attention reads it: where that is transposed (AMD's portable attention), each row's
  // v projection is written so by its GEMM's epilogue, which saves the attention's pass over V.
  // An INT8 v projection has no transposed form: the attention reads it as it is (every
  // backend's attention takes both layouts; the transposed one only saves a pass).
  const bool v_transposed = !w.v.int8() && ops.attention_reads_transposed_v(hd);
  if (!v_transposed && !quantized.attn) project(w.v, ws.y, ws.v);
  for (size_t r = first; r < first + count; ++r) {  // each row attends within itself
    const int64_t o = rows[r].offset - off, m = rows[r].n;
    Tensor out = ws.attn.slice_rows(o, m), q = ws.q.slice_rows(o, m), v = ws.v.slice_rows(o, m);
    if (v_transposed) {  // each row's Vᵀ in turn at the start of v's buffer (ops run in order)
      v = transposed_v(ws.v_buffer, cfg_.dim, CoreOps::transposed_v_keys(m));
      ops.linear_transposed(ws.y.slice_rows(o, m), w.v.w, v);
    }
    if (quantized.attn && ws.keys_buffer.q.rank > 0) {  // int8 QKᵀ: this row's keys smoothed and quantized first
      CoreOps::QuantizedKeys kq = quantized_keys_for(ws.keys_buffer, cfg_.heads, hd, m);
      ops.quantize_keys(ws.k.slice_rows(o, m), cfg_.heads, hd, kq);
      ops.norm_rope_attention_int8_qk(q, w.q_norm, kRmsEps, sin.slice_rows(o, m), cos.slice_rows(o, m), kq, v, out,
                                      cfg_.heads, hd, softmax_scale(hd), v_transposed);
      continue;
    }
    ops.norm_rope_attention(q, w.q_norm, kRmsEps, sin.slice_rows(o, m), cos.slice_rows(o, m), ws.k.slice_rows(o, m),
                            v, out, cfg_.heads, hd, softmax_scale(hd), v_transposed);
  }
  // The gated residual is not in the GEMM's epilogue: GEMM + add measured 0.151 ms against 0.181
  // ms for a fused residual epilogue at 4160 rows on the H200 (bench/NOTES.md); it rides on the
  // next norm instead.
  project(w.o, ws.attn, attn_update);
  // x + o's update, normalised; the sum is not stored (it stays pending, see RowState).
  const GatedUpdates o_update = GatedUpdates().then(attn_update, gate_a);
  if (quantized.ffn_unit) {  // the unit from the int8 GEMM's epilogue in f32, then quantized for ffn_down
    ws.model.group = quantized.ffn;
    ops.add_norm_modulate_quantized(x, o_update, SumTo::Nowhere, w.norm2, kRmsEps, shift_f, scale_f, ws.model, nullptr);
    // In runs of up to kInt8FfnChunkRows rows (the f32 buffer, Workspace::up_gate).
    const int64_t f = cfg_.ffn_dim, rows_n = ws.model.rows();
    ws.ffn.group = quantized.ffn_down;
    for (int64_t r0 = 0; r0 < rows_n; r0 += kInt8FfnChunkRows) {
      const int64_t m = std::min(kInt8FfnChunkRows, rows_n - r0);
      Tensor unit = ws.up_gate.slice_rows(0, m).slice_cols(0, f);
      ops.linear_int8_gated_unit(GatedUnit::Situ, ws.model.slice_rows(r0, m), w.ffn_up_gate.w, w.ffn_up_gate.scale,
                                 nullptr, unit);
      QuantizedRows unit_q = ws.ffn.slice_rows(r0, m);
      ops.rotate_quantize(unit, unit_q);
    }
    project(w.ffn_down, ws.ffn, nullptr, ffn_update);
  } else if (quantized.ffn) {  // the product [hidden | gate] in f32 first, then the unit on its two halves
    ws.model.group = quantized.ffn;
    Tensor* ffn_rows = w.ffn_up_gate.side_lora() ? &ws.y : nullptr;
    Tensor* unit_rows = w.ffn_down.side_lora() ? &ws.gated : nullptr;
    ops.add_norm_modulate_quantized(x, o_update, SumTo::Nowhere, w.norm2, kRmsEps, shift_f, scale_f, ws.model,
                                    ffn_rows);
    // In runs of up to kInt8FfnChunkRows rows (the f32 product's buffer, Workspace::up_gate).
    const int64_t f = cfg_.ffn_dim, rows_n = ws.model.rows();
    ws.ffn.group = quantized.ffn_down;
    for (int64_t r0 = 0; r0 < rows_n; r0 += kInt8FfnChunkRows) {
      const int64_t m = std::min(kInt8FfnChunkRows, rows_n - r0);
      Tensor product = ws.up_gate.slice_rows(0, m);
      const Tensor ffn_rows_m = ffn_rows ? ffn_rows->slice_rows(r0, m) : Tensor();
      project(w.ffn_up_gate, ws.model.slice_rows(r0, m), ffn_rows ? &ffn_rows_m : nullptr, product);
      const Tensor hidden = product.slice_cols(0, f), gate = product.slice_cols(f, f);
      if (quantized.ffn_down) {  // the unit's fp32 values quantized as they are made
        QuantizedRows unit = ws.ffn.slice_rows(r0, m);
        Tensor unit_rows_m = unit_rows ? unit_rows->slice_rows(r0, m) : Tensor();
        ops.gated_unit_quantized(GatedUnit::Situ, hidden, gate, unit, unit_rows ? &unit_rows_m : nullptr);
      } else {
        Tensor unit = ws.gated.slice_rows(r0, m);
        ops.gated_unit(GatedUnit::Situ, hidden, gate, unit);
      }
    }
    if (quantized.ffn_down) project(w.ffn_down, ws.ffn, unit_rows, ffn_update);
    else project(w.ffn_down, ws.gated, ffn_update);
  } else {
    ops.add_norm_modulate(x, o_update, SumTo::Nowhere, w.norm2, kRmsEps, shift_f, scale_f, ws.y);
    ops.linear_gated_unit(GatedUnit::Situ, ws.y, w.ffn_up_gate.w, nullptr, ws.gated);  // rows [hidden | gate]
    project(w.ffn_down, ws.gated, ffn_update);
  }
  for (size_t r = first; r < first + count; ++r) rows[r].pending = true;
}

// The RoPE sin and cos tables of rows with T[0], T[1], ... text tokens on a gh x gw grid,
// stacked in row order as one backend f32 tensor [2·ΣN, head_dim] (every row's sin rows, then
// every row's cos rows; N = gh·gw + T), made once per shape: they depend on the shape alone, not
// on the timestep or the latent.
Tensor Dit::stacked_rope_tables(const std::vector<int64_t>& T, int64_t gh, int64_t gw) {
  std::vector<int64_t> key = {gh, gw};
  key.insert(key.end(), T.begin(), T.end());
  auto it = rope_tables_.find(key);
  if (it != rope_tables_.end()) return it->second;
  const int64_t hd = cfg_.head_dim();
  std::vector<RopeTables> parts;
  int64_t total = 0;
  for (int64_t t : T) {
    parts.push_back(rope_tables(dit_positions(t, gh, gw), hd, cfg_.rope_base));
    total += parts.back().sin.rows();
  }
  Tensor both = host_tensor(DType::F32, {2 * total, hd});
  float* sin = both.ptr<float>();
  float* cos = sin + total * hd;
  for (const RopeTables& rt : parts) {
    std::memcpy(sin, rt.sin.data, rt.sin.nbytes());
    std::memcpy(cos, rt.cos.data, rt.cos.nbytes());
    sin += rt.sin.numel();
    cos += rt.cos.numel();
  }
  return rope_tables_[key] = be_.upload(both);
}

Tensor Dit::forward(const Tensor& latent, const Text& text, float timestep, const std::vector<int>& skip_layers,
                    DitTrace* trace) {
  return forward_rows(latent, {Row{&text, skip_layers}}, timestep, trace)[0];
}

std::vector<Tensor> Dit::forward_rows(const Tensor& latent, const std::vector<Row>& rows, float timestep,
                                      DitTrace* trace) {
  if (latent.where != Where::Host || latent.dtype != DType::F32 || latent.rank != 3 ||
      latent.shape[0] != cfg_.latent_channels || !latent.contiguous())
    throw failure("DiT latent must be host f32 [" + std::to_string(cfg_.latent_channels) + ", gh, gw], got " +
                  dims_text(latent));
  const int64_t gh = latent.shape[1], gw = latent.shape[2];
  const std::vector<Tensor> outs = forward_tokens(be_.upload(latent_to_tokens(latent)), gh, gw, rows, timestep, trace);
  std::vector<Tensor> velocities;
  for (const Tensor& out : outs) velocities.push_back(tokens_to_latent(be_.download(out), gh, gw));
  return velocities;
}

std::vector<Tensor> Dit::forward_tokens(const Tensor& tokens, int64_t gh, int64_t gw, const std::vector<Row>& rows,
                                        float timestep, DitTrace* trace) {
  const int64_t C = cfg_.latent_channels, n_img = gh * gw, d = cfg_.dim;
  if (tokens.where != be_.where() || tokens.dtype != DType::F32 || tokens.rank != 2 || tokens.rows() != n_img ||
      tokens.cols() != C || gh <= 0 || gw <= 0)
    throw failure("DiT latent tokens must be f32 [" + std::to_string(n_img) + ", " + std::to_string(C) +
                  "] on the backend, got " + dims_text(tokens));
  if (rows.empty()) throw std::invalid_argument("Dit::forward_tokens: no rows");
  for (const Row& r : rows)
    for (int s : r.skip_layers)
      if (s < 0 || s >= cfg_.layers)
        throw usage_error("skip layer " + std::to_string(s) + " is outside the DiT's blocks 0.." +
                          std::to_string(cfg_.layers - 1));
  CoreOps& ops = be_.core();
  auto skips = [](const Row& r, int i) {
    return std::find(r.skip_layers.begin(), r.skip_layers.end(), i) != r.skip_layers.end();
  };

  const Modulation mod = timestep_modulation(timestep);

  // Per row: x = [image rows; the prompt's cached text rows], stacked in row order, with the
  // rows' RoPE tables and a buffer for their pending updates (in the GEMM input dtype, like the
  // workspace's projection outputs).
  const DType gemm_in = be_.gemm_input_dtype();
  std::vector<RowState> state(rows.size());
  std::vector<int64_t> text_tokens;
  int64_t total = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    state[r].offset = total;
    state[r].n = n_img + rows[r].text->tokens;
    total += state[r].n;
    text_tokens.push_back(rows[r].text->tokens);
  }
  Stack st;
  const Tensor tables = stacked_rope_tables(text_tokens, gh, gw);
  st.sin = tables.slice_rows(0, total);
  st.cos = tables.slice_rows(total, total);
  st.x = be_.alloc(DType::F32, {total, d});
  st.attn_update = be_.alloc(gemm_in, {total, d});
  st.ffn_update = be_.alloc(gemm_in, {total, d});
  // The image rows are the same for every row: the latent's tokens through video_embedder, into
  // the first row's place and copied to the others'.
  const Tensor image_rows = st.x.slice_rows(state[0].offset, n_img);
  {
    DitLinear embed = DitLinear::load(*src_, "video_embedder", true);
    Tensor out = image_rows;
    ops.linear(tokens, embed.w, embed.bias(), out);
  }
  for (size_t r = 0; r < rows.size(); ++r) {
    Tensor txt = st.x.slice_rows(state[r].offset + n_img, rows[r].text->tokens);
    if (r > 0) {
      Tensor img = st.x.slice_rows(state[r].offset, n_img);
      ops.copy(image_rows, img);
    }
    ops.copy(rows[r].text->rows, txt);
  }
  if (trace) {
    trace->tensors["temb"] = snapshot(be_, mod.time).reshape({d});
    trace->tensors["modulation"] = snapshot(be_, mod.block).reshape({6, d});
    trace->tensors["text_embedded"] = snapshot(be_, rows[0].text->rows);
  }

  // One workspace sized for all rows; the rows that run a block run it together, so each
  // block's weights are fetched (or streamed in) once per pass.
  // The q/k projections are stored in the GEMM input dtype as well: bf16 on the GPU, like the
  // official bf16 pipeline, which rounds its projection outputs at the same points (H200, tiny
  // model: velocities 5.7e-3 rel L2 from the fp32 golden, limit 2.5e-2), halving the bytes
  // norm_rope reads; f32 on the host. The SiTU unit comes out of the up|gate GEMM's epilogue
  // where the backend can (CoreOps::linear_gated_unit), with no [N, 2·ffn] product in between.
  Workspace full;
  for (Tensor* t : {&full.y, &full.q, &full.k, &full.attn}) *t = be_.alloc(gemm_in, {total, d});
  // v also holds a row's transposed V, its keys padded (Workspace::v_buffer): as many rows as
  // the longest row's padded keys, at most the padded total.
  full.v = be_.alloc(gemm_in, {CoreOps::transposed_v_keys(total), d});
  // The unit's rows in the GEMM input dtype, for ffn_down, unless every block's ffn_down takes
  // them quantized (Workspace::ffn): then nothing reads them.
  bool every_unit_quantized = cfg_.int8();
  for (int64_t i = 0; i < cfg_.layers && every_unit_quantized; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".proj.";
    every_unit_quantized = cfg_.int8_groups.count(p + "ffn_up_gate") && cfg_.int8_groups.count(p + "ffn_down");
  }
  // A LoRA beside an ffn_down reads them too.
  if (!every_unit_quantized || !cfg_.side_loras.empty()) full.gated = be_.alloc(gemm_in, {total, cfg_.ffn_dim});
  // An INT8 DiT: ffn_up_gate's output in f32, so that the SiTU unit and ffn_down's quantization
  // see fp32 values (the format's reference never rounds them to bf16), a run of rows at a time:
  // the unit alone where every INT8 block applies it in the GEMM's epilogue, else the product
  // (Workspace::up_gate); and the blocks' quantized inputs (Workspace::model, ffn).
  if (cfg_.int8()) {
    const bool unit_in_epilogue = be_.core().int8_unit_in_gemm_epilogue();
    bool every_unit_fused = true;
    for (int64_t i = 0; i < cfg_.layers; ++i) {
      const std::string p = "layers." + std::to_string(i) + ".proj.";
      const bool up_gate = cfg_.int8_groups.count(p + "ffn_up_gate") > 0;
      const bool side = cfg_.side_loras.count(p + "ffn_up_gate") > 0 || cfg_.side_loras.count(p + "ffn_down") > 0;
      const bool down = cfg_.int8_groups.count(p + "ffn_down") > 0;
      if (up_gate && !ffn_unit_fused(up_gate, down, side, unit_in_epilogue)) every_unit_fused = false;
    }
    const int64_t up_gate_cols = every_unit_fused ? cfg_.ffn_dim : 2 * cfg_.ffn_dim;
    full.up_gate = be_.alloc(DType::F32, {std::min(total, kInt8FfnChunkRows), up_gate_cols});
    full.model = {be_.alloc(DType::I8, {total, d}), be_.alloc(DType::F32, {total, 1}), 0};
    full.ffn = {be_.alloc(DType::I8, {total, cfg_.ffn_dim}), be_.alloc(DType::F32, {total, 1}), 0};
    if (int8_qk_attention()) {  // one row's quantized keys at a time, as v's buffer holds one row's Vᵀ
      const int64_t key_rows = cfg_.heads * CoreOps::transposed_v_keys(total);
      full.keys_buffer = {be_.alloc(DType::I8, {key_rows, cfg_.head_dim()}),
                          be_.alloc(DType::F32, {key_rows / CoreOps::kInt8KeyBlock, 1}), 0};
    }
  }
  auto workspace_for = [&](int64_t N) {
    Workspace ws;
    Tensor* dst[] = {&ws.y, &ws.q, &ws.k, &ws.v, &ws.attn, &ws.gated};
    const Tensor* src[] = {&full.y, &full.q, &full.k, &full.v, &full.attn, &full.gated};
    for (size_t i = 0; i < 6; ++i)
      if (src[i]->rank > 0) *dst[i] = src[i]->slice_rows(0, N);  // (gated may be absent)
    if (cfg_.int8()) {
      ws.up_gate = full.up_gate.slice_rows(0, std::min(N, kInt8FfnChunkRows));
      ws.model = full.model.slice_rows(0, N);
      ws.ffn = full.ffn.slice_rows(0, N);
    }
    ws.v_buffer = full.v;
    ws.keys_buffer = full.keys_buffer;
    return ws;
  };

  std::vector<int> order;  // the blocks some row runs, in order
  for (int i = 0; i < int(cfg_.layers); ++i)
    for (const Row& r : rows)
      if (!skips(r, i)) {
        order.push_back(i);
        break;
      }
  src_->begin_forward(order);
  for (int i : order) {
    check_interrupted();  // a signal or the job's cancellation ends a step within a block
    src_->before_block(i);
    const DitMainBlockWeights w = DitMainBlockWeights::load(*src_, i, cfg_.int8_groups, cfg_.side_loras);
    // Runs of adjacent rows that run block i, each as one stacked matrix.
    for (size_t r = 0; r < rows.size();) {
      if (skips(rows[r], i)) {
        ++r;
        continue;
      }
      size_t e = r + 1;
      while (e < rows.size() && !skips(rows[e], i)) ++e;
      const int64_t n = state[e - 1].offset + state[e - 1].n - state[r].offset;
      Workspace ws = workspace_for(n);
      main_block(w, st, state, r, e - r, mod, ws);
      r = e;
    }
    if (trace && !skips(rows[0], i)) {  // row 0's output of the block, its update included
      apply_pending(st, state[0], mod);
      trace->tensors["block" + std::to_string(i)] = snapshot(be_, st.x.slice_rows(0, state[0].n));
    }
  }

  // Head on the image rows: RMSNorm·(1+scale)+shift, then final_linear_video.
  const Tensor norm = src_->get("final_norm_video.weight");
  const Tensor final_linear = src_->get("final_linear_video.weight");
  std::vector<Tensor> outs;
  for (const RowState& row : state) {
    Tensor y = full.y.slice_rows(0, n_img);
    outs.push_back(be_.alloc(DType::F32, {n_img, C}));
    Tensor img = st.x.slice_rows(row.offset, n_img);
    if (row.pending) {  // the stream ends here: its last sum needs no store
      const Tensor attn_update = st.attn_update.slice_rows(row.offset, n_img);
      const Tensor ffn_update = st.ffn_update.slice_rows(row.offset, n_img);
      const Tensor ga = mod.attn_gate(), gf = mod.ffn_gate();
      ops.add_norm_modulate(img, GatedUpdates().then(attn_update, ga).then(ffn_update, gf), SumTo::Nowhere, norm,
                            kRmsEps, mod.head_row(0), mod.head_row(1), y);
    } else
      ops.norm_modulate(img, norm, kRmsEps, mod.head_row(0), mod.head_row(1), y);
    ops.linear(y, final_linear, nullptr, outs.back());
  }
  return outs;
}

}  // namespace moss
