// moss-check te: the text encoder on the host backend against golden_text_encoder.safetensors
// (each case's ids; last hidden state and every recorded layer output, fp32 goldens).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>

#include "subcommand.h"
#include "model/text_encoder.h"
#include "util/error.h"

namespace {

using namespace moss;

constexpr double kTolerance = 1e-5;  // relative L2 against the fp32 goldens (issue 5)

std::vector<int32_t> read_ids(const SafetensorsFile& g, const std::string& name) {
  const Tensor t = g.get(name);
  if (t.dtype != DType::I32) throw failure(g.path() + ": '" + name + "' must be I32");
  return std::vector<int32_t>(t.ptr<const int32_t>(), t.ptr<const int32_t>() + t.numel());
}

// Compares one output with its golden and records the verdict.
void compare(golden::Tally& tally, const SafetensorsFile& g, const std::string& name, const Tensor& got) {
  const Tensor want_t = g.get(name);
  if (want_t.numel() != got.numel()) {
    tally.check(false, name + ": shape " + got.shape_str() + " vs golden " + want_t.shape_str());
    return;
  }
  const std::vector<float> want = to_f32_vector(want_t), have = to_f32_vector(got);
  const double rel = golden::rel_l2(have.data(), want.data(), want.size());
  char line[256];
  std::snprintf(line, sizeof line, "%-22s rel_l2 %.3e  max_abs %.3e", name.c_str(), rel,
                golden::max_abs_diff(have.data(), want.data(), want.size()));
  tally.check(rel < kTolerance, line);
}

int run_te(const std::vector<std::string>& args) {
  const std::string model = golden::flag(args, "--model"), golden_path = golden::flag(args, "--golden");
  const std::string folder = model + "/text_encoder";
  const TextEncoderConfig cfg = parse_text_encoder_config(folder + "/config.json");
  const WeightFiles weights = WeightFiles::open_folder(folder);
  const std::string prefix = text_encoder_prefix(weights);
  check_tensors(weights, text_encoder_expected_tensors(cfg, prefix), text_encoder_ignored_prefixes());
  auto golden_file = SafetensorsFile::open(golden_path);
  const SafetensorsFile& g = *golden_file;

  std::unique_ptr<Backend> be = make_host_backend();
  TextEncoder encoder(*be, weights, cfg);
  golden::Tally tally;
  double total_s = 0;
  for (int c = 0; g.has("case" + std::to_string(c) + ".ids"); ++c) {
    const std::string p = "case" + std::to_string(c) + ".";
    const std::vector<int32_t> ids = read_ids(g, p + "ids");
    std::map<int, Tensor> layers;  // copies: the hook's view is only valid during the call
    const auto t0 = std::chrono::steady_clock::now();
    const Tensor hidden = encoder.encode(ids, [&](int l, const Tensor& x) {
      if (!g.has(p + "layer" + std::to_string(l) + "_fp32")) return;
      Tensor copy = host_tensor(DType::F32, x.dims());
      const std::vector<float> v = to_f32_vector(x);
      std::copy(v.begin(), v.end(), copy.ptr<float>());
      layers[l] = copy;
    });
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    total_s += secs;
    std::printf("case %d: %zu tokens, %.3f s on %s\n", c, ids.size(), secs, be->name().c_str());
    for (auto& [l, x] : layers) compare(tally, g, p + "layer" + std::to_string(l) + "_fp32", x);
    compare(tally, g, p + "hidden_fp32", hidden);
    if (g.has(p + "hidden_bf16")) {  // information only: the distance of the two goldens' kind
      const std::vector<float> want = to_f32_vector(g.get(p + "hidden_bf16")), have = to_f32_vector(hidden);
      if (want.size() == have.size())
        std::printf("info %-22s rel_l2 %.3e (the bf16 GPU golden)\n", (p + "hidden_bf16").c_str(),
                    golden::rel_l2(have.data(), want.data(), want.size()));
    }
  }
  std::printf("text encoder: %.3f s over all cases\n", total_s);
  return tally.finish();
}

}  // namespace

CHECK_SUBCOMMAND("te", "--model DIR --golden golden_text_encoder.safetensors", run_te);
