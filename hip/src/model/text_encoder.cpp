// The text encoder's forward pass (research/text_encoder.md section 3). Activations stay f32;
// every layer is: x += Mixer(ZRMS_in(x)); x += MLP(ZRMS_post(x)); then out = ZRMS_final(x).
#include "model/text_encoder.h"

#include <chrono>
#include <cmath>
#include <map>

#include "util/error.h"

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

std::vector<Tensor> TextEncoder::encode_many(const std::vector<std::vector<int32_t>>& prompts,
                                             const std::function<void(int, const Tensor&)>& layer_hook) {
  using Clock = std::chrono::steady_clock;
  // A resident source loads every layer when it is made (load_s); the others' set-up (staging
  // buffers, slots) belongs to the pass (encode_s).
  times_ = TextEncoderTimes();
  auto t_encode = Clock::now();
  if (!source_) {
    source_ = make_te_weight_source(be_, weights_, prefix_, int(cfg_.layers), residency_);
    if (source_->load_seconds() > 0) {
      times_.load_s = std::chrono::duration<double>(Clock::now() - t_encode).count();
      t_encode = Clock::now();
    }
  }
  const int64_t H = cfg_.hidden;
  CoreOps& core = be_.core();
  struct Prompt {
    Tensor x, xn, delta, sin, cos;  // residual stream, scratch, RoPE tables for the attention layers
  };
  std::vector<Prompt> state(prompts.size());
  for (size_t p = 0; p < prompts.size(); ++p) {
    const std::vector<int32_t>& ids = prompts[p];
    if (ids.empty()) throw usage_error("text encoder: empty token sequence");
    const int64_t T = int64_t(ids.size());
    state[p].x = embed(ids);
    Tensor s = host_tensor(DType::F32, {T, cfg_.rot_dim}), c = host_tensor(DType::F32, {T, cfg_.rot_dim});
    rope_tables(T, cfg_.rot_dim, cfg_.rope_theta, s, c);
    state[p].sin = be_.upload(s);
    state[p].cos = be_.upload(c);
    state[p].xn = be_.alloc(DType::F32, {T, H});
    state[p].delta = be_.alloc(DType::F32, {T, H});
  }

  // Layers outside, prompts inside: each layer's weights cross to the device once per pass.
  source_->begin_pass();
  for (int l = 0; l < int(cfg_.layers); ++l) {
    source_->before_layer(l);
    for (Prompt& st : state) {
      {
        const Tensor w = weight(l, "input_layernorm.weight");
        core.rms_norm(st.x, &w, NormWeight::OnePlus, cfg_.eps, H, st.xn);
      }
      if (cfg_.layer_types[size_t(l)] == TextLayerKind::FullAttention)
        attention_mixer(l, st.xn, st.sin, st.cos, st.delta);
      else
        deltanet_mixer(l, st.xn, st.delta);
      core.add(st.x, st.delta, nullptr);
      {
        const Tensor w = weight(l, "post_attention_layernorm.weight");
        core.rms_norm(st.x, &w, NormWeight::OnePlus, cfg_.eps, H, st.xn);
      }
      mlp(l, st.xn, st.delta);
      core.add(st.x, st.delta, nullptr);
    }
    source_->after_layer(l);
    if (layer_hook && state.size() == 1) layer_hook(l, be_.download(state[0].x));
  }
  source_->end_pass();
  std::vector<Tensor> out;
  const Tensor w = weight(-1, "norm.weight");
  for (Prompt& st : state) {
    st.xn = Tensor();
    st.delta = Tensor();
    Tensor y = be_.alloc(DType::F32, {st.x.rows(), H});
    core.rms_norm(st.x, &w, NormWeight::OnePlus, cfg_.eps, H, y);
    out.push_back(be_.download(y));
  }
  times_.encode_s = std::chrono::duration<double>(Clock::now() - t_encode).count();
  return out;
}

// Gated full attention (research/text_encoder.md 3.3). q_proj emits per head [query | gate];
// q_norm reads the query halves through a strided view and writes them packed, so RoPE and
// attention see an ordinary [T, heads·hd] matrix.
void TextEncoder::attention_mixer(int l, const Tensor& xn, const Tensor& sin_d, const Tensor& cos_d, Tensor& y) {
  CoreOps& core = be_.core();
  const int64_t T = xn.rows(), nh = cfg_.heads, nkv = cfg_.kv_heads, hd = cfg_.head_dim;

  Tensor qg = be_.alloc(DType::F32, {T, nh * 2 * hd});
  core.linear(xn, weight(l, "self_attn.q_proj.weight"), nullptr, qg);
  const Tensor per_head = qg.reshape({T * nh, 2 * hd});
  Tensor q = be_.alloc(DType::F32, {T, nh * hd});
  {
    Tensor q_rows = q.reshape({T * nh, hd});
    const Tensor w = weight(l, "self_attn.q_norm.weight");
    core.rms_norm(per_head.slice_cols(0, hd), &w, NormWeight::OnePlus, cfg_.eps, hd, q_rows);
  }
  Tensor k = be_.alloc(DType::F32, {T, nkv * hd});
  {
    Tensor k_raw = be_.alloc(DType::F32, {T, nkv * hd});
    core.linear(xn, weight(l, "self_attn.k_proj.weight"), nullptr, k_raw);
    const Tensor w = weight(l, "self_attn.k_norm.weight");
    core.rms_norm(k_raw, &w, NormWeight::OnePlus, cfg_.eps, hd, k);
  }
  Tensor v = be_.alloc(DType::F32, {T, nkv * hd});
  core.linear(xn, weight(l, "self_attn.v_proj.weight"), nullptr, v);

  core.rope(q, sin_d, cos_d, hd, cfg_.rot_dim);
  core.rope(k, sin_d, cos_d, hd, cfg_.rot_dim);
  Tensor att = be_.alloc(DType::F32, {T, nh * hd});
  core.attention(q, k, v, att, nh, nkv, hd, float(1.0 / std::sqrt(double(hd))), true);

  Tensor gated = be_.alloc(DType::F32, {T * nh, hd});
  core.gated_unit(GatedUnit::SigmoidGate, att.reshape({T * nh, hd}), per_head.slice_cols(hd, hd), gated);
  core.linear(gated.reshape({T, nh * hd}), weight(l, "self_attn.o_proj.weight"), nullptr, y);
}

// Gated DeltaNet (research/text_encoder.md 3.4-3.5): projections, causal conv + SiLU over the
// fused q|k|v channels, gates, l2-normalised q and k, the chunked delta rule, the gated norm.
void TextEncoder::deltanet_mixer(int l, const Tensor& xn, Tensor& y) {
  CoreOps& core = be_.core();
  TextOps& text = be_.text();
  const int64_t T = xn.rows(), kw = cfg_.linear_key_width(), vw = cfg_.linear_value_width();
  const int64_t nv = cfg_.linear_value_heads;

  Tensor conv = be_.alloc(DType::F32, {T, cfg_.conv_width()});
  {
    Tensor qkv = be_.alloc(DType::F32, {T, cfg_.conv_width()});
    core.linear(xn, weight(l, "linear_attn.in_proj_qkv.weight"), nullptr, qkv);
    text.causal_conv1d_silu(qkv, weight(l, "linear_attn.conv1d.weight"), conv);
  }
  Tensor z = be_.alloc(DType::F32, {T, vw});
  core.linear(xn, weight(l, "linear_attn.in_proj_z.weight"), nullptr, z);

  Tensor g = be_.alloc(DType::F32, {T, nv}), beta = be_.alloc(DType::F32, {T, nv});
  {
    Tensor a = be_.alloc(DType::F32, {T, nv}), b = be_.alloc(DType::F32, {T, nv});
    core.linear(xn, weight(l, "linear_attn.in_proj_a.weight"), nullptr, a);
    core.linear(xn, weight(l, "linear_attn.in_proj_b.weight"), nullptr, b);
    text.deltanet_gates(a, b, weight(l, "linear_attn.A_log"), weight(l, "linear_attn.dt_bias"), g, beta);
  }

  Tensor q = be_.alloc(DType::F32, {T, kw}), k = be_.alloc(DType::F32, {T, kw});
  text.l2_norm(conv.slice_cols(0, kw), kL2NormEps, cfg_.linear_key_dim, q);
  text.l2_norm(conv.slice_cols(kw, kw), kL2NormEps, cfg_.linear_key_dim, k);
  Tensor core_out = be_.alloc(DType::F32, {T, vw});
  text.delta_rule_chunked(q, k, conv.slice_cols(2 * kw, vw), g, beta, cfg_.linear_key_heads,
                          float(1.0 / std::sqrt(double(cfg_.linear_key_dim))), kDeltaChunk, nullptr, core_out);

  Tensor normed = be_.alloc(DType::F32, {T, vw});
  text.gated_rms_norm(core_out, z, weight(l, "linear_attn.norm.weight"), cfg_.eps, cfg_.linear_value_dim, normed);
  core.linear(normed, weight(l, "linear_attn.out_proj.weight"), nullptr, y);
}

// SwiGLU MLP: down(silu(gate(x)) ⊙ up(x)).
void TextEncoder::mlp(int l, const Tensor& xn, Tensor& y) {
  CoreOps& core = be_.core();
  const int64_t T = xn.rows(), I = cfg_.intermediate;
  Tensor gate = be_.alloc(DType::F32, {T, I}), up = be_.alloc(DType::F32, {T, I}), act = be_.alloc(DType::F32, {T, I});
  core.linear(xn, weight(l, "mlp.gate_proj.weight"), nullptr, gate);
  core.linear(xn, weight(l, "mlp.up_proj.weight"), nullptr, up);
  core.gated_unit(GatedUnit::SwiGlu, gate, up, act);
  core.linear(act, weight(l, "mlp.down_proj.weight"), nullptr, y);
}

}  // namespace moss
