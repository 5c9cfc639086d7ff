// moss-check cli-output: checks what the program wrote for the golden e2e request — the PNG
// (pixels within a mean of 2 levels of the golden 8-bit image; the record chunks present and
// naming the request) and the --latent-out file (readable, shape [128, H/16, W/16], close to
// the golden final latent).
#include <nlohmann/json.hpp>

#include "subcommand.h"
#include "io/image_files.h"
#include "io/safetensors.h"

namespace {

int cli_output(const std::vector<std::string>& args) {
  using namespace moss;
  const std::string png_path = golden::flag(args, "--png"), npy_path = golden::flag(args, "--npy");
  auto golden_file = SafetensorsFile::open(golden::flag(args, "--golden"));
  const double max_mean_levels = golden::decimal_flag(args, "--max-mean-levels", 2, 0, 255);
  golden::Tally tally;

  Tensor want = golden_file->get("e2e.image_u8");  // [3, H, W]
  const int64_t H = want.shape[1], W = want.shape[2];
  PngImage img = read_png(png_path);
  tally.check(img.width == W && img.height == H,
              "png size " + std::to_string(img.width) + "x" + std::to_string(img.height));
  if (img.width == W && img.height == H) {
    double sum = 0;
    int worst = 0;
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x) {
          int d = std::abs(int(img.rgb[size_t((y * W + x) * 3 + c)]) - int(want.ptr<uint8_t>()[(c * H + y) * W + x]));
          sum += d;
          worst = std::max(worst, d);
        }
    const double mean = sum / double(3 * H * W);
    char buf[128];
    std::snprintf(buf, sizeof buf, "png pixels: mean |diff| %.3f levels (max %d) vs e2e.image_u8", mean, worst);
    tally.check(mean <= max_mean_levels, buf);
  }
  std::map<std::string, std::string> chunks;
  for (const PngText& t : img.text) chunks[t.key] = t.value;
  tally.check(chunks.count("parameters") && chunks["parameters"].find("Steps: ") != std::string::npos &&
                  chunks["parameters"].find("Seed: 42") != std::string::npos,
              "png 'parameters' chunk (A1111 infotext)");
  bool record_ok = false;
  if (chunks.count("generation")) {
    auto j = nlohmann::json::parse(chunks["generation"], nullptr, false);
    record_ok = j.is_object() && j.value("seed", 0ull) == 42 && j.value("noise_layout", "") == "torch-cpu-randn/c128hw" &&
                j.contains("backend") && j.contains("timings_s") && j.contains("engine") && j.contains("model") &&
                j.value("width", 0) == W && j.value("height", 0) == H;
  }
  tally.check(record_ok, "png 'generation' JSON record");

  NpyArray lat = read_npy_f32(npy_path);
  Tensor want_lat = golden_file->get("e2e.final_latent_fp32");
  const bool shape_ok = lat.shape == want_lat.dims();
  tally.check(shape_ok, "npy shape [128, H/16, W/16]");
  if (shape_ok) {
    const double rel = golden::rel_l2(lat.data.data(), want_lat.ptr<float>(), lat.data.size());
    char buf[128];
    // The program encodes the prompt itself (fp32 host text encoder) where the golden used the
    // bf16 text-encoder output, so the latents agree to the conditioning's difference only.
    std::snprintf(buf, sizeof buf, "npy latent vs e2e.final_latent_fp32: rel L2 %.3e", rel);
    tally.check(rel < 5e-2, buf);
  }
  return tally.finish();
}

}  // namespace

CHECK_SUBCOMMAND("cli-output", "--png FILE --npy FILE --golden golden_dit.safetensors [--max-mean-levels 2]",
                  cli_output);
