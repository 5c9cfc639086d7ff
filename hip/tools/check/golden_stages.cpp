// Definitions of golden_stages.h: the stages on any Backend and the references read from the
// goldens and from dump_official.py's dumps.
#include "golden_stages.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

#include "io/model_folder.h"
#include "model/image_u8.h"
#include "pipeline/moss_model.h"
#include "pipeline/noise.h"
#include "pipeline/schedule.h"
#include "tokenizer/prompt.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace golden {


bool on_host(moss::Backend& be) { return be.where() == moss::Where::Host; }

static std::string fmt_gap(const char* what, double gap) {
  char b[128];
  std::snprintf(b, sizeof b, "2x the %s bf16-vs-fp32 distance %.3e", what, gap);
  return b;
}

// A reference that is the output of an fp32 run: host tolerance on the host, 2x the bf16 gap on
// a device; a device run without a known gap is reported, not judged.
Limit fp32_reference_limit(moss::Backend& be, double host_rel, double gap, const char* gap_what) {
  if (on_host(be)) return Limit::rel(host_rel, "fp32 backend, fp32 reference");
  if (std::isfinite(gap) && gap > 0) return Limit::rel(2 * gap, fmt_gap(gap_what, gap));
  return Limit::info("bf16 device, fp32 reference without a bf16 twin: not judged");
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

moss::Tensor host_f32(const moss::Tensor& t) {
  const std::vector<float> v = moss::to_f32_vector(t);
  moss::Tensor out = moss::host_tensor(moss::DType::F32, t.dims());
  std::copy(v.begin(), v.end(), out.ptr<float>());
  return out;
}

moss::Tensor host_f32(const std::vector<float>& v, const std::vector<int64_t>& dims) {
  moss::Tensor out = moss::host_tensor(moss::DType::F32, dims);
  std::copy(v.begin(), v.end(), out.ptr<float>());
  return out;
}

// ---- backend ---------------------------------------------------------------------------------------
std::vector<std::string> with_backend_flags(std::vector<std::string> known) {
  known.push_back("--backend");
  known.push_back("--device");
  return known;
}

bool wants_device(const std::vector<std::string>& args) {
  const std::string name = flag(args, "--backend", "host");
  if (name == "host") {
    if (has_flag(args, "--device")) throw moss::usage_error("--device goes with --backend hip");
    return false;
  }
  if (name == "hip") return true;
  throw moss::usage_error("--backend: unknown backend '" + name + "' (host or hip)");
}

std::unique_ptr<moss::Backend> backend_from_flags(const std::vector<std::string>& args) {
  if (!wants_device(args)) return moss::make_host_backend();
#if MOSSINFER_CHECK_DEVICE
  return moss::make_hip_backend(device_flag(args));
#else
  throw moss::usage_error(
      "--backend hip: this moss-check is a host-only build (no GPU checks: HIP_TARGET=host or "
      "MOSSINFER_HIP_TOOLS=OFF); use --backend host, or a device build");
#endif
}

#if !MOSSINFER_CHECK_DEVICE
std::optional<DeviceMemory> device_memory(moss::Backend&) { return std::nullopt; }
#endif

// ---- tokenizer -----------------------------------------------------------------------------------
// Our prompt path (template, tokenizer, --max-seq) against the reference's ids.
void check_prompt_ids(Tally& tally, const std::string& model, const std::string& what,
                             const std::string& prompt, size_t max_seq, const std::vector<int32_t>& ref_ids) {
  static std::map<std::string, std::shared_ptr<moss::Tokenizer>> cache;
  auto& tok = cache[model];
  if (!tok) tok = std::make_shared<moss::Tokenizer>(moss::Tokenizer::load(model + "/tokenizer/tokenizer.json"));
  report_ids(tally, what + " (our tokenizer)", moss::encode_prompt(*tok, prompt, max_seq).ids, ref_ids);
}

moss::TextEncoder make_text_encoder(moss::Backend& be, const std::string& model) {
  const std::string folder = model + "/text_encoder";
  const moss::TextEncoderConfig cfg = moss::parse_text_encoder_config(folder + "/config.json");
  const moss::WeightFiles weights = moss::WeightFiles::open_folder(folder);
  moss::check_tensors(weights, moss::text_encoder_expected_tensors(cfg, moss::text_encoder_prefix(weights)),
                      moss::text_encoder_ignored_prefixes());
  return moss::TextEncoder(be, weights, cfg);
}

// Encodes every reference's ids on `be`; returns our states (host f32), in order.
std::vector<moss::Tensor> run_text_encoder(Tally& tally, moss::Backend& be, const std::string& model,
                                           const std::vector<TeReference>& refs, moss::Backend* host_twin) {
  moss::TextEncoder te = make_text_encoder(be, model);
  std::optional<moss::TextEncoder> twin;
  if (host_twin) twin.emplace(make_text_encoder(*host_twin, model));
  std::vector<moss::Tensor> out;
  for (const TeReference& r : refs) {
    if (r.prompt) check_prompt_ids(tally, model, r.label + ".ids", *r.prompt, r.max_seq, r.ids);
    std::map<int, moss::Tensor> layers;
    const auto t0 = std::chrono::steady_clock::now();
    const moss::Tensor hidden = host_f32(te.encode(r.ids, [&](int l, const moss::Tensor& x) {
      if (r.layers.count(l)) layers[l] = host_f32(x);
    }));
    std::printf("%s: %zu tokens, text encoder %.3f s on %s\n", r.label.c_str(), r.ids.size(), seconds_since(t0),
                be.name().c_str());
    // The layer outputs are judged on the fp32 host backend only (a bf16 device run has no
    // per-layer twin to measure its distance by): reported there.
    const Limit layer_limit = on_host(be) ? Limit::rel(kHostRel, "fp32 backend, fp32 reference")
                                          : Limit::info("fp32 reference");
    for (const auto& [l, x] : layers) report(tally, r.label + ".layer" + std::to_string(l), x, r.layers.at(l), layer_limit);
    Limit limit;
    if (r.states_fp32) {
      const double gap = r.bf16_twin.data ? measure(moss::to_f32_vector(r.bf16_twin), moss::to_f32_vector(r.states)).rel
                                          : NAN;
      limit = fp32_reference_limit(be, kHostRel, gap, "text encoder's");
    } else {
      limit = Limit::rel(kOfficialTeRel, "official bf16 states; documented text-encoder limit");
    }
    report(tally, r.label + ".hidden", hidden, r.states, limit);
    if (r.states_fp32 && r.bf16_twin.data)
      report(tally, r.label + ".hidden vs the bf16 reference", hidden, r.bf16_twin, Limit::info());
    if (twin) report(tally, r.label + ".hidden vs the host backend", hidden, host_f32(twin->encode(r.ids)), Limit::info());
    out.push_back(hidden);
  }
  return out;
}

// ---- DiT -----------------------------------------------------------------------------------------
// The engine's loading (pipeline/moss_model.h): checked, and a folder whose transformer is an
// INT8 ConvRot file runs it as a generation would.
std::unique_ptr<moss::Dit> make_dit(moss::Backend& be, const std::string& model) {
  const moss::MossModel m = moss::open_moss_model(moss::ModelPaths{model, "", "", "", "", ""});
  return std::make_unique<moss::Dit>(be, m.dit_weights, m.dit_config);
}

void run_forward(Tally& tally, moss::Backend& be, moss::Dit& dit, const ForwardReference& ref) {
  std::vector<moss::Dit::Text> texts;
  for (const auto& r : ref.rows) texts.push_back(dit.embed_text(r.text_states));
  std::vector<moss::Dit::Row> rows;
  for (size_t i = 0; i < ref.rows.size(); ++i) rows.push_back(moss::Dit::Row{&texts[i], ref.rows[i].skip});
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<moss::Tensor> v = dit.forward_rows(ref.latent, rows, ref.timestep);
  std::printf("%s: one forward of %zu rows at t=%.6g, %.3f s on %s\n", ref.label.c_str(), rows.size(),
              double(ref.timestep), seconds_since(t0), be.name().c_str());
  for (size_t i = 0; i < ref.rows.size(); ++i) {
    const auto& r = ref.rows[i];
    Limit limit;
    if (ref.fp32) {
      double gap = ref.gap;
      if (r.bf16_twin.data) gap = measure(moss::to_f32_vector(r.bf16_twin), moss::to_f32_vector(r.velocity)).rel;
      limit = fp32_reference_limit(be, kHostRel, gap, "DiT's");
    } else {
      limit = Limit::cos(kOfficialStep0Cos, "docs/product.md section 6, first DiT step");
    }
    report(tally, ref.label + "." + r.name, v[i], r.velocity, limit);
    if (r.bf16_twin.data) report(tally, ref.label + "." + r.name + " vs the bf16 reference", v[i], r.bf16_twin, Limit::info());
  }
}

// Returns our final latent (host f32) after `steps` steps (0: all).
moss::Tensor run_sampler(Tally& tally, moss::Backend& be, moss::Dit& dit, const SamplerReference& ref, int steps) {
  const int total = int(ref.sigmas.size()) - 1;
  if (steps <= 0 || steps > total) steps = total;
  const std::vector<float> sigmas(ref.sigmas.begin(), ref.sigmas.begin() + steps + 1);
  const moss::Dit::Text cond = dit.embed_text(ref.cond_states);
  std::optional<moss::Dit::Text> uncond;
  if (ref.uncond_states.data) uncond = dit.embed_text(ref.uncond_states);
  std::printf("%s: %d of %d steps, cfg %g, skip layers [", ref.label.c_str(), steps, total, double(ref.settings.cfg));
  for (size_t i = 0; i < ref.settings.skip_layers.size(); ++i)
    std::printf("%s%d", i ? "," : "", ref.settings.skip_layers[i]);
  std::printf("], noise: %s\n", ref.noise_source.c_str());
  moss::SamplerTrace trace;
  const auto t0 = std::chrono::steady_clock::now();
  const moss::Tensor latent = moss::sample(
      dit, cond, uncond ? &*uncond : nullptr, ref.noise, sigmas, ref.settings,
      [&](int i, int n, double sec) { std::printf("  step %d/%d: %.3f s\n", i + 1, n, sec); }, &trace);
  std::printf("%s: denoise %.3f s on %s\n", ref.label.c_str(), seconds_since(t0), be.name().c_str());

  const Limit step_limit = ref.fp32 ? fp32_reference_limit(be, kHostSamplerRel, ref.gap, "DiT's")
                                    : Limit::info("official reference: per-step figures are reported, not judged");
  for (int i = 0; i < steps; ++i) {
    const std::string p = ref.label + ".step" + std::to_string(i) + ".";
    if (ref.v_cond.count(i) && i < int(trace.v_cond.size())) report(tally, p + "v_cond", trace.v_cond[i], ref.v_cond.at(i), step_limit);
    if (ref.v_uncond.count(i) && i < int(trace.v_uncond.size()))
      report(tally, p + "v_uncond", trace.v_uncond[i], ref.v_uncond.at(i), step_limit);
    if (ref.latent.count(i) && i < int(trace.latent.size())) report(tally, p + "latent", trace.latent[i], ref.latent.at(i), step_limit);
  }
  if (steps == total && ref.final_latent.data) {
    const Limit limit = ref.fp32 ? fp32_reference_limit(be, kHostSamplerRel, ref.gap, "DiT's")
                                 : Limit::cos(ref.final_min_cos, ref.final_basis);
    report(tally, ref.label + ".final_latent", latent, ref.final_latent, limit);
  } else if (steps < total) {
    std::printf("info %s: %d of %d steps run; the final latent is compared after all steps only\n", ref.label.c_str(),
                steps, total);
  }
  return latent;
}

// ---- VAE -----------------------------------------------------------------------------------------
moss::VaeDecoder make_vae(moss::Backend& be, const std::string& model) {
  const moss::VaeConfig cfg = moss::parse_vae_config(model + "/vae/config.json");
  return moss::VaeDecoder(be, moss::WeightFiles::open_folder(model + "/vae"), cfg);
}

// Decodes `latent`; compares the image (when a reference image is given) and the 8-bit image.
void run_vae(Tally& tally, moss::Backend& be, moss::VaeDecoder& vae, const std::string& label,
             const moss::Tensor& latent, const moss::Tensor* image_ref, bool image_ref_fp32, const moss::Tensor& u8_ref,
             double max_mean_levels) {
  const auto t0 = std::chrono::steady_clock::now();
  const moss::Tensor image = host_f32(vae.decode(latent));
  std::printf("%s: vae decode %.3f s on %s\n", label.c_str(), seconds_since(t0), be.name().c_str());
  if (image_ref) {
    const Limit limit = image_ref_fp32 ? (on_host(be) ? Limit::rel(kHostVaeRel, "fp32 backend, fp32/fp64 reference")
                                                      : Limit::rel(kDeviceVaeRel, "bf16-operand VAE kernels (issue 6)"))
                                       : Limit::rel(kOfficialVaeRel, "official fp32 VAE; documented limit");
    report(tally, label + ".image", image, *image_ref, limit);
  }
  report_u8(tally, label + ".image_u8", moss::image_to_u8(image), u8_ref, max_mean_levels);
}

// ---- references from the goldens (hip/tests/data/README.md format) --------------------------------------------
std::vector<TeReference> te_references_from_golden(const moss::SafetensorsFile& g) {
  nlohmann::json cases = nlohmann::json::array();
  if (auto it = g.metadata().find("cases"); it != g.metadata().end())
    cases = nlohmann::json::parse(it->second, nullptr, false);
  std::vector<TeReference> refs;
  for (int c = 0; g.has("case" + std::to_string(c) + ".ids"); ++c) {
    const std::string p = "case" + std::to_string(c) + ".";
    TeReference r;
    r.label = "case" + std::to_string(c);
    const moss::Tensor ids = g.get(p + "ids");
    if (ids.dtype != moss::DType::I32) throw moss::failure(g.path() + ": '" + p + "ids' must be I32");
    r.ids.assign(ids.ptr<const int32_t>(), ids.ptr<const int32_t>() + ids.numel());
    if (cases.is_array())
      for (const auto& m : cases)
        if (m.is_object() && m.value("case", -1) == c && m.contains("prompt") && m["prompt"].is_string())
          r.prompt = m["prompt"].get<std::string>();
    r.states = g.get(p + "hidden_fp32");
    r.states_fp32 = true;
    if (g.has(p + "hidden_bf16")) r.bf16_twin = g.get(p + "hidden_bf16");
    for (const auto& [name, info] : g.tensors()) {
      int layer = -1;
      char tail[8] = "";
      if (name.rfind(p + "layer", 0) == 0 &&
          std::sscanf(name.c_str() + p.size(), "layer%d_%4s", &layer, tail) == 2 && std::string(tail) == "fp32")
        r.layers[layer] = g.get(name);
    }
    refs.push_back(r);
  }
  if (refs.empty()) throw moss::failure(g.path() + ": no 'case0.ids': not a text-encoder golden");
  return refs;
}

nlohmann::json golden_meta(const moss::SafetensorsFile& g) {
  auto it = g.metadata().find("meta");
  if (it == g.metadata().end()) throw moss::failure(g.path() + ": no 'meta' entry in the metadata");
  return nlohmann::json::parse(it->second);
}

// golden_dit.safetensors forward.*: cond and uncond (skipping the golden's layers).
ForwardReference forward_reference_from_golden(const moss::SafetensorsFile& g) {
  const nlohmann::json meta = golden_meta(g);
  ForwardReference f;
  f.label = "forward";
  f.latent = host_f32(g.get("forward.latent"));
  f.timestep = meta.at("forward_timestep").get<float>();
  f.fp32 = true;
  const std::vector<int> skip = meta.at("skip_layers").get<std::vector<int>>();
  for (const bool uncond : {false, true}) {
    ForwardReference::Row r;
    r.name = uncond ? "uncond_skip.velocity" : "cond.velocity";
    const std::string p = uncond ? "forward.uncond_skip." : "forward.cond.";
    r.text_states = host_f32(g.get(uncond ? "forward.uncond_text" : "forward.cond_text"));
    if (uncond) r.skip = skip;
    r.velocity = g.get(p + "velocity_fp32");
    if (g.has(p + "velocity_bf16")) r.bf16_twin = g.get(p + "velocity_bf16");
    for (const auto& [name, info] : g.tensors()) {
      const size_t tail = name.size() - std::min(name.size(), size_t(5));
      if (name.rfind(p, 0) != 0 || name.compare(tail, 5, "_fp32") != 0) continue;
      const std::string key = name.substr(p.size(), tail - p.size());
      if (key != "velocity") r.traces[key] = g.get(name);
    }
    f.rows.push_back(r);
  }
  return f;
}

// The DiT's bf16-vs-fp32 distance the golden carries (forward.cond velocity).
double golden_dit_gap(const moss::SafetensorsFile& g) {
  if (!g.has("forward.cond.velocity_bf16")) return NAN;
  return measure(moss::to_f32_vector(g.get("forward.cond.velocity_bf16")),
                 moss::to_f32_vector(g.get("forward.cond.velocity_fp32")))
      .rel;
}

// golden_dit.safetensors e2e.*: conditioned on the text-encoder golden's hidden_bf16 of the
// prompt and negative cases, from our own noise for the seed (the golden holds none for e2e),
// the schedule of its steps and shift.
SamplerReference sampler_reference_from_golden(const moss::SafetensorsFile& g, const moss::SafetensorsFile& te,
                                              int64_t latent_channels, int64_t packed_scale) {
  const nlohmann::json meta = golden_meta(g);
  const nlohmann::json& req = meta.at("e2e");
  SamplerReference s;
  s.label = "e2e";
  s.settings.cfg = req.at("cfg").get<float>();
  s.settings.skip_layers = meta.at("skip_layers").get<std::vector<int>>();
  s.sigmas = moss::make_schedule(req.at("steps").get<int>(), req.at("shift").get<float>());
  s.cond_states = host_f32(te.get("case" + std::to_string(req.at("prompt_case").get<int>()) + ".hidden_bf16"));
  s.uncond_states = host_f32(te.get("case" + std::to_string(req.at("negative_case").get<int>()) + ".hidden_bf16"));
  const int64_t gh = req.at("height").get<int64_t>() / packed_scale, gw = req.at("width").get<int64_t>() / packed_scale;
  const uint64_t seed = req.at("seed").get<uint64_t>();
  s.noise = host_f32(moss::initial_noise(seed, latent_channels, gh, gw), {latent_channels, gh, gw});
  s.noise_source = "ours for seed " + std::to_string(seed) + " (the golden holds none for e2e)";
  for (int i = 0; g.has("e2e.step" + std::to_string(i) + ".latent_fp32"); ++i) {
    const std::string p = "e2e.step" + std::to_string(i) + ".";
    s.latent[i] = g.get(p + "latent_fp32");
    if (g.has(p + "v_cond_fp32")) s.v_cond[i] = g.get(p + "v_cond_fp32");
    if (g.has(p + "v_uncond_fp32")) s.v_uncond[i] = g.get(p + "v_uncond_fp32");
  }
  s.final_latent = g.get("e2e.final_latent_fp32");
  s.fp32 = true;
  s.gap = golden_dit_gap(g);
  return s;
}

// ---- references from a dump_official.py dump -------------------------------------------------------
std::vector<TeReference> te_references_from_dump(const OfficialDump& d, const DumpCase& c) {
  std::vector<TeReference> refs;
  for (const char* role : {"cond", "uncond"}) {
    const std::string r = role;
    if (r == "uncond" && !c.guided) continue;
    TeReference t;
    t.label = c.prefix + r;
    t.ids = d.ids(c, r + ".ids");
    t.prompt = r == "cond" ? c.settings.prompt : c.settings.negative;
    t.max_seq = size_t(c.settings.max_seq);
    if (d.has(c, r + ".hidden_fp32")) {  // an fp32 text-encoder run beside the states the DiT got
      t.states = d.get(c, r + ".hidden_fp32");
      t.states_fp32 = true;
      t.bf16_twin = d.get(c, r + ".hidden");
    } else {
      t.states = d.get(c, r + ".hidden");
      t.states_fp32 = c.reference_fp32;
    }
    refs.push_back(t);
  }
  return refs;
}

// The skip layers of the uncond row: the dump's settings, else --skip-layers (fallback).
std::vector<int> dump_skip_layers(const DumpCase& c, const std::optional<std::vector<int>>& fallback) {
  if (c.settings.skip_layers) return *c.settings.skip_layers;
  if (fallback) return *fallback;
  if (!c.guided) return {};
  throw moss::usage_error("case " + std::to_string(c.index) +
                          ": the dump does not say which layers the uncond pass skipped; give --skip-layers");
}

// Step 0 on the dumped inputs: step0.latent_in, timesteps[0], the dumped text states.
ForwardReference forward_reference_from_dump(const OfficialDump& d, const DumpCase& c,
                                                    const std::optional<std::vector<int>>& skip_fallback) {
  ForwardReference f;
  f.label = c.prefix + "step0";
  f.latent = d.f32(c, "step0.latent_in");
  f.timestep = d.values(c, "timesteps")[0];
  f.fp32 = c.reference_fp32;
  f.gap = c.dit_bf16_gap;
  ForwardReference::Row cond;
  cond.name = "v_cond";
  cond.text_states = d.f32(c, "cond.hidden");
  cond.velocity = d.get(c, "step0.v_cond");
  f.rows.push_back(cond);
  if (c.guided) {
    ForwardReference::Row u;
    u.name = "v_uncond";
    u.text_states = d.f32(c, "uncond.hidden");
    u.skip = dump_skip_layers(c, skip_fallback);
    u.velocity = d.get(c, "step0.v_uncond");
    f.rows.push_back(u);
  }
  return f;
}

// The DiT alone over the dumped schedule from the dumped noise and text states (our noise for
// the seed only when asked: own_noise).
SamplerReference sampler_reference_from_dump(const OfficialDump& d, const DumpCase& c,
                                                    const std::optional<std::vector<int>>& skip_fallback,
                                                    std::optional<float> cfg_fallback) {
  SamplerReference s;
  s.label = c.prefix + "dit";
  s.cond_states = d.f32(c, "cond.hidden");
  if (c.guided) s.uncond_states = d.f32(c, "uncond.hidden");
  s.noise = d.f32(c, "noise");
  s.noise_source = std::string("the dump's (") + (c.noise_from_randn ? "torch.randn" : "the DiT's step-0 input") + ")";
  s.sigmas = d.values(c, "sigmas");
  if (c.settings.cfg)
    s.settings.cfg = *c.settings.cfg;
  else if (cfg_fallback)
    s.settings.cfg = *cfg_fallback;
  else
    throw moss::usage_error("case " + std::to_string(c.index) + ": the dump does not say the guidance scale; give --cfg");
  s.settings.skip_layers = dump_skip_layers(c, skip_fallback);
  for (int i : c.latent_steps) s.latent[i] = d.get(c, "step" + std::to_string(i) + ".latent");
  s.final_latent = d.get(c, "final_latent");
  s.fp32 = c.reference_fp32;
  s.gap = c.dit_bf16_gap;
  return s;
}

}  // namespace golden
