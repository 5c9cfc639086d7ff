// The VAE decoder's schedule (docs/vae.md section 3.4) and its activation accounting.
#include "model/vae.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "util/error.h"
#include "util/interrupt.h"

namespace moss {

namespace {

const char* const kAttention = "decoder.mid_block.attentions.0";

// Live and peak bytes of one decode's activations.
struct ByteCount {
  size_t live = 0, peak = 0;
};

// A tensor's owner wrapped so that its bytes count as live until the last view goes: the
// count follows the schedule's real lifetimes, whatever the backend.
class CountedOwner {
 public:
  CountedOwner(std::shared_ptr<void> inner, std::shared_ptr<ByteCount> count, size_t bytes)
      : inner_(std::move(inner)), count_(std::move(count)), bytes_(bytes) {
    count_->live += bytes_;
    count_->peak = std::max(count_->peak, count_->live);
  }
  ~CountedOwner() { count_->live -= bytes_; }
  CountedOwner(const CountedOwner&) = delete;
  CountedOwner& operator=(const CountedOwner&) = delete;

 private:
  std::shared_ptr<void> inner_;
  std::shared_ptr<ByteCount> count_;
  size_t bytes_;
};

// One decode. With a backend it runs the ops; without one it plans: tensors have shapes but
// no storage and no op runs, so decode_activation_bytes sees exactly decode's allocations.
// Functions take the maps they consume by value (callers move them in) and reset them once
// spent, so each map is released as soon as the schedule no longer needs it (a by-value
// parameter may otherwise live to the end of the caller's full expression).
class DecodeRun {
 public:
  DecodeRun(const VaeConfig& cfg, Backend* be, const std::map<std::string, Tensor>* weights)
      : cfg_(cfg), be_(be), weights_(weights) {}

  size_t peak() const { return count_->peak; }

  // The packed latent on the backend (planning: a host tensor of the right shape suffices).
  Tensor input(const Tensor& host_packed) {
    if (planning()) return alloc(host_packed.dims());
    return track(be_->upload(host_packed));
  }

  // Batch-norm inverse + unpatchify: [p²·L, h, w] -> [L, p·h, p·w].
  Tensor unpack(Tensor packed) {
    const int64_t p = cfg_.patch_size;
    Tensor z = alloc({cfg_.latent_channels, packed.shape[1] * p, packed.shape[2] * p});
    if (!planning())
      be_->vae().batch_norm_unpatchify(packed, w("bn.running_mean"), w("bn.running_var"), cfg_.batch_norm_eps, p, z);
    packed = Tensor();
    return z;
  }

  // post_quant_conv and the decoder: [L, h, w] -> [out_channels, h·2^(levels-1), ...].
  Tensor decode(Tensor z) {
    if (cfg_.use_post_quant_conv) {
      Tensor q = alloc(z.dims());
      conv(z, "post_quant_conv", Conv2dOptions(), q);
      z = std::move(q);
    }
    Tensor h = alloc({width(0), z.shape[1], z.shape[2]});
    conv(z, "decoder.conv_in", Conv2dOptions(), h);
    z = Tensor();
    h = resnet(std::move(h), "decoder.mid_block.resnets.0", width(0));
    if (cfg_.mid_block_add_attention) h = attention(std::move(h), kAttention);
    h = resnet(std::move(h), "decoder.mid_block.resnets.1", width(0));
    for (int64_t i = 0; i < cfg_.levels(); ++i) {
      const std::string p = "decoder.up_blocks." + std::to_string(i);
      for (int64_t r = 0; r <= cfg_.layers_per_block; ++r)
        h = resnet(std::move(h), p + ".resnets." + std::to_string(r), width(i));
      if (i + 1 < cfg_.levels()) h = upsample(std::move(h), p + ".upsamplers.0");
    }
    Tensor image = alloc({cfg_.out_channels, h.shape[1], h.shape[2]});
    const Tensor s = stats(h);
    const GroupNormInput n = norm(s, "decoder.conv_norm_out", true);
    conv(h, "decoder.conv_out", normalised(&n), image);
    return image;
  }

 private:
  bool planning() const { return be_ == nullptr; }

  // Width of up_blocks.i (the decoder runs its levels deepest first).
  int64_t width(int64_t up_block) const { return cfg_.block_out_channels[size_t(cfg_.levels() - 1 - up_block)]; }

  Tensor track(Tensor t) {
    const size_t bytes = t.nbytes();
    t.owner = std::make_shared<CountedOwner>(std::move(t.owner), count_, bytes);
    return t;
  }
  Tensor alloc(const std::vector<int64_t>& dims) {
    return track(planning() ? Tensor(nullptr, DType::F32, dims) : be_->alloc(DType::F32, dims));
  }

  const Tensor& w(const std::string& name) const {
    static const Tensor none;
    if (planning()) return none;
    auto it = weights_->find(name);
    if (it == weights_->end()) throw failure("VAE decoder: weight '" + name + "' was not loaded");
    return it->second;
  }

  static Conv2dOptions normalised(const GroupNormInput* n) {
    Conv2dOptions o;
    o.norm = n;
    return o;
  }

  // The group statistics of x (f32 [groups, 2]).
  Tensor stats(const Tensor& x) {
    Tensor s = alloc({cfg_.norm_num_groups, 2});
    if (!planning()) be_->vae().group_norm_stats(x, cfg_.norm_num_groups, cfg_.norm_eps, s);
    return s;
  }
  GroupNormInput norm(const Tensor& stats, const std::string& name, bool silu) const {
    GroupNormInput n;
    n.stats = &stats;
    n.gamma = &w(name + ".weight");
    n.beta = &w(name + ".bias");
    n.silu = silu;
    return n;
  }

  void conv(const Tensor& x, const std::string& name, const Conv2dOptions& opt, Tensor& out) {
    if (!planning()) be_->vae().conv2d(x, w(name + ".weight"), w(name + ".bias"), opt, out);
  }

  // ResnetBlock2D: out = shortcut(x) + conv2(SiLU(GN2(conv1(SiLU(GN1(x)))))).
  Tensor resnet(Tensor x, const std::string& p, int64_t cout) {
    // A large decode takes seconds on a GPU and minutes on the host backend: a signal stops it
    // at the next resnet, not at its end. Freed buffers go to the backend's cache, whose
    // hipFree waits for the launches still queued.
    if (!planning()) check_interrupted();
    const int64_t cin = x.shape[0], H = x.shape[1], W = x.shape[2];
    Tensor h = alloc({cout, H, W});
    {
      const Tensor s = stats(x);
      const GroupNormInput n = norm(s, p + ".norm1", true);
      conv(x, p + ".conv1", normalised(&n), h);
    }
    Tensor out;
    if (cin == cout) {
      out = std::move(x);  // conv2 reads only h, so it may write over its residual, the input
    } else {
      out = alloc({cout, H, W});
      conv(x, p + ".conv_shortcut", Conv2dOptions(), out);
      x = Tensor();  // conv2 adds onto the shortcut: the input is no longer needed
    }
    const Tensor s = stats(h);
    const GroupNormInput n = norm(s, p + ".norm2", true);
    Conv2dOptions o = normalised(&n);
    o.residual = &out;
    conv(h, p + ".conv2", o, out);
    return out;
  }

  // The mid block's attention: one head over all H·W positions, residual onto x.
  Tensor attention(Tensor x, const std::string& p) {
    const int64_t C = x.shape[0], N = x.shape[1] * x.shape[2];
    Tensor tokens = alloc({N, C});
    {
      const Tensor s = stats(x);
      const GroupNormInput n = norm(s, p + ".group_norm", false);
      if (!planning()) be_->vae().group_norm_to_tokens(x, n, tokens);
    }
    Tensor qkv = alloc({N, 3 * C});
    if (!planning()) {
      CoreOps& core = be_->core();
      core.linear(tokens, w(p + ".to_qkv.weight"), &w(p + ".to_qkv.bias"), qkv);
      Tensor q = qkv.slice_cols(0, C);
      const Tensor k = qkv.slice_cols(C, C), v = qkv.slice_cols(2 * C, C);
      // The normalised tokens are spent once projected: they take the attention output; q is
      // spent after the attention: it takes the output projection.
      core.attention(q, k, v, tokens, 1, 1, C, float(1.0 / std::sqrt(double(C))), false);
      core.linear(tokens, w(p + ".to_out.0.weight"), &w(p + ".to_out.0.bias"), q);
      be_->vae().add_tokens(x, q);
    }
    return x;
  }

  // Upsample2D: nearest 2x read through by the following 3x3 conv.
  Tensor upsample(Tensor x, const std::string& p) {
    Tensor out = alloc({x.shape[0], 2 * x.shape[1], 2 * x.shape[2]});
    Conv2dOptions o;
    o.upsample2x = true;
    conv(x, p + ".conv", o, out);
    x = Tensor();
    return out;
  }

  const VaeConfig& cfg_;
  Backend* be_;
  const std::map<std::string, Tensor>* weights_;
  std::shared_ptr<ByteCount> count_ = std::make_shared<ByteCount>();
};

// A contiguous host f32 copy of a float tensor (the tensor itself when it already is one).
Tensor host_f32(const Tensor& t) {
  if (t.where == Where::Host && t.dtype == DType::F32 && t.contiguous()) return t;
  Tensor out = host_tensor(DType::F32, t.dims());
  const std::vector<float> v = to_f32_vector(t);
  std::copy(v.begin(), v.end(), out.ptr<float>());
  return out;
}

bool is_fused_projection(const std::string& name) {
  for (const char* proj : {".to_q.", ".to_k.", ".to_v."})
    if (name.rfind(std::string(kAttention) + proj, 0) == 0) return true;
  return false;
}

}  // namespace

VaeDecoder::VaeDecoder(Backend& be, const WeightFiles& weights, const VaeConfig& cfg) : be_(be), cfg_(cfg) {
  const std::vector<ExpectedTensor> expected = vae_expected_tensors(cfg);
  check_tensors(weights, expected, vae_ignored_prefixes());
  for (const ExpectedTensor& e : expected) {
    if (e.optional || is_fused_projection(e.name)) continue;  // bn.num_batches_tracked is unused
    weights_[e.name] = be.upload(host_f32(weights.get(e.name)));
  }
  if (cfg.mid_block_add_attention) {
    // q, k and v as one [3C, C] projection: one GEMM, and its column slices feed the attention.
    const int64_t C = cfg.block_out_channels.back();
    Tensor wqkv = host_tensor(DType::F32, {3 * C, C}), bqkv = host_tensor(DType::F32, {3 * C});
    const char* projs[] = {".to_q", ".to_k", ".to_v"};
    for (int i = 0; i < 3; ++i) {
      const std::string p = std::string(kAttention) + projs[i];
      const std::vector<float> wv = to_f32_vector(weights.get(p + ".weight")), bv = to_f32_vector(weights.get(p + ".bias"));
      std::copy(wv.begin(), wv.end(), wqkv.ptr<float>() + i * C * C);
      std::copy(bv.begin(), bv.end(), bqkv.ptr<float>() + i * C);
    }
    weights_[std::string(kAttention) + ".to_qkv.weight"] = be.upload(wqkv);
    weights_[std::string(kAttention) + ".to_qkv.bias"] = be.upload(bqkv);
  }
}

static void check_packed(const VaeConfig& cfg, const Tensor& t) {
  if (t.where != Where::Host || t.rank != 3 || t.shape[0] != cfg.packed_channels() || t.shape[1] <= 0 ||
      t.shape[2] <= 0)
    throw failure("VAE decoder: the latent must be a host tensor [" + std::to_string(cfg.packed_channels()) +
                  ", h, w], got " + t.shape_str());
}

Tensor VaeDecoder::unpack_latent(const Tensor& latent_packed) {
  check_packed(cfg_, latent_packed);
  DecodeRun run(cfg_, &be_, &weights_);
  const Tensor z = run.unpack(run.input(host_f32(latent_packed)));
  be_.synchronize();
  Tensor out = be_.download(z);
  last_peak_bytes_ = run.peak();
  return out;
}

Tensor VaeDecoder::decode(const Tensor& latent_packed) {
  check_packed(cfg_, latent_packed);
  DecodeRun run(cfg_, &be_, &weights_);
  const Tensor image = run.decode(run.unpack(run.input(host_f32(latent_packed))));
  be_.synchronize();
  Tensor out = be_.download(image);
  last_peak_bytes_ = run.peak();
  return out;
}

size_t VaeDecoder::decode_activation_bytes(const VaeConfig& cfg, int64_t height, int64_t width) {
  const int64_t s = cfg.packed_scale();
  if (height <= 0 || width <= 0 || height % s != 0 || width % s != 0)
    throw usage_error("VAE decode size " + std::to_string(height) + "x" + std::to_string(width) +
                      ": height and width must be positive multiples of " + std::to_string(s));
  DecodeRun run(cfg, nullptr, nullptr);
  const Tensor shape_only(nullptr, DType::F32, {cfg.packed_channels(), height / s, width / s});
  run.decode(run.unpack(run.input(shape_only)));
  return run.peak();
}

}  // namespace moss
