// moss-check dit: the DiT on --backend host|hip against golden_dit.safetensors, then (backend
// independent) the schedules and the initial noise:
//   forward.<row>   each golden row (cond; uncond skipping the golden's layers) alone, with its
//                   trace: the velocity against velocity_fp32 (host backend within 1e-5 relative
//                   L2, issue 5; a GPU within 2x the row's velocity_bf16-vs-fp32 distance, about
//                   1.3e-2 for the tiny model) and every block trace (judged on the host backend
//                   within 1e-5 and counted against the golden's; reported on a GPU, with the
//                   distance to the host backend's velocity)
//   forward.rows    both rows in one forward_rows call (as the sampler runs them), same limits
//   alloc           GPU only: a repeated forward makes no new device allocation (caching allocator)
//   schedule.*      make_schedule bit for bit;  noise.*  initial_noise within 1e-5 per element
// Limits and line format: golden_stages.h, golden_compare.h.
#include <cinttypes>
#include <cstdio>

#include "golden_stages.h"
#include "subcommand.h"
#include "pipeline/noise.h"
#include "pipeline/schedule.h"

namespace {

using namespace moss;

void check_traced_rows(golden::Tally& tally, Backend& be, Dit& dit, Dit* host_twin, const golden::ForwardReference& f) {
  const bool host = golden::on_host(be);
  const golden::Limit trace_limit = host ? golden::Limit::rel(golden::kHostRel, "fp32 backend, fp32 reference")
                                         : golden::Limit::info("fp32 reference");
  for (const golden::ForwardReference::Row& row : f.rows) {
    const std::string prefix = "forward." + row.name.substr(0, row.name.find('.')) + ".";
    const auto t0 = std::chrono::steady_clock::now();
    const Dit::Text text = dit.embed_text(row.text_states);
    DitTrace trace;
    const Tensor velocity = dit.forward(f.latent, text, f.timestep, row.skip, &trace);
    std::printf("%s: %" PRId64 " text tokens, %.3f s on %s\n", prefix.substr(0, prefix.size() - 1).c_str(), text.tokens,
                golden::seconds_since(t0), be.name().c_str());
    const double gap = row.bf16_twin.data
                           ? golden::measure(to_f32_vector(row.bf16_twin), to_f32_vector(row.velocity)).rel
                           : NAN;
    golden::report(tally, prefix + "velocity_fp32", velocity, row.velocity,
                   golden::fp32_reference_limit(be, golden::kHostRel, gap, "DiT's"));
    if (row.bf16_twin.data)
      golden::report(tally, prefix + "velocity_bf16", velocity, row.bf16_twin, golden::Limit::info("the bf16 GPU run, for scale"));
    if (host_twin) {
      const Dit::Text t = host_twin->embed_text(row.text_states);
      golden::report(tally, prefix + "velocity vs the host backend", velocity,
                     host_twin->forward(f.latent, t, f.timestep, row.skip), golden::Limit::info());
    }
    size_t traces = 0;
    for (const auto& [name, want] : row.traces) {
      ++traces;
      auto it = trace.tensors.find(name);
      if (it == trace.tensors.end())
        tally.check(false, prefix + name + "_fp32: the forward produced no trace '" + name + "'");
      else
        golden::report(tally, prefix + name + "_fp32", it->second, want, trace_limit);
    }
    // Every block that ran (and no skipped one) must have a golden trace.
    const std::string count = prefix + "traces: " + std::to_string(trace.tensors.size()) + " produced, " +
                              std::to_string(traces) + " in the golden";
    if (host)
      tally.check(trace.tensors.size() == traces, count);
    else
      std::printf("info %s\n", count.c_str());
  }
}

// A repeated forward allocates nothing new on the device (GPU backends only).
void check_steady_allocations(golden::Tally& tally, Backend& be, Dit& dit, const golden::ForwardReference& f) {
  if (!golden::device_memory(be)) return;
  const Dit::Text text = dit.embed_text(f.rows.at(0).text_states);
  (void)dit.forward(f.latent, text, f.timestep, {});
  const size_t before = golden::device_memory(be)->allocations;
  (void)dit.forward(f.latent, text, f.timestep, {});
  const golden::DeviceMemory after = *golden::device_memory(be);
  tally.check(after.allocations == before, "alloc: a repeated DiT forward made " +
                                               std::to_string(after.allocations - before) + " device allocations (" +
                                               std::to_string(after.allocations) + " in all, " +
                                               std::to_string(after.cached_bytes >> 10) + " KiB cached)");
}

void check_schedules(golden::Tally& tally, const SafetensorsFile& g) {
  for (const auto& [name, info] : g.tensors()) {
    int steps = 0;
    float shift = 0;
    if (std::sscanf(name.c_str(), "schedule.steps%d_shift%f", &steps, &shift) != 2) continue;
    golden::report_bits(tally, name, make_schedule(steps, shift), to_f32_vector(g.get(name)));
  }
}

void check_noise(golden::Tally& tally, const SafetensorsFile& g) {
  for (const auto& [name, info] : g.tensors()) {
    unsigned long long seed = 0;
    long long c = 0, h = 0, w = 0;
    if (std::sscanf(name.c_str(), "noise.seed%llu_c%lld_h%lld_w%lld", &seed, &c, &h, &w) != 4) continue;
    const std::vector<float> want = to_f32_vector(g.get(name));
    const std::vector<float> got = initial_noise(seed, c, h, w);
    const bool sized = got.size() == want.size();
    const double diff = sized ? golden::max_abs_diff(got.data(), want.data(), got.size()) : INFINITY;
    char line[256];
    std::snprintf(line, sizeof line, "%s: max |diff| %.3e  (limit %.0e)", name.c_str(), diff,
                  double(golden::kNoiseTolerance));
    tally.check(sized && diff <= golden::kNoiseTolerance, line);
  }
}

int dit_command(const std::vector<std::string>& args) {
  golden::check_flags(args, golden::with_backend_flags({"--model", "--golden"}));
  const std::unique_ptr<Backend> be = golden::backend_from_flags(args);
  const std::string model = golden::flag(args, "--model"), golden_path = golden::flag(args, "--golden");
  const auto g = SafetensorsFile::open(golden_path);
  const auto t0 = std::chrono::steady_clock::now();
  std::printf("moss-check dit: %s on %s\n", golden_path.c_str(), be->name().c_str());
  const std::unique_ptr<Dit> dit = golden::make_dit(*be, model);
  const std::unique_ptr<Backend> host = golden::on_host(*be) ? nullptr : make_host_backend();
  const std::unique_ptr<Dit> host_twin = host ? golden::make_dit(*host, model) : nullptr;

  golden::Tally tally;
  golden::ForwardReference f = golden::forward_reference_from_golden(*g);
  check_traced_rows(tally, *be, *dit, host_twin.get(), f);
  f.label = "forward.rows";
  golden::run_forward(tally, *be, *dit, f);
  check_steady_allocations(tally, *be, *dit, f);
  check_schedules(tally, *g);
  check_noise(tally, *g);
  std::printf("time %.3f s\n", golden::seconds_since(t0));
  return tally.finish();
}

}  // namespace

CHECK_SUBCOMMAND("dit", "--model DIR --golden golden_dit.safetensors [--backend host|hip] [--device N]", dit_command);
