// bench_random_model: writes a MOSS-Image model folder with the official shapes, tensor names and
// configs (model/full_size_config.h: DiT dim 3072, 24 heads, 42 blocks; text encoder Qwen3.5-9B;
// VAE FLUX.2 small decoder) and random weights, so full-size runs and benchmarks can be made without the
// official files. The tensor lists come from the same expected-tensor functions that validate
// real folders, so the engine accepts what this writes.
//
//   bench_random_model --out DIR --tokenizer qwen35/tokenizer.json [--dit-layers N] [--te-layers N]
//                      [--no-text-encoder] [--sparse]
//   --sparse: headers only, every tensor's bytes a hole (zeros, no disk space): for timing what
//   happens before any weight is read (bench/model_files_mapping.sh), never for a run.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "io/files.h"
#include "io/model_folder.h"
#include "model/dit.h"
#include "model/full_size_config.h"
#include "model/random_weights.h"
#include "model/text_encoder.h"
#include "model/vae_config.h"
#include "util/error.h"
#include "util/thread_pool.h"

using namespace moss;
using nlohmann::json;

namespace {

void write_component(const std::string& path, const std::vector<ExpectedTensor>& tensors, bool zero_centred_norms,
                     uint64_t salt0, bool sparse) {
  json h = json::object();
  uint64_t off = 0;
  std::vector<uint64_t> offsets;
  for (const ExpectedTensor& t : tensors) {
    if (t.optional) continue;
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    uint64_t bytes = uint64_t(n) * dtype_size(t.dtypes[0]);
    h[t.name] = {{"dtype", dtype_name(t.dtypes[0])}, {"shape", t.shape}, {"data_offsets", {off, off + bytes}}};
    offsets.push_back(off);
    off += bytes;
  }
  std::string header = h.dump();
  while (header.size() % 8) header += ' ';
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw failure(path + ": cannot create");
  uint64_t hl = header.size();
  std::fwrite(&hl, 8, 1, f);
  std::fwrite(header.data(), 1, header.size(), f);
  if (sparse) {
    if (std::fflush(f) != 0 || ::ftruncate(::fileno(f), off_t(8 + hl + off)) != 0) throw failure(path + ": write failed");
    if (std::fclose(f) != 0) throw failure(path + ": write failed");
    return;
  }
  std::vector<char> buf;
  uint64_t salt = salt0;
  for (const ExpectedTensor& t : tensors) {
    if (t.optional) continue;
    ++salt;
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    const WeightDraw dr = weight_draw(t.name, t.shape, zero_centred_norms);
    const DType dt = t.dtypes[0];
    const int64_t chunk = 1 << 24;
    for (int64_t c0 = 0; c0 < n; c0 += chunk) {
      const int64_t cn = std::min(chunk, n - c0);
      buf.resize(size_t(cn) * dtype_size(dt));
      ThreadPool::global().parallel_for(cn, [&](int64_t b, int64_t e) {
        fill_random_weights(buf.data() + size_t(b) * dtype_size(dt), dt, c0 + b, e - b, dr, salt);
      }, 1 << 16);
      if (std::fwrite(buf.data(), 1, buf.size(), f) != buf.size()) throw failure(path + ": write failed");
    }
  }
  if (std::fclose(f) != 0) throw failure(path + ": write failed");
}

void write_json(const std::string& path, const json& j) { write_file_atomic(path, j.dump(2) + "\n"); }

std::string flag(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  if (fallback) return fallback;
  throw usage_error(std::string("missing ") + name);
}
bool has_flag(int argc, char** argv, const char* name) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string out = flag(argc, argv, "--out", nullptr);
    const std::string tokenizer = flag(argc, argv, "--tokenizer", nullptr);
    const int dit_layers = std::stoi(flag(argc, argv, "--dit-layers", std::to_string(kFullSizeDitLayers).c_str()));
    const int te_layers =
        std::stoi(flag(argc, argv, "--te-layers", std::to_string(kFullSizeTextEncoderLayers).c_str()));
    const bool with_te = !has_flag(argc, argv, "--no-text-encoder");
    const bool sparse = has_flag(argc, argv, "--sparse");
    for (const char* d : {"", "/transformer", "/text_encoder", "/vae", "/tokenizer", "/scheduler"})
      ::mkdir((out + d).c_str(), 0755);

    write_json(out + "/model_index.json",
               {{"_class_name", "MOSSImagePipeline"},
                {"scheduler", {"moss_image", "MOSSImageScheduler"}},
                {"text_encoder", {"transformers", "Qwen3_5ForConditionalGeneration"}},
                {"tokenizer", {"transformers", "Qwen3_5Tokenizer"}},
                {"transformer", {"moss_image", "MOSSImageTransformer"}},
                {"vae", {"diffusers", "AutoencoderKLFlux2"}}});
    write_json(out + "/scheduler/scheduler_config.json",
               {{"_class_name", "MOSSImageScheduler"}, {"num_train_timesteps", 1000}, {"shift", 5.0}});
    write_file_atomic(out + "/tokenizer/tokenizer.json", read_text_file(tokenizer));

    write_json(out + "/transformer/config.json", full_size_dit_config(dit_layers));
    write_json(out + "/text_encoder/config.json", full_size_text_encoder_config(te_layers));
    write_json(out + "/vae/config.json", full_size_vae_config());

    DitConfig dit = parse_dit_config(out + "/transformer/config.json");
    std::fprintf(stderr, "writing transformer (%d blocks)\n", dit_layers);
    write_component(out + "/transformer/diffusion_pytorch_model.safetensors", dit_expected_tensors(dit), false, 1000, sparse);
    VaeConfig vae = parse_vae_config(out + "/vae/config.json");
    std::fprintf(stderr, "writing vae\n");
    write_component(out + "/vae/diffusion_pytorch_model.safetensors", vae_expected_tensors(vae), false, 2000, sparse);
    if (with_te) {
      TextEncoderConfig te = parse_text_encoder_config(out + "/text_encoder/config.json");
      std::fprintf(stderr, "writing text encoder (%d layers)\n", te_layers);
      write_component(out + "/text_encoder/model.safetensors", text_encoder_expected_tensors(te, "language_model."),
                      true, 3000, sparse);
    }
    std::fprintf(stderr, "done: %s\n", out.c_str());
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_random_model: %s\n", e.what());
    return int(e.code());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_random_model: %s\n", e.what());
    return 1;
  }
}
