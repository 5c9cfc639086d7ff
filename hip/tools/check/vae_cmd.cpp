// moss-check vae: the VAE decoder on --backend host|hip against golden_vae.safetensors (each
// case's packed latent):
//   latent_unpacked_fp64  the unpacked latent within 1e-5 relative L2 (fp32 on either backend)
//   activation bytes      decode's activation peak equals VaeDecoder::decode_activation_bytes
//   image_fp64            the image within 1e-5 of the float64 decode on the host backend
//                         (issue 5), within 1e-2 on a GPU (bf16-operand kernels, issue 6; no bf16
//                         golden exists); on a GPU the distance to the host backend is reported
//   image_u8              the 8-bit image: no value more than one level off, and on the host
//                         backend at most 0.5% of the values one level off (on a GPU the bf16
//                         mid-block attention moves about 1% of this tiny model's values by one
//                         level: reported; issue 7's 2 levels on average is moss-check cli-output's)
// Limits and line format: golden_stages.h, golden_compare.h.
#include <cstdio>

#include "golden_stages.h"
#include "subcommand.h"
#include "model/image_u8.h"

namespace {

using namespace moss;

constexpr double kMaxOneLevelOff = 0.005;   // host backend: share of 8-bit values allowed one level off

void check_u8(golden::Tally& tally, Backend& be, const std::string& what, const Tensor& image, const Tensor& want) {
  const golden::U8Diff d = golden::u8_diff(image_to_u8(image), want);
  if (!d.comparable) {
    tally.check(false, what + ": " + d.mismatch);
    return;
  }
  const bool host = golden::on_host(be);
  const double share = double(d.one_off) / double(d.values);
  char lim[96];
  std::snprintf(lim, sizeof lim, "  (limit: none more than one level off%s)",
                host ? ", at most 0.5% one level off" : "; the share one level off is reported");
  tally.check(d.more == 0 && (!host || share <= kMaxOneLevelOff), what + golden::u8_diff_str(d) + lim);
}

int run_vae(const std::vector<std::string>& args) {
  golden::check_flags(args, golden::with_backend_flags({"--model", "--golden"}));
  const std::unique_ptr<Backend> be = golden::backend_from_flags(args);
  const std::string model = golden::flag(args, "--model"), golden_path = golden::flag(args, "--golden");
  const VaeConfig cfg = parse_vae_config(model + "/vae/config.json");
  auto golden_file = SafetensorsFile::open(golden_path);
  const SafetensorsFile& g = *golden_file;
  const auto meta = g.metadata().find("cases");
  if (meta == g.metadata().end()) throw failure(golden_path + ": no 'cases' in the metadata");
  const nlohmann::json cases = nlohmann::json::parse(meta->second);

  VaeDecoder decoder = golden::make_vae(*be, model);
  const std::unique_ptr<Backend> host = golden::on_host(*be) ? nullptr : make_host_backend();
  std::optional<VaeDecoder> host_twin;
  if (host) host_twin.emplace(golden::make_vae(*host, model));
  const golden::Limit image_limit =
      golden::on_host(*be) ? golden::Limit::rel(golden::kHostVaeRel, "fp32 backend, float64 reference")
                           : golden::Limit::rel(golden::kDeviceVaeRel, "bf16-operand VAE kernels (issue 6)");
  golden::Tally tally;
  double total_s = 0;
  for (const nlohmann::json& c : cases) {
    const int64_t id = c.at("case").get<int64_t>(), height = c.at("height").get<int64_t>(),
                  width = c.at("width").get<int64_t>();
    const std::string p = "case" + std::to_string(id) + ".";
    const Tensor packed = g.get(p + "latent_packed");
    golden::report_exact(tally, p + "latent_unpacked_fp64", decoder.unpack_latent(packed), g.get(p + "latent_unpacked_fp64"),
                         golden::Limit::rel(golden::kHostVaeRel, "fp32 unpacking, float64 reference"));

    const auto t0 = std::chrono::steady_clock::now();
    const Tensor image = golden::host_f32(decoder.decode(packed));
    const double secs = golden::seconds_since(t0);
    total_s += secs;
    const size_t planned = VaeDecoder::decode_activation_bytes(cfg, height, width);
    std::printf("case %lld: %lldx%lld, %.3f s on %s, activation peak %zu bytes (planned %zu)\n", (long long)id,
                (long long)height, (long long)width, secs, be->name().c_str(), decoder.last_peak_bytes(), planned);
    tally.check(decoder.last_peak_bytes() == planned, p + "activation bytes: decode's peak equals the plan");
    golden::report_exact(tally, p + "image_fp64", image, g.get(p + "image_fp64"), image_limit);
    if (host_twin)
      golden::report(tally, p + "image vs the host backend", image, host_twin->decode(packed), golden::Limit::info());
    check_u8(tally, *be, p + "image_u8", image, g.get(p + "image_u8"));
  }
  std::printf("vae: %.3f s over all cases\n", total_s);
  return tally.finish();
}

}  // namespace

CHECK_SUBCOMMAND("vae", "--model DIR --golden golden_vae.safetensors [--backend host|hip] [--device N]", run_vae);
