#include "app/inspect_command.h"

#include <cstdio>
#include <set>

#include "io/files.h"
#include "io/standard_streams.h"
#include "pipeline/moss_model.h"
#include "util/error.h"

namespace moss {
namespace {

std::string parameters_text(int64_t n) {
  char buf[32];
  if (n >= 1000000000)
    std::snprintf(buf, sizeof buf, "%.2f B", double(n) / 1e9);
  else if (n >= 1000000)
    std::snprintf(buf, sizeof buf, "%.2f M", double(n) / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(n));
  return buf;
}

// One component of a file: layout, dtypes, parameters, tensors.
void print_component(const ExaminedFile& x, const ComponentLayout& l) {
  std::set<std::string> dtypes;
  int64_t params = 0;
  std::set<std::string> stored;
  for (const auto& [name, src] : l.names) {
    const TensorInfo& info = x.file->info(src.stored);
    dtypes.insert(info.dtype_name);
    if (!stored.insert(src.stored).second) continue;  // a fused tensor's parts count once
    int64_t n = 1;
    for (int64_t d : info.shape) n *= d;
    params += n;
  }
  std::string types;
  for (const std::string& d : dtypes) types += (types.empty() ? "" : "/") + d;
  std::printf("  %s: %s; %s; %s parameters in %zu tensors", component_name(l.component), l.layout.c_str(),
              types.c_str(), parameters_text(params).c_str(), stored.size());
  if (l.unused)
    std::printf(" (%zu unused: %s)", l.unused,
                l.component == Component::Vae   ? "the encoder side"
                : l.component == Component::Dit ? "comfy_quant records, read by the loader's check"
                                                : "vision tower, lm_head, mtp");
  std::printf("\n");
}

// A loaded component's dtypes, parameters and bytes (its canonical tensors, views counted once
// each; an INT8 ConvRot DiT's are about half its bf16 file's).
std::string weights_summary(const WeightFiles& w) {
  std::set<std::string> dtypes;
  int64_t params = 0;
  size_t bytes = 0;
  for (const std::string& n : w.names()) {
    const TensorInfo& info = w.info(n);
    dtypes.insert(info.dtype_name);
    int64_t e = 1;
    for (int64_t d : info.shape) e *= d;
    params += e;
    bytes += size_t(e) * dtype_size(info.dtype);
  }
  std::string types;
  for (const std::string& d : dtypes) types += (types.empty() ? "" : "/") + d;
  return types + ", " + parameters_text(params) + " parameters, " + std::to_string(bytes) + " bytes";
}

}  // namespace

int inspect_command(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::printf(
        "usage: moss-infer-hip inspect PATH... [--model-config DIR] [--tokenizer FILE]\n"
        "  each PATH a .safetensors file, a MOSS-Image folder or a tokenizer.json; says what each holds\n"
        "  and whether a generation could run from them together (exit 0) or not (exit 2)\n");
    finish_stdout();
    return args.empty() ? 2 : 0;
  }
  ModelPaths paths;
  bool usable = true;
  std::string refusal;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& path = args[i];
    if (path == "--model-config" || path == "--tokenizer") {
      if (i + 1 >= args.size()) throw usage_error(path + " needs a value");
      (path == "--model-config" ? paths.model_config : paths.tokenizer) = args[++i];
      continue;
    }
    if (dir_exists(path)) {
      std::printf("%s: folder\n", path.c_str());
      if (paths.path.empty()) paths.path = path;
      continue;
    }
    if (ends_with(path, ".json")) {
      std::printf("%s: tokenizer\n", path.c_str());
      paths.tokenizer = path;
      continue;
    }
    try {
      const ExaminedFile x = examine_weights_file(path);
      std::printf("%s: safetensors file, %zu tensors\n", path.c_str(), x.file->tensors().size());
      if (x.components.empty()) std::printf("  no MOSS-Image component recognised\n");
      for (const ComponentLayout& l : x.components) {
        print_component(x, l);
        std::string& slot = l.component == Component::Dit           ? paths.diffusion_model
                            : l.component == Component::TextEncoder ? paths.text_encoder
                                                                    : paths.vae;
        if (slot.empty()) slot = path;
      }
      if (!x.unplaced.empty()) {
        std::printf("  could not place %zu tensor(s): %s\n", x.unplaced.size(), name_list(x.unplaced, 20).c_str());
        usable = false;
        if (refusal.empty()) refusal = path + ": tensors it could not place";
      }
    } catch (const Error& e) {
      if (e.code() != ExitCode::Usage && e.code() != ExitCode::Failure) throw;
      std::printf("%s: refused: %s\n", path.c_str(), e.what());
      usable = false;
      if (refusal.empty()) refusal = e.what();
    }
  }
  if (usable) {
    try {
      const MossModel m = open_moss_model(paths);
      std::printf("generation: possible: %s\n", m.identity.c_str());
      const WeightFiles* weights[] = {&m.dit_weights, &m.te_weights, &m.vae_weights};
      for (size_t i = 0; i < m.files.size() && i < 3; ++i) {
        const ComponentFile& f = m.files[i];
        std::printf("  %s: %s (%s), %s; %s, config %s%s%s\n", component_name(f.component), f.file.c_str(),
                    f.fingerprint.c_str(), f.layout.c_str(), weights_summary(*weights[i]).c_str(), f.config.c_str(),
                    f.note.empty() ? "" : "; ", f.note.c_str());
      }
      std::printf("  tokenizer: %s\n", m.tokenizer_json.c_str());
    } catch (const Error& e) {
      if (e.code() != ExitCode::Usage && e.code() != ExitCode::Failure) throw;
      usable = false;
      refusal = e.what();
    }
  }
  if (!usable) std::printf("generation: not possible: %s\n", refusal.c_str());
  finish_stdout();
  return usable ? 0 : 2;
}

}  // namespace moss
