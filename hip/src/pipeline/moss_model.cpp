#include "pipeline/moss_model.h"

#include "io/files.h"
#include "io/model_folder.h"
#include "util/error.h"

namespace moss {

// Every folder of the tree that may hold weights; any GGUF file in any of them is refused
// as unsupported before the configs are even read.
static void refuse_gguf(const std::string& folder) {
  for (const std::string& sub : {std::string(), std::string("/transformer"), std::string("/text_encoder"),
                                 std::string("/vae")}) {
    std::string dir = folder + sub;
    if (!dir_exists(dir)) continue;
    for (const std::string& e : list_dir(dir))
      if (ends_with(e, ".gguf"))
        throw usage_error(dir + "/" + e + ": GGUF model files are not supported; use the official bf16 diffusers folder");
  }
}

MossModel open_moss_model(const std::string& folder) {
  if (!dir_exists(folder)) throw usage_error("--model " + folder + ": not a folder");
  refuse_gguf(folder);
  nlohmann::json index = read_json_file(folder + "/model_index.json");
  for (const char* part : {"transformer", "text_encoder", "vae", "tokenizer", "scheduler"}) {
    const std::string dir = folder + "/" + part;
    if (dir_exists(dir)) continue;
    const std::string kind = file_kind(dir);
    if (file_exists(dir) || !kind.empty())
      throw failure(folder + ": component folder '" + part + "' is " + (kind.empty() ? "a regular file" : kind) +
                    ", not a folder");
    throw failure(folder + ": missing component folder '" + part + "'");
  }
  std::string cls = index.is_object() && index.contains("_class_name") && index["_class_name"].is_string()
                        ? index["_class_name"].get<std::string>()
                        : "";
  if (cls.find("MOSS") == std::string::npos && cls.find("Moss") == std::string::npos)
    throw failure(folder + "/model_index.json: _class_name '" + cls + "' is not a MOSS-Image pipeline");

  MossModel m{folder, "", folder + "/tokenizer/tokenizer.json",
              parse_text_encoder_config(folder + "/text_encoder/config.json"),
              parse_dit_config(folder + "/transformer/config.json"), parse_vae_config(folder + "/vae/config.json"),
              WeightFiles::open_folder(folder + "/text_encoder"), WeightFiles::open_folder(folder + "/transformer"),
              WeightFiles::open_folder(folder + "/vae")};
  require_regular_file(m.tokenizer_json);
  // The schedule is the engine's own (docs/model.md section 5); the scheduler config must still be a
  // well-formed file of the MOSS-Image scheduler with the training grid the engine assumes.
  const std::string sched_path = folder + "/scheduler/scheduler_config.json";
  const nlohmann::json sched = read_json_file(sched_path);
  if (sched.contains("num_train_timesteps") && config_int(sched, "num_train_timesteps", sched_path) != 1000)
    throw usage_error(sched_path + ": key 'num_train_timesteps' must be 1000 (the MOSS-Image training grid)");
  check_tensors(m.te_weights, text_encoder_expected_tensors(m.te_config, text_encoder_prefix(m.te_weights)),
                text_encoder_ignored_prefixes());
  check_tensors(m.dit_weights, dit_expected_tensors(m.dit_config));
  check_tensors(m.vae_weights, vae_expected_tensors(m.vae_config), vae_ignored_prefixes());
  m.identity = moss_model_title(folder, m.dit_config);
  return m;
}

std::string moss_model_title(const std::string& folder, const DitConfig& dit) {
  std::string name = folder;
  while (name.size() > 1 && name.back() == '/') name.pop_back();
  name = name.substr(name.find_last_of('/') + 1);
  return "MOSS-Image " + name + " (dim " + std::to_string(dit.dim) + ", " + std::to_string(dit.layers) + " blocks)";
}

std::string moss_model_title(const std::string& folder) {
  return moss_model_title(folder, parse_dit_config(folder + "/transformer/config.json"));
}

}  // namespace moss
