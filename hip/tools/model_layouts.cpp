// model_layouts: rewrites a MOSS-Image diffusers folder into the other layouts users hold
// (docs/model_files.md), for the tests and the load benchmark: Comfy-Org single files (DiT with
// fused proj.qkv, text encoder, LDM-named VAE), a prefixed split DiT, the text encoder under each
// prefix with unused vision / lm_head / mtp tensors beside it, an LDM VAE without latent
// statistics (and one holding the published FLUX.2 values), an all-in-one checkpoint, and the
// files each refusal is tested with. Same tensor bytes throughout; only names, the fused qkv
// and the VAE attention's 1x1-conv shapes change.
//
//   model_layouts --from FOLDER --out DIR [--comfy-only] [--sparse]
//   --sparse: headers only, the tensors' bytes left as holes (a sparse folder of
//   bench_random_model --sparse in, for bench/model_files_mapping.sh): nothing is read or written
//   but the names, shapes and offsets.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "model/flux2_latent_stats.h"
#include "util/error.h"

using namespace moss;
using nlohmann::json;

namespace {

// A tensor to write: its bytes come from `src` (a mapped view), or `parts` stacked by rows.
struct Out {
  std::string name;
  std::vector<Tensor> parts;
  std::vector<int64_t> shape;  // empty: the (stacked) parts' shape
  std::string dtype;           // empty: the parts' dtype
};

// Streams the file (header, then each tensor's bytes), so a full-size component never sits in
// memory twice. Sparse: the header, then a hole the size of the bytes.
bool sparse_output = false;

void write_file(const std::string& path, const std::vector<Out>& tensors) {
  json h = json::object();
  uint64_t off = 0;
  for (const Out& t : tensors) {
    uint64_t bytes = 0;
    std::vector<int64_t> shape = t.shape;
    for (const Tensor& p : t.parts) bytes += p.nbytes();
    if (shape.empty()) {
      shape = t.parts[0].dims();
      if (!shape.empty()) {
        shape[0] = 0;
        for (const Tensor& p : t.parts) shape[0] += p.dims().empty() ? 1 : p.dims()[0];
      }
    }
    h[t.name] = {{"dtype", t.dtype.empty() ? std::string(dtype_name(t.parts[0].dtype)) : t.dtype},
                 {"shape", shape},
                 {"data_offsets", {off, off + bytes}}};
    off += bytes;
  }
  std::string header = h.dump();
  while (header.size() % 8) header += ' ';
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  const uint64_t n = header.size();
  char len[8];
  for (int i = 0; i < 8; ++i) len[i] = char((n >> (8 * i)) & 0xff);
  f.write(len, 8);
  f.write(header.data(), std::streamsize(header.size()));
  if (sparse_output) {
    f.close();
    if (!f || ::truncate(path.c_str(), off_t(8 + n + off)) != 0) throw failure(path + ": write failed");
  } else {
    for (const Out& t : tensors)
      for (const Tensor& p : t.parts) f.write(static_cast<const char*>(p.data), std::streamsize(p.nbytes()));
  }
  if (!f) throw failure(path + ": write failed");
  std::printf("wrote %s (%zu tensors)\n", path.c_str(), tensors.size());
}

Out same(const std::string& name, const Tensor& t) { return {name, {t}, {}, ""}; }

// The DiT's tensors, `prefix` before each name; fused: each block's q, k, v as one proj.qkv.
std::vector<Out> dit_tensors(const WeightFiles& w, const std::string& prefix, bool fused) {
  std::vector<Out> out;
  static const std::regex q(R"(layers\.(\d+)\.proj\.q\.weight)");
  for (const std::string& n : w.names()) {
    std::smatch m;
    if (fused && std::regex_match(n, m, q)) {
      const std::string p = "layers." + m[1].str() + ".proj.";
      out.push_back(
          {prefix + p + "qkv.weight", {w.get(p + "q.weight"), w.get(p + "k.weight"), w.get(p + "v.weight")}, {}, ""});
    } else if (!(fused && std::regex_match(n, std::regex(R"(layers\.\d+\.proj\.[kv]\.weight)")))) {
      out.push_back(same(prefix + n, w.get(n)));
    }
  }
  return out;
}

// The text encoder under `prefix` (its folder's own prefix replaced), with unused tensors of
// the kinds real files carry beside it when `extras`.
std::vector<Out> te_tensors(const WeightFiles& w, const std::string& prefix, bool extras,
                            const std::string& outer = "") {
  std::vector<Out> out;
  std::string own = w.has("model.language_model.embed_tokens.weight") ? "model.language_model." : "language_model.";
  for (const std::string& n : w.names())
    if (n.compare(0, own.size(), own) == 0) out.push_back(same(outer + prefix + n.substr(own.size()), w.get(n)));
  if (extras) {
    const Tensor small = w.get(own + "norm.weight");
    for (const char* e : {"visual.blocks.0.norm1.weight", "lm_head.weight", "mtp.norm.weight"})
      out.push_back(same(outer + e, small));
  }
  return out;
}

// The VAE in LDM naming: decoder levels counted the other way, 1x1-conv attention weights.
std::vector<Out> vae_ldm_tensors(const WeightFiles& w, const std::string& prefix, bool stats) {
  std::vector<Out> out;
  int levels = 0;
  while (w.has("decoder.up_blocks." + std::to_string(levels) + ".resnets.0.conv1.weight")) ++levels;
  static const std::vector<std::pair<std::regex, std::string>> table = {
      {std::regex(R"(decoder\.mid_block\.resnets\.0\.(.*))"), "decoder.mid.block_1.$1"},
      {std::regex(R"(decoder\.mid_block\.resnets\.1\.(.*))"), "decoder.mid.block_2.$1"},
      {std::regex(R"(decoder\.mid_block\.attentions\.0\.group_norm\.(.*))"), "decoder.mid.attn_1.norm.$1"},
      {std::regex(R"(decoder\.mid_block\.attentions\.0\.to_([qkv])\.(.*))"), "decoder.mid.attn_1.$1.$2"},
      {std::regex(R"(decoder\.mid_block\.attentions\.0\.to_out\.0\.(.*))"), "decoder.mid.attn_1.proj_out.$1"},
      {std::regex(R"(decoder\.up_blocks\.(\d+)\.resnets\.(\d+)\.conv_shortcut\.(.*))"),
       "decoder.up.L$1.block.$2.nin_shortcut.$3"},
      {std::regex(R"(decoder\.up_blocks\.(\d+)\.resnets\.(\d+)\.(.*))"), "decoder.up.L$1.block.$2.$3"},
      {std::regex(R"(decoder\.up_blocks\.(\d+)\.upsamplers\.0\.(.*))"), "decoder.up.L$1.upsample.$2"},
      {std::regex(R"(decoder\.conv_norm_out\.(.*))"), "decoder.norm_out.$1"},
  };
  for (const std::string& n : w.names()) {
    if (!stats && n.rfind("bn.", 0) == 0) continue;
    std::string name = n;
    for (const auto& [from, to] : table) {
      std::smatch m;
      if (!std::regex_match(n, m, from)) continue;
      name = m.format(to);
      const size_t l = name.find(".L");
      if (l != std::string::npos) {
        const size_t end = name.find('.', l + 1);
        name = name.substr(0, l + 1) + std::to_string(levels - 1 - std::stoi(name.substr(l + 2, end - l - 2))) +
               name.substr(end);
      }
      break;
    }
    Out o = same(prefix + name, w.get(n));
    if (std::regex_match(n, std::regex(R"(decoder\.mid_block\.attentions\.0\.(to_[qkv]|to_out\.0)\.weight)")))
      o.shape = {o.parts[0].dims()[0], o.parts[0].dims()[1], 1, 1};
    out.push_back(o);
  }
  return out;
}

std::vector<Out> plus(std::vector<Out> a, const std::vector<Out>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<Out> without(std::vector<Out> a, const std::string& name) {
  a.erase(std::remove_if(a.begin(), a.end(), [&](const Out& o) { return o.name == name; }), a.end());
  return a;
}

const char* flag(int argc, char** argv, const char* name) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const char* from = flag(argc, argv, "--from");
    const char* out_dir = flag(argc, argv, "--out");
    if (!from || !out_dir) {
      std::fprintf(stderr, "usage: model_layouts --from FOLDER --out DIR [--comfy-only] [--sparse]\n");
      return 2;
    }
    bool comfy_only = false;
    for (int i = 1; i < argc; ++i) {
      comfy_only = comfy_only || std::strcmp(argv[i], "--comfy-only") == 0;
      sparse_output = sparse_output || std::strcmp(argv[i], "--sparse") == 0;
    }
    const std::string dir = out_dir;
    ::mkdir(dir.c_str(), 0755);
    const WeightFiles dit = WeightFiles::open_folder(std::string(from) + "/transformer");
    const WeightFiles te = WeightFiles::open_folder(std::string(from) + "/text_encoder");
    const WeightFiles vae = WeightFiles::open_folder(std::string(from) + "/vae");
    // Comfy-Org's three files (diffusion_models/, text_encoders/, vae/).
    write_file(dir + "/dit_comfy.safetensors", dit_tensors(dit, "", true));
    write_file(dir + "/te_model.safetensors", te_tensors(te, "model.", true));
    write_file(dir + "/vae_ldm.safetensors", vae_ldm_tensors(vae, "", true));
    if (comfy_only) return 0;
    write_file(dir + "/dit_prefixed_split.safetensors", dit_tensors(dit, "model.diffusion_model.", false));
    write_file(dir + "/te_language_model.safetensors", te_tensors(te, "language_model.", true));
    write_file(dir + "/te_model_language_model.safetensors", te_tensors(te, "model.language_model.", true));
    write_file(dir + "/te_none.safetensors", te_tensors(te, "", true));
    write_file(dir + "/vae_ldm_nostats.safetensors", vae_ldm_tensors(vae, "", false));
    // The published statistics in the file: what the no-statistics file must decode like.
    std::vector<Out> builtin = vae_ldm_tensors(vae, "", false);
    builtin.push_back(same("bn.running_mean", flux2_published_running_mean()));
    builtin.push_back(same("bn.running_var", flux2_published_running_var(1e-4f)));
    write_file(dir + "/vae_ldm_builtin_stats.safetensors", builtin);
    write_file(dir + "/all_in_one.safetensors",
               plus(plus(dit_tensors(dit, "model.diffusion_model.", true),
                         te_tensors(te, "model.language_model.", false, "text_encoders.qwen35_9b.transformer.")),
                    vae_ldm_tensors(vae, "first_stage_model.", true)));

    // Refusals.
    std::vector<Out> dit_comfy = dit_tensors(dit, "", true);
    write_file(dir + "/bad_missing.safetensors", without(dit_comfy, "layers.1.proj.o.weight"));
    write_file(dir + "/bad_duplicated.safetensors",
               plus(dit_comfy, {same("layers.0.proj.q.weight", dit.get("layers.0.proj.q.weight"))}));
    write_file(dir + "/bad_unplaced.safetensors",
               plus(dit_comfy, {same("layers.0.proj.lora_up.weight", dit.get("layers.0.norm1.weight"))}));
    const Tensor norm = dit.get("layers.0.norm1.weight");
    Tensor bytes = host_tensor(DType::U8, {int64_t(norm.nbytes())});
    std::memcpy(bytes.data, norm.data, norm.nbytes());
    // A comfy_quant format this engine does not run (INT8 ConvRot files run: docs/int8_convrot.md).
    const std::string quant_json = R"({"format": "float8_e4m3fn"})";
    Tensor quant = host_tensor(DType::U8, {int64_t(quant_json.size())});
    std::memcpy(quant.data, quant_json.data(), quant_json.size());
    write_file(dir + "/bad_quantized.safetensors",
               plus(without(dit_comfy, "layers.0.proj.o.weight"),
                    {{"layers.0.proj.o.weight", {bytes}, {}, "I8"}, same("layers.0.proj.o.comfy_quant", quant)}));
    write_file(dir + "/bad_flux.safetensors",
               {same("double_blocks.0.img_attn.qkv.weight", norm), same("img_in.weight", norm)});
    write_file(dir + "/bad_qwen_image.safetensors",
               {same("transformer_blocks.0.img_mod.1.weight", norm), same("img_in.weight", norm)});
    write_file(dir + "/bad_other_te.safetensors",
               {same("model.embed_tokens.weight", norm), same("model.layers.0.self_attn.q_proj.weight", norm)});
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "model_layouts: %s\n", e.what());
    return 1;
  }
}
