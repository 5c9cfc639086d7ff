#include "ops/hip/op_profiler.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "ops/op_profile_table.h"

namespace moss {

namespace {
// Brackets still in flight before begin() waits for the oldest: bounds the events held while
// the host runs far ahead of the device (a whole DiT step is ~1300 ops).
constexpr size_t kMaxPending = 16384;
}  // namespace

std::shared_ptr<OpProfiler> OpProfiler::from_env(hipStream_t stream) {
  const char* v = std::getenv("MOSSINFER_PROFILE");
  if (!v || !*v || std::string(v) == "0") return nullptr;
  return std::make_shared<OpProfiler>(stream);
}

OpProfiler::~OpProfiler() {
  for (size_t i = pending_head_; i < pending_.size(); ++i) {
    (void)hipEventDestroy(pending_[i].start);
    (void)hipEventDestroy(pending_[i].stop);
  }
  for (hipEvent_t e : free_events_) (void)hipEventDestroy(e);
  if (last_stop_) (void)hipEventDestroy(last_stop_);
}

hipEvent_t OpProfiler::take_event() {
  if (free_events_.empty()) {
    hipEvent_t e;
    MOSS_HIP_CHECK(hipEventCreate(&e));
    return e;
  }
  hipEvent_t e = free_events_.back();
  free_events_.pop_back();
  return e;
}

void OpProfiler::begin(std::string name) {
  drain(pending_.size() - pending_head_ >= kMaxPending);
  open_.name = std::move(name);
  open_.start = take_event();
  open_.stop = take_event();
  MOSS_HIP_CHECK(hipEventRecord(open_.start, stream_));
}

void OpProfiler::end() {
  // Recorded even when the op threw: the bracket stays balanced (its time is then meaningless
  // but the process is failing anyway).
  (void)hipEventRecord(open_.stop, stream_);
  pending_.push_back(std::move(open_));
  open_ = Pending{};
}

void OpProfiler::drain(bool wait) {
  while (pending_head_ < pending_.size()) {
    Pending& p = pending_[pending_head_];
    if (wait) {
      MOSS_HIP_CHECK(hipEventSynchronize(p.stop));
    } else {
      const hipError_t q = hipEventQuery(p.stop);
      if (q == hipErrorNotReady) break;
      MOSS_HIP_CHECK(q);
    }
    float ms = 0;
    MOSS_HIP_CHECK(hipEventElapsedTime(&ms, p.start, p.stop));
    Total& t = totals_[p.name];
    ++t.calls;
    t.ms += double(ms);
    if (last_stop_) {
      float gap = 0;
      MOSS_HIP_CHECK(hipEventElapsedTime(&gap, last_stop_, p.start));
      Total& g = totals_[gap < 0.1f ? "(between ops, < 0.1 ms)" : "(between ops, >= 0.1 ms)"];
      ++g.calls;
      g.ms += double(gap);
      free_events_.push_back(last_stop_);
    }
    last_stop_ = p.stop;
    free_events_.push_back(p.start);
    ++pending_head_;
    wait = false;  // one blocking wait at most: the rest are then likely done
  }
  if (pending_head_ == pending_.size() || pending_head_ > 4096) {
    pending_.erase(pending_.begin(), pending_.begin() + std::ptrdiff_t(pending_head_));
    pending_head_ = 0;
  }
}

void OpProfiler::report(const std::string& title) {
  MOSS_HIP_CHECK(hipStreamSynchronize(stream_));
  while (pending_head_ < pending_.size()) drain(true);
  if (totals_.empty()) return;
  std::vector<OpProfileRow> rows;
  for (const auto& [name, t] : totals_) rows.push_back({name, t.calls, t.ms});
  std::fputs(format_op_profile(title, rows).c_str(), stderr);
  std::fflush(stderr);
  totals_.clear();
}

namespace {

std::string dims(const Tensor& t) {
  std::string s;
  for (int i = 0; i < t.rank; ++i) s += (i ? "x" : "") + std::to_string(t.shape[i]);
  return s;
}

class ProfiledCoreOps final : public CoreOps {
 public:
  ProfiledCoreOps(std::unique_ptr<CoreOps> inner, std::shared_ptr<OpProfiler> p)
      : in_(std::move(inner)), p_(std::move(p)) {}

  void linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y) override {
    // The weight's shape tells the projections apart ([out, in]); the x dtype shows whether the
    // GEMM got bf16 activations.
    OpProfiler::Scope s(*p_, "core.linear " + dims(w) + " x:" + dtype_name(x.dtype));
    in_->linear(x, w, bias, y);
  }
  void linear_gated_unit(GatedUnit kind, const Tensor& x, const Tensor& w, const Tensor* bias,
                         Tensor& out) override {
    OpProfiler::Scope s(*p_, "core.linear_gated_unit " + dims(w) + " x:" + dtype_name(x.dtype));
    in_->linear_gated_unit(kind, x, w, bias, out);
  }
  void rms_norm(const Tensor& x, const Tensor* w, NormWeight mode, float eps, int64_t group, Tensor& y) override {
    OpProfiler::Scope s(*p_, "core.rms_norm");
    in_->rms_norm(x, w, mode, eps, group, y);
  }
  void modulate(Tensor& y, const Tensor& shift, const Tensor& scale) override {
    OpProfiler::Scope s(*p_, "core.modulate");
    in_->modulate(y, shift, scale);
  }
  void norm_modulate(const Tensor& x, const Tensor& w, float eps, const Tensor& shift, const Tensor& scale,
                     Tensor& y) override {
    OpProfiler::Scope s(*p_, "core.norm_modulate");
    in_->norm_modulate(x, w, eps, shift, scale, y);
  }
  void add_norm_modulate(Tensor& x, const Tensor& d, const Tensor& gate, const Tensor& w, float eps,
                         const Tensor& shift, const Tensor& scale, Tensor& y) override {
    OpProfiler::Scope s(*p_, "core.add_norm_modulate");
    in_->add_norm_modulate(x, d, gate, w, eps, shift, scale, y);
  }
  void norm_rope(const Tensor& x, const Tensor& w, float eps, int64_t head_dim, const Tensor& sin, const Tensor& cos,
                 Tensor& y) override {
    OpProfiler::Scope s(*p_, "core.norm_rope");
    in_->norm_rope(x, w, eps, head_dim, sin, cos, y);
  }
  void add(Tensor& x, const Tensor& d, const Tensor* gate) override {
    OpProfiler::Scope s(*p_, gate ? "core.add (gated)" : "core.add");
    in_->add(x, d, gate);
  }
  void gated_unit(GatedUnit kind, const Tensor& a, const Tensor& b, Tensor& out) override {
    OpProfiler::Scope s(*p_, kind == GatedUnit::Situ     ? "core.gated_unit situ"
                             : kind == GatedUnit::SwiGlu ? "core.gated_unit swiglu"
                                                         : "core.gated_unit sigmoid");
    in_->gated_unit(kind, a, b, out);
  }
  void silu(const Tensor& x, Tensor& y) override {
    OpProfiler::Scope s(*p_, "core.silu");
    in_->silu(x, y);
  }
  void rope(Tensor& x, const Tensor& sin, const Tensor& cos, int64_t head_dim, int64_t rot_dim) override {
    OpProfiler::Scope s(*p_, "core.rope");
    in_->rope(x, sin, cos, head_dim, rot_dim);
  }
  void attention(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out, int64_t heads, int64_t kv_heads,
                 int64_t head_dim, float scale, bool causal) override {
    OpProfiler::Scope s(*p_, std::string("core.attention") + (causal ? " causal" : "") + " " + dtype_name(q.dtype));
    in_->attention(q, k, v, out, heads, kv_heads, head_dim, scale, causal);
  }
  void embedding(const std::vector<int32_t>& ids, const Tensor& table, Tensor& out) override {
    OpProfiler::Scope s(*p_, "core.embedding");
    in_->embedding(ids, table, out);
  }
  void copy(const Tensor& src, Tensor& dst) override {
    OpProfiler::Scope s(*p_, src.where == Where::Host ? "core.copy (from host)" : "core.copy");
    in_->copy(src, dst);
  }

 private:
  std::unique_ptr<CoreOps> in_;
  std::shared_ptr<OpProfiler> p_;
};

class ProfiledTextOps final : public TextOps {
 public:
  ProfiledTextOps(std::unique_ptr<TextOps> inner, std::shared_ptr<OpProfiler> p)
      : in_(std::move(inner)), p_(std::move(p)) {}

  void causal_conv1d_silu(const Tensor& x, const Tensor& w, Tensor& y) override {
    OpProfiler::Scope s(*p_, "text.causal_conv1d_silu");
    in_->causal_conv1d_silu(x, w, y);
  }
  void deltanet_gates(const Tensor& a, const Tensor& b, const Tensor& a_log, const Tensor& dt_bias, Tensor& g,
                      Tensor& beta) override {
    OpProfiler::Scope s(*p_, "text.deltanet_gates");
    in_->deltanet_gates(a, b, a_log, dt_bias, g, beta);
  }
  void l2_norm(const Tensor& x, float eps, int64_t group, Tensor& y) override {
    OpProfiler::Scope s(*p_, "text.l2_norm");
    in_->l2_norm(x, eps, group, y);
  }
  void delta_rule_chunked(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g, const Tensor& beta,
                          int64_t key_heads, float scale, int64_t chunk, Tensor* state, Tensor& out) override {
    OpProfiler::Scope s(*p_, "text.delta_rule_chunked");
    in_->delta_rule_chunked(q, k, v, g, beta, key_heads, scale, chunk, state, out);
  }
  void delta_rule_recurrent(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g, const Tensor& beta,
                            int64_t key_heads, float scale, Tensor* state, Tensor& out) override {
    OpProfiler::Scope s(*p_, "text.delta_rule_recurrent");
    in_->delta_rule_recurrent(q, k, v, g, beta, key_heads, scale, state, out);
  }
  void gated_rms_norm(const Tensor& x, const Tensor& z, const Tensor& w, float eps, int64_t group,
                      Tensor& y) override {
    OpProfiler::Scope s(*p_, "text.gated_rms_norm");
    in_->gated_rms_norm(x, z, w, eps, group, y);
  }

 private:
  std::unique_ptr<TextOps> in_;
  std::shared_ptr<OpProfiler> p_;
};

class ProfiledVaeOps final : public VaeOps {
 public:
  ProfiledVaeOps(std::unique_ptr<VaeOps> inner, std::shared_ptr<OpProfiler> p)
      : in_(std::move(inner)), p_(std::move(p)) {}

  void group_norm_stats(const Tensor& x, int64_t groups, float eps, Tensor& stats) override {
    OpProfiler::Scope s(*p_, "vae.group_norm_stats");
    in_->group_norm_stats(x, groups, eps, stats);
  }
  void conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dOptions& opt, Tensor& out) override {
    OpProfiler::Scope s(*p_, "vae.conv2d " + dims(w));
    in_->conv2d(x, w, bias, opt, out);
  }
  void batch_norm_unpatchify(const Tensor& packed, const Tensor& running_mean, const Tensor& running_var, float eps,
                             int64_t patch, Tensor& out) override {
    OpProfiler::Scope s(*p_, "vae.batch_norm_unpatchify");
    in_->batch_norm_unpatchify(packed, running_mean, running_var, eps, patch, out);
  }
  void group_norm_to_tokens(const Tensor& x, const GroupNormInput& norm, Tensor& tokens) override {
    OpProfiler::Scope s(*p_, "vae.group_norm_to_tokens");
    in_->group_norm_to_tokens(x, norm, tokens);
  }
  void add_tokens(Tensor& x, const Tensor& tokens) override {
    OpProfiler::Scope s(*p_, "vae.add_tokens");
    in_->add_tokens(x, tokens);
  }

 private:
  std::unique_ptr<VaeOps> in_;
  std::shared_ptr<OpProfiler> p_;
};

}  // namespace

std::unique_ptr<CoreOps> profile_core_ops(std::unique_ptr<CoreOps> inner, std::shared_ptr<OpProfiler> p) {
  return std::make_unique<ProfiledCoreOps>(std::move(inner), std::move(p));
}
std::unique_ptr<TextOps> profile_text_ops(std::unique_ptr<TextOps> inner, std::shared_ptr<OpProfiler> p) {
  return std::make_unique<ProfiledTextOps>(std::move(inner), std::move(p));
}
std::unique_ptr<VaeOps> profile_vae_ops(std::unique_ptr<VaeOps> inner, std::shared_ptr<OpProfiler> p) {
  return std::make_unique<ProfiledVaeOps>(std::move(inner), std::move(p));
}

}  // namespace moss
