// moss-check vae: the VAE decoder on the host backend against golden_vae.safetensors (each
// case's packed latent; the unpacked latent and the image against float64 decodes, the 8-bit
// image against the reference's).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>

#include "subcommand.h"
#include "model/image_u8.h"
#include "model/vae.h"
#include "util/error.h"

namespace {

using namespace moss;

constexpr double kTolerance = 1e-5;         // relative L2 against the float64 goldens (issue 5)
constexpr double kMaxOneLevelOff = 0.005;   // share of 8-bit values allowed one level off

std::string fmt(const char* f, double a, double b, double c) {
  char line[256];
  std::snprintf(line, sizeof line, f, a, b, c);
  return line;
}

void compare(golden::Tally& tally, const SafetensorsFile& g, const std::string& name, const Tensor& got) {
  const Tensor want_t = g.get(name);
  if (want_t.dims() != got.dims()) {
    tally.check(false, name + ": shape " + got.shape_str() + " vs golden " + want_t.shape_str());
    return;
  }
  const std::vector<float> want = to_f32_vector(want_t), have = to_f32_vector(got);
  const double rel = golden::rel_l2(have.data(), want.data(), want.size());
  const double mx = golden::max_abs_diff(have.data(), want.data(), want.size());
  tally.check(rel < kTolerance, name + fmt(" rel_l2 %.3e  max_abs %.3e  (limit %.0e)", rel, mx, kTolerance));
}

// The engine's HWC bytes against the golden's CHW bytes.
void compare_u8(golden::Tally& tally, const SafetensorsFile& g, const std::string& name, const Tensor& image) {
  const Tensor want = g.get(name);
  if (want.dtype != DType::U8 || want.dims() != image.dims()) {
    tally.check(false, name + ": golden " + want.shape_str() + " vs image " + image.shape_str());
    return;
  }
  const std::vector<uint8_t> have = image_to_u8(image);
  const int64_t P = image.shape[1] * image.shape[2];
  int64_t one_off = 0, worse = 0;
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t p = 0; p < P; ++p) {
      const int d = std::abs(int(have[size_t(3 * p + c)]) - int(want.ptr<const uint8_t>()[c * P + p]));
      one_off += d == 1;
      worse += d > 1;
    }
  const double share = double(one_off) / double(3 * P);
  tally.check(worse == 0 && share <= kMaxOneLevelOff,
              name + fmt(" %.0f values one level off (%.3f%%), %.0f more", double(one_off), 100 * share,
                         double(worse)));
}

int run_vae(const std::vector<std::string>& args) {
  const std::string model = golden::flag(args, "--model"), golden_path = golden::flag(args, "--golden");
  const std::string folder = model + "/vae";
  const VaeConfig cfg = parse_vae_config(folder + "/config.json");
  const WeightFiles weights = WeightFiles::open_folder(folder);
  auto golden_file = SafetensorsFile::open(golden_path);
  const SafetensorsFile& g = *golden_file;
  const auto meta = g.metadata().find("cases");
  if (meta == g.metadata().end()) throw failure(golden_path + ": no 'cases' in the metadata");
  const nlohmann::json cases = nlohmann::json::parse(meta->second);

  std::unique_ptr<Backend> be = make_host_backend();
  VaeDecoder decoder(*be, weights, cfg);
  golden::Tally tally;
  double total_s = 0;
  for (const nlohmann::json& c : cases) {
    const int64_t id = c.at("case").get<int64_t>(), height = c.at("height").get<int64_t>(),
                  width = c.at("width").get<int64_t>();
    const std::string p = "case" + std::to_string(id) + ".";
    const Tensor packed = g.get(p + "latent_packed");
    compare(tally, g, p + "latent_unpacked_fp64", decoder.unpack_latent(packed));

    const auto t0 = std::chrono::steady_clock::now();
    const Tensor image = decoder.decode(packed);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    total_s += secs;
    const size_t planned = VaeDecoder::decode_activation_bytes(cfg, height, width);
    std::printf("case %lld: %lldx%lld, %.3f s on %s, activation peak %zu bytes (planned %zu)\n", (long long)id,
                (long long)height, (long long)width, secs, be->name().c_str(), decoder.last_peak_bytes(), planned);
    tally.check(decoder.last_peak_bytes() == planned, p + "activation bytes: decode's peak equals the plan");
    compare(tally, g, p + "image_fp64", image);
    compare_u8(tally, g, p + "image_u8", image);
  }
  std::printf("vae: %.3f s over all cases\n", total_s);
  return tally.finish();
}

}  // namespace

CHECK_SUBCOMMAND("vae", "--model DIR --golden golden_vae.safetensors", run_vae);
