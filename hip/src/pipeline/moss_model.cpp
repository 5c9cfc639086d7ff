#include "pipeline/moss_model.h"

#include <optional>
#include <set>

#include "io/file_fingerprint.h"
#include "io/files.h"
#include "io/model_folder.h"
#include "model/flux2_latent_stats.h"
#include "model/full_size_config.h"
#include "model/int8_convrot_layers.h"
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

// The shapes one component passes another: the text encoder's width is the DiT's text_dim, the
// DiT's latent channels the VAE's packed channels. Files of different models (or of different
// sizes) are refused here rather than fail mid-run.
void check_components_agree(const MossModel& m) {
  if (m.dit_config.text_dim != m.te_config.hidden)
    throw failure("the components disagree: the diffusion model takes " + std::to_string(m.dit_config.text_dim) +
                  "-wide text features, the text encoder (" + m.te_config.file + ") gives " +
                  std::to_string(m.te_config.hidden));
  if (m.dit_config.latent_channels != m.vae_config.packed_channels())
    throw failure("the components disagree: the diffusion model makes " + std::to_string(m.dit_config.latent_channels) +
                  "-channel latents, the VAE (" + m.vae_config.file + ") decodes " +
                  std::to_string(m.vae_config.packed_channels()));
}

std::string folder_quantized_dit(const std::string& folder) {
  const std::string dir = folder + "/transformer";
  if (!dir_exists(dir)) return "";
  std::vector<std::string> files;
  for (const std::string& e : list_dir(dir))
    if (ends_with(e, ".safetensors")) files.push_back(dir + "/" + e);
  if (files.size() != 1 || !file_exists(files[0])) return "";  // shards: bf16 (the check refuses anything else)
  try {
    const std::shared_ptr<SafetensorsFile> f = SafetensorsFile::open(files[0]);  // alive through the loop
    for (const auto& [name, info] : f->tensors())
      if (ends_with(name, ".comfy_quant")) return files[0];
  } catch (const Error&) {  // a malformed file: the folder's own checks say so, in their order
  }
  return "";
}

MossModel open_moss_model(const std::string& folder) {
  if (!dir_exists(folder)) throw usage_error("--model " + folder + ": not a folder");
  refuse_gguf(folder);
  // A quantized transformer file is examined and checked as --diffusion-model FILE is (one path).
  if (!folder_quantized_dit(folder).empty()) return open_moss_model(ModelPaths{folder, "", "", "", "", ""});
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
              WeightFiles::open_folder(folder + "/vae"), {}};
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
  check_components_agree(m);
  m.identity = moss_model_title(folder, m.dit_config);
  return m;
}

namespace {

std::string base_name(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path.substr(path.find_last_of('/') + 1);
}

// The folder component's files, for the record: "transformer/diffusion_pytorch_model.safetensors".
ComponentFile folder_component(Component c, const std::string& folder, const std::string& sub) {
  ComponentFile f{c, sub, "", "diffusers folder", folder + "/" + sub + "/config.json", ""};
  std::vector<std::string> shards;
  for (const std::string& e : list_dir(folder + "/" + sub))
    if (ends_with(e, ".safetensors")) {
      f.file = shards.empty() ? sub + "/" + e : sub + "/*.safetensors";
      shards.push_back(folder + "/" + sub + "/" + e);
    }
  f.fingerprint = combined_fingerprint(shards);  // sorted names: the same order every load
  return f;
}

// Layer counts of a component's canonical names "<prefix><N>.<rest>".
int64_t count_layers(const WeightFiles& w, const std::string& prefix) {
  std::set<std::string> seen;
  for (const std::string& n : w.names())
    if (n.compare(0, prefix.size(), prefix) == 0)
      seen.insert(n.substr(prefix.size(), n.find('.', prefix.size()) - prefix.size()));
  return int64_t(seen.size());
}

// A component opened from a single weights file; an INT8 ConvRot DiT's file layout beside it
// (ExaminedFile::stored_dit), for the layout check once the config is known.
struct FileComponent {
  WeightFiles weights;
  ComponentFile file;
  bool int8_convrot = false;
  WeightFiles int8_layout;
};

FileComponent open_file_component(Component c, const std::string& path, const std::string& flag) {
  const ExaminedFile x = examine_weights_file(path);
  const ComponentLayout* l = x.find(c);
  if (!l) {
    std::string holds;
    for (const ComponentLayout& o : x.components)
      holds += std::string(holds.empty() ? "" : ", ") + component_name(o.component);
    throw usage_error(flag + " " + path + ": holds no MOSS-Image " + component_name(c) +
                      (holds.empty() ? "" : " (it holds the " + holds + ")"));
  }
  if (!x.unplaced.empty())
    throw failure(path + ": " + std::to_string(x.unplaced.size()) + " tensor(s) it could not place as MOSS-Image's: " +
                  name_list(x.unplaced));
  FileComponent out{WeightFiles::of_files(path, {x.file->renamed(l->names)}),
                    {c, base_name(path), file_fingerprint(path), l->layout, "", ""}, false, {}};
  if (c == Component::Dit && x.int8_convrot) {
    out.int8_convrot = true;
    out.int8_layout = x.stored_dit();
  }
  return out;
}

// The component's config: DIR/<sub>/config.json of --model-config or the folder when there is
// one, else MOSS-Image's own built in, its layer count (and the VAE's widths) read from the file.
std::string config_path(const ModelPaths& p, const std::string& sub) {
  if (!p.model_config.empty()) {
    const std::string path = p.model_config + "/" + sub + "/config.json";
    if (!file_exists(path)) throw usage_error("--model-config " + p.model_config + ": missing " + sub + "/config.json");
    return path;
  }
  if (!p.path.empty() && dir_exists(p.path)) return p.path + "/" + sub + "/config.json";
  return "";
}

nlohmann::json built_in_vae_config(const WeightFiles& w) {
  nlohmann::json j = full_size_vae_config();
  // The decoder's widths from the file (flux2-vae_small and the full decoder differ): up_blocks.i
  // has width C(n-1-i), its first resnet's conv2 gives it.
  std::vector<int64_t> widths;
  for (int i = 0;; ++i) {
    const std::string n = "decoder.up_blocks." + std::to_string(i) + ".resnets.0.conv2.weight";
    if (!w.has(n) || w.info(n).shape.empty()) break;
    widths.insert(widths.begin(), w.info(n).shape[0]);
  }
  if (!widths.empty()) j["decoder_block_out_channels"] = widths;
  if (w.has("decoder.conv_in.weight") && w.info("decoder.conv_in.weight").shape.size() == 4)
    j["latent_channels"] = w.info("decoder.conv_in.weight").shape[1];
  return j;
}

}  // namespace

MossModel open_moss_model(const ModelPaths& p) {
  if (p.empty())
    throw usage_error("--model is required (a MOSS-Image folder or all-in-one file), or --diffusion-model, "
                      "--text-encoder and --vae");
  const bool folder = !p.path.empty() && dir_exists(p.path);
  // A folder's quantized transformer file (an INT8 ConvRot one, docs/int8_convrot.md section 8) is
  // opened as --diffusion-model opens a file, its config the folder's.
  const std::string folder_dit = folder && p.diffusion_model.empty() ? folder_quantized_dit(p.path) : "";
  if (folder && !p.any_component_file() && p.model_config.empty() && folder_dit.empty()) {
    MossModel m = open_moss_model(p.path);
    if (!p.tokenizer.empty()) {
      require_regular_file(p.tokenizer);
      m.tokenizer_json = p.tokenizer;
    }
    m.files = {folder_component(Component::Dit, p.path, "transformer"),
               folder_component(Component::TextEncoder, p.path, "text_encoder"),
               folder_component(Component::Vae, p.path, "vae")};
    return m;
  }
  const std::string all_in_one = !p.path.empty() && !folder ? p.path : "";
  if (!all_in_one.empty() && !file_exists(all_in_one)) {
    const std::string kind = file_kind(all_in_one);
    throw usage_error("--model " + all_in_one + ": not a folder or a .safetensors file (" +
                      (kind.empty() ? std::string("it does not exist") : "it is " + kind) + ")");
  }
  if (!p.model_config.empty() && !dir_exists(p.model_config))
    throw usage_error("--model-config " + p.model_config + ": not a folder");
  if (folder) refuse_gguf(p.path);

  MossModel m;
  m.folder = !p.path.empty() ? p.path : p.diffusion_model;  // A1111's model_name: the folder's or the DiT file's
  struct Part {
    Component c;
    const std::string& file;
    const char* flag;
    const char* sub;
    WeightFiles& weights;
  };
  std::optional<WeightFiles> dit_int8_layout;  // an INT8 ConvRot DiT's file layout
  for (const Part& part : {Part{Component::Dit, p.diffusion_model, "--diffusion-model", "transformer", m.dit_weights},
                           Part{Component::TextEncoder, p.text_encoder, "--text-encoder", "text_encoder", m.te_weights},
                           Part{Component::Vae, p.vae, "--vae", "vae", m.vae_weights}}) {
    const std::string& file = !part.file.empty()                        ? part.file
                              : part.c == Component::Dit && !folder_dit.empty() ? folder_dit
                                                                              : all_in_one;
    if (!file.empty()) {
      FileComponent fc = open_file_component(part.c, file, part.file.empty() ? "--model" : part.flag);
      if (file == folder_dit) fc.file.file = std::string("transformer/") + base_name(file);
      part.weights = std::move(fc.weights);
      m.files.push_back(fc.file);
      if (fc.int8_convrot) dit_int8_layout = std::move(fc.int8_layout);
    } else if (folder) {
      part.weights = WeightFiles::open_folder(p.path + "/" + part.sub);
      m.files.push_back(folder_component(part.c, p.path, part.sub));
    } else {
      throw usage_error(std::string("no ") + component_name(part.c) + ": give " + part.flag +
                        " FILE, or --model with a MOSS-Image folder or all-in-one file");
    }
  }
  if (!p.tokenizer.empty()) m.tokenizer_json = p.tokenizer;
  else if (folder) m.tokenizer_json = p.path + "/tokenizer/tokenizer.json";
  else if (!p.model_config.empty() && file_exists(p.model_config + "/tokenizer/tokenizer.json"))
    m.tokenizer_json = p.model_config + "/tokenizer/tokenizer.json";
  else
    throw usage_error("no tokenizer: give --tokenizer FILE, the tokenizer.json of the official folder "
                      "(OpenMOSS-Team/MOSS-Image-SFT, tokenizer/tokenizer.json; docs/model_files.md)");
  require_regular_file(m.tokenizer_json);

  auto config_of = [&](const char* sub, ComponentFile& f) {
    const std::string path = config_path(p, sub);
    f.config = path.empty() ? "built-in" : path;
    return path;
  };
  const std::string dit_cfg = config_of("transformer", m.files[0]);
  const int64_t dit_layers = count_layers(m.dit_weights, "layers.");
  m.dit_config = dit_cfg.empty()
                     ? dit_config_from_json(full_size_dit_config(int(dit_layers ? dit_layers : kFullSizeDitLayers)),
                                            "built-in MOSS-Image transformer config")
                     : parse_dit_config(dit_cfg);
  if (dit_int8_layout) {  // docs/int8_convrot.md section 5: the file's layers against the layout
    const std::map<std::string, int64_t> groups = check_int8_convrot_dit(*dit_int8_layout, m.dit_config);
    m.dit_config.int8_groups = int8_projection_groups(groups, m.dit_config);
    std::set<int64_t> sizes;
    for (const auto& [layer, g] : groups) sizes.insert(g);
    std::string group_text;
    for (int64_t g : sizes) group_text += (group_text.empty() ? "" : "/") + std::to_string(g);
    m.files[0].note = "int8 ConvRot, group " + group_text + ", " + std::to_string(groups.size()) + " layers quantized";
  }
  check_tensors(m.dit_weights, dit_expected_tensors(m.dit_config));
  const std::string te_cfg = config_of("text_encoder", m.files[1]);
  const int64_t te_layers = count_layers(m.te_weights, std::string(kCanonicalTextEncoderPrefix) + "layers.");
  const int te_built_in_layers = int(te_layers ? te_layers : kFullSizeTextEncoderLayers);
  m.te_config = te_cfg.empty() ? text_encoder_config_from_json(full_size_text_encoder_config(te_built_in_layers),
                                                               "built-in Qwen3.5-9B text encoder config")
                               : parse_text_encoder_config(te_cfg);
  check_tensors(m.te_weights, text_encoder_expected_tensors(m.te_config, text_encoder_prefix(m.te_weights)),
                text_encoder_ignored_prefixes());
  const std::string vae_cfg = config_of("vae", m.files[2]);
  m.vae_config = vae_cfg.empty()
                     ? vae_config_from_json(built_in_vae_config(m.vae_weights), "built-in FLUX.2 VAE config")
                     : parse_vae_config(vae_cfg);
  // FLUX.2's latent statistics: the file's own, else the published values (a single LDM file).
  if (!m.vae_weights.has("bn.running_mean") && !m.vae_weights.has("bn.running_var") &&
      m.vae_config.packed_channels() == kFlux2PackedChannels) {
    m.vae_weights.add_in_memory("bn.running_mean", flux2_published_running_mean());
    m.vae_weights.add_in_memory("bn.running_var", flux2_published_running_var(m.vae_config.batch_norm_eps));
    m.files[2].note = "latent statistics: built-in FLUX.2 values";
  }
  check_tensors(m.vae_weights, vae_expected_tensors(m.vae_config), vae_ignored_prefixes());
  check_components_agree(m);
  std::string name = !p.diffusion_model.empty() ? base_name(p.diffusion_model) : base_name(p.path);
  if (ends_with(name, ".safetensors")) name.resize(name.size() - 12);
  m.identity = moss_model_title(name, m.dit_config);
  return m;
}

std::string model_files_text(const MossModel& m) {
  std::string s;
  for (const ComponentFile& f : m.files)
    s += std::string(s.empty() ? "" : ", ") + component_name(f.component) + " " + f.file + " (" + f.fingerprint +
         (f.note.empty() ? "" : "; " + f.note) + ")";
  return s;
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
