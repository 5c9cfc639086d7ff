// The text encoder's forward pass (docs/text_encoder.md section 3). Activations stay f32;
// every layer is: x += Mixer(ZRMS_in(x)); x += MLP(ZRMS_post(x)); then out = ZRMS_final(x).
#include "model/text_encoder.h"

#include <chrono>
#include <cmath>
#include <map>
#include <optional>

#include "util/error.h"
#include "util/interrupt.h"

namespace moss {

namespace {

constexpr float kL2NormEps = 1e-6f;  // fixed in the reference's DeltaNet l2norm, not rms_norm_eps
constexpr int64_t kDeltaChunk = 64;  // the reference's chunk length

// RoPE tables [T, rot_dim] in fp32 as transformers builds them: inv_freq_i = 1 / θ^(2i/rot),
// angle = p · inv_freq_i (one fp32 product), both halves equal. For text every M-RoPE axis
// carries the same position, so the interleaved M-RoPE is plain 1-D RoPE.
void rope_tables(int64_t T, int64_t rot_dim, double theta, Tensor& sin_t, Tensor& cos_t) {
  const int64_t half = rot_dim / 2;
  std::vector<float> inv_freq(size_t(half), 0.0f);
  for (int64_t i = 0; i < half; ++i)
    inv_freq[size_t(i)] = 1.0f / std::pow(float(theta), float(2 * i) / float(rot_dim));
  for (int64_t p = 0; p < T; ++p) {
    float* s = sin_t.row<float>(p);
    float* c = cos_t.row<float>(p);
    for (int64_t i = 0; i < half; ++i) {
      const float angle = float(p) * inv_freq[size_t(i)];
      s[i] = s[i + half] = std::sin(angle);
      c[i] = c[i + half] = std::cos(angle);
    }
  }
}

}  // namespace

TextEncoder::TextEncoder(Backend& be, const WeightFiles& weights, const TextEncoderConfig& cfg, TeResidency residency)
    : be_(be), weights_(weights), cfg_(cfg), prefix_(text_encoder_prefix(weights)),
      residency_(resolve_te_residency(be, residency)) {}

Tensor TextEncoder::weight(int layer, const std::string& name) {
  return source_->get(layer, prefix_ + (layer >= 0 ? "layers." + std::to_string(layer) + "." : "") + name);
}

// Only the rows the prompt uses are uploaded (the 9B table is 2 GB): the distinct ids' rows
// are gathered on the host into a small table and looked up there with remapped ids.
Tensor TextEncoder::embed(const std::vector<int32_t>& ids) {
  const Tensor table = weights_.get(prefix_ + "embed_tokens.weight");
  const int64_t V = table.rows(), H = table.cols();
  std::map<int32_t, int32_t> local;
  std::vector<int32_t> local_ids;
  for (int32_t id : ids) {
    if (id < 0 || id >= V)
      throw failure("token id " + std::to_string(id) + " is outside the text encoder's vocabulary of " +
                    std::to_string(V) + " rows");
    local_ids.push_back(local.emplace(id, int32_t(local.size())).first->second);
  }
  Tensor rows = host_tensor(table.dtype, {int64_t(local.size()), H});
  const size_t row_bytes = size_t(H) * dtype_size(table.dtype);
  for (auto [id, r] : local)
    std::memcpy(static_cast<char*>(rows.data) + size_t(r) * row_bytes,
                static_cast<const char*>(table.data) + size_t(id) * row_bytes, row_bytes);
  Tensor x = be_.alloc(DType::F32, {int64_t(ids.size()), H});
  be_.core().embedding(local_ids, be_.upload(rows), x);
  return x;
}

Tensor TextEncoder::encode(const std::vector<int32_t>& ids, const std::function<void(int, const Tensor&)>& layer_hook) {
  return encode_many({ids}, layer_hook)[0];
}

TextEncoder::Batch TextEncoder::make_batch(const std::vector<std::vector<int32_t>>& prompts) {
  Batch b;
  std::vector<int32_t> all;
  for (const std::vector<int32_t>& ids : prompts) {  // none empty (encode_many)
    b.start.push_back(int64_t(all.size()));
    b.len.push_back(int64_t(ids.size()));
    all.insert(all.end(), ids.begin(), ids.end());
  }
  const int64_t rows = int64_t(all.size()), H = cfg_.hidden;
  b.x = embed(all);
  Tensor s = host_tensor(DType::F32, {rows, cfg_.rot_dim}), c = host_tensor(DType::F32, {rows, cfg_.rot_dim});
  for (size_t p = 0; p < prompts.size(); ++p) {
    Tensor sp = s.slice_rows(b.start[p], b.len[p]), cp = c.slice_rows(b.start[p], b.len[p]);
    rope_tables(b.len[p], cfg_.rot_dim, cfg_.rope_theta, sp, cp);
  }
  b.sin = be_.upload(s);
  b.cos = be_.upload(c);
  b.xn = be_.alloc(DType::F32, {rows, H});
  b.delta = be_.alloc(DType::F32, {rows, H});
  return b;
}

std::vector<Tensor> TextEncoder::encode_many(const std::vector<std::vector<int32_t>>& prompts,
                                             const std::function<void(int, const Tensor&)>& layer_hook) {
  using Clock = std::chrono::steady_clock;
  for (const std::vector<int32_t>& ids : prompts)
    if (ids.empty()) throw usage_error("text encoder: empty token sequence");
  // A resident source loads every layer when the first pass starts (load_s, with the warm-up
  // that overlaps it); the others' set-up (staging buffers, slots) belongs to the pass (encode_s).
  times_ = TextEncoderTimes();
  auto t_encode = Clock::now();
  if (!source_) {
    source_ = make_te_weight_source(be_, weights_, prefix_, int(cfg_.layers), residency_);
    std::unique_ptr<Batch> warm;
    source_->load([&](int l) { warm_up(l, prompts, warm); });
    if (source_->load_seconds() > 0) {
      times_.load_s = std::chrono::duration<double>(Clock::now() - t_encode).count();
      t_encode = Clock::now();
    }
  }
  const int64_t H = cfg_.hidden;
  Batch b = make_batch(prompts);

  source_->begin_pass();
  for (int l = 0; l < int(cfg_.layers); ++l) {
    // A long pass (1024-token prompts on the host backend: minutes sanitized) stops at the
    // next layer on a signal. The pass is ended first, so no copy still reads a staging
    // buffer when the source is destroyed by the unwinding.
    if (pending_signal()) {
      source_->end_pass();
      check_interrupted();
    }
    source_->before_layer(l);
    run_layer(l, b);
    source_->after_layer(l);
    if (layer_hook && prompts.size() == 1) layer_hook(l, be_.download(b.x));
  }
  source_->end_pass();
  b.xn = Tensor();
  b.delta = Tensor();
  Tensor y = be_.alloc(DType::F32, {b.x.rows(), H});
  const Tensor w = weight(-1, "norm.weight");
  be_.core().rms_norm(b.x, &w, NormWeight::OnePlus, cfg_.eps, H, y);
  const Tensor all = be_.download(y);
  std::vector<Tensor> out;
  for (size_t p = 0; p < prompts.size(); ++p) out.push_back(all.slice_rows(b.start[p], b.len[p]));
  times_.encode_s = std::chrono::duration<double>(Clock::now() - t_encode).count();
  return out;
}

void TextEncoder::warm_up(int l, const std::vector<std::vector<int32_t>>& prompts, std::unique_ptr<Batch>& warm) {
  const TextLayerKind kind = cfg_.layer_types[size_t(l)];
  for (int j = 0; j < l; ++j)
    if (cfg_.layer_types[size_t(j)] == kind) return;  // not the first of its kind
  if (!warm) warm = std::make_unique<Batch>(make_batch(prompts));
  run_layer(l, *warm);
}

// x += Mixer(ZRMS_in(x)); x += MLP(ZRMS_post(x)), over all prompts' rows.
void TextEncoder::run_layer(int l, Batch& b) {
  CoreOps& core = be_.core();
  const int64_t H = cfg_.hidden;
  {
    const Tensor w = weight(l, "input_layernorm.weight");
    core.rms_norm(b.x, &w, NormWeight::OnePlus, cfg_.eps, H, b.xn);
  }
  if (cfg_.layer_types[size_t(l)] == TextLayerKind::FullAttention)
    attention_mixer(l, b, b.delta);
  else
    deltanet_mixer(l, b, b.delta);
  core.add(b.x, b.delta, nullptr);
  {
    const Tensor w = weight(l, "post_attention_layernorm.weight");
    core.rms_norm(b.x, &w, NormWeight::OnePlus, cfg_.eps, H, b.xn);
  }
  mlp(l, b.xn, b.delta);
  core.add(b.x, b.delta, nullptr);
}

void TextEncoder::fused_linear(int l, const std::vector<std::string>& names, const Tensor& x, Tensor& y) {
  std::vector<std::string> full;
  for (const std::string& n : names) full.push_back(prefix_ + "layers." + std::to_string(l) + "." + n);
  if (std::optional<Tensor> w = source_->get_fused(l, full)) {
    be_.core().linear(x, *w, nullptr, y);
    return;
  }
  int64_t col = 0;
  for (const std::string& n : names) {
    const Tensor w = weight(l, n);
    if (col + w.rows() > y.cols())
      throw failure("text encoder: layer " + std::to_string(l) + " projection '" + n + "' has " +
                    std::to_string(w.rows()) + " rows, more than its output block");
    Tensor block = y.slice_cols(col, w.rows());
    be_.core().linear(x, w, nullptr, block);
    col += w.rows();
  }
}

// Gated full attention (docs/text_encoder.md 3.3). q_proj emits per head [query | gate];
// q_norm reads the query halves through a strided view and writes them packed, so RoPE and
// attention see an ordinary [T, heads·hd] matrix. k and v come from one GEMM; attention runs per
// prompt on its rows (causal within the prompt).
void TextEncoder::attention_mixer(int l, const Batch& b, Tensor& y) {
  CoreOps& core = be_.core();
  const int64_t M = b.xn.rows(), nh = cfg_.heads, nkv = cfg_.kv_heads, hd = cfg_.head_dim;
  const Tensor& xn = b.xn;

  Tensor qg = be_.alloc(DType::F32, {M, nh * 2 * hd});
  core.linear(xn, weight(l, "self_attn.q_proj.weight"), nullptr, qg);
  const Tensor per_head = qg.reshape({M * nh, 2 * hd});
  Tensor q = be_.alloc(DType::F32, {M, nh * hd});
  {
    Tensor q_rows = q.reshape({M * nh, hd});
    const Tensor w = weight(l, "self_attn.q_norm.weight");
    core.rms_norm(per_head.slice_cols(0, hd), &w, NormWeight::OnePlus, cfg_.eps, hd, q_rows);
  }
  Tensor kv = be_.alloc(DType::F32, {M, 2 * nkv * hd});
  fused_linear(l, te_fused_groups()[kTeAttentionKv], xn, kv);
  Tensor k = be_.alloc(DType::F32, {M, nkv * hd});
  {
    const Tensor w = weight(l, "self_attn.k_norm.weight");
    core.rms_norm(kv.slice_cols(0, nkv * hd), &w, NormWeight::OnePlus, cfg_.eps, hd, k);
  }
  const Tensor v = kv.slice_cols(nkv * hd, nkv * hd);

  core.rope(q, b.sin, b.cos, hd, cfg_.rot_dim);
  core.rope(k, b.sin, b.cos, hd, cfg_.rot_dim);
  Tensor att = be_.alloc(DType::F32, {M, nh * hd});
  const float scale = float(1.0 / std::sqrt(double(hd)));
  for (size_t p = 0; p < b.start.size(); ++p) {
    const int64_t s = b.start[p], T = b.len[p];
    Tensor out = att.slice_rows(s, T);
    core.attention(q.slice_rows(s, T), k.slice_rows(s, T), v.slice_rows(s, T), out, nh, nkv, hd, scale, true);
  }

  Tensor gated = be_.alloc(DType::F32, {M * nh, hd});
  core.gated_unit(GatedUnit::SigmoidGate, att.reshape({M * nh, hd}), per_head.slice_cols(hd, hd), gated);
  core.linear(gated.reshape({M, nh * hd}), weight(l, "self_attn.o_proj.weight"), nullptr, y);
}

// Gated DeltaNet (docs/text_encoder.md 3.4-3.5): one GEMM for the input projections
// (qkv | z | a | b), causal conv + SiLU over the fused q|k|v channels per prompt, gates and the
// l2-normalised q and k over all rows, the chunked delta rule per prompt, the gated norm.
void TextEncoder::deltanet_mixer(int l, const Batch& b, Tensor& y) {
  CoreOps& core = be_.core();
  TextOps& text = be_.text();
  const int64_t M = b.xn.rows(), kw = cfg_.linear_key_width(), vw = cfg_.linear_value_width();
  const int64_t nv = cfg_.linear_value_heads, cw = cfg_.conv_width();

  Tensor proj = be_.alloc(DType::F32, {M, cw + vw + 2 * nv});
  fused_linear(l, te_fused_groups()[kTeDeltaNetInput], b.xn, proj);
  Tensor conv = be_.alloc(DType::F32, {M, cw});
  {
    const Tensor w = weight(l, "linear_attn.conv1d.weight");
    for (size_t p = 0; p < b.start.size(); ++p) {
      Tensor rows = conv.slice_rows(b.start[p], b.len[p]);
      text.causal_conv1d_silu(proj.slice_rows(b.start[p], b.len[p]).slice_cols(0, cw), w, rows);
    }
  }
  const Tensor z = proj.slice_cols(cw, vw);

  Tensor g = be_.alloc(DType::F32, {M, nv}), beta = be_.alloc(DType::F32, {M, nv});
  text.deltanet_gates(proj.slice_cols(cw + vw, nv), proj.slice_cols(cw + vw + nv, nv), weight(l, "linear_attn.A_log"),
                      weight(l, "linear_attn.dt_bias"), g, beta);

  // q | k normalised per key head in one pass (the conv's first 2·kw channels).
  Tensor qk = be_.alloc(DType::F32, {M, 2 * kw});
  text.l2_norm(conv.slice_cols(0, 2 * kw), kL2NormEps, cfg_.linear_key_dim, qk);
  Tensor core_out = be_.alloc(DType::F32, {M, vw});
  const float scale = float(1.0 / std::sqrt(double(cfg_.linear_key_dim)));
  for (size_t p = 0; p < b.start.size(); ++p) {
    const int64_t s = b.start[p], T = b.len[p];
    const Tensor qk_p = qk.slice_rows(s, T);
    Tensor out = core_out.slice_rows(s, T);
    text.delta_rule_chunked(qk_p.slice_cols(0, kw), qk_p.slice_cols(kw, kw), conv.slice_rows(s, T).slice_cols(2 * kw, vw),
                            g.slice_rows(s, T), beta.slice_rows(s, T), cfg_.linear_key_heads, scale, kDeltaChunk,
                            nullptr, out);
  }

  Tensor normed = be_.alloc(DType::F32, {M, vw});
  text.gated_rms_norm(core_out, z, weight(l, "linear_attn.norm.weight"), cfg_.eps, cfg_.linear_value_dim, normed);
  core.linear(normed, weight(l, "linear_attn.out_proj.weight"), nullptr, y);
}

// SwiGLU MLP: down(silu(gate(x)) ⊙ up(x)), gate and up from one GEMM.
void TextEncoder::mlp(int l, const Tensor& xn, Tensor& y) {
  CoreOps& core = be_.core();
  const int64_t M = xn.rows(), I = cfg_.intermediate;
  Tensor gate_up = be_.alloc(DType::F32, {M, 2 * I}), act = be_.alloc(DType::F32, {M, I});
  fused_linear(l, te_fused_groups()[kTeMlpInput], xn, gate_up);
  core.gated_unit(GatedUnit::SwiGlu, gate_up.slice_cols(0, I), gate_up.slice_cols(I, I), act);
  core.linear(act, weight(l, "mlp.down_proj.weight"), nullptr, y);
}

}  // namespace moss
