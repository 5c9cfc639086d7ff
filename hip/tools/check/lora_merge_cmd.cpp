// moss-check lora-merge: the engine's LoRA merge (model/lora.h) written out as weight files, the
// "folder merged offline" of docs/loras.md: --out gets transformer/diffusion_pytorch_model.safetensors
// and text_encoder/model.safetensors holding every tensor of the model, the LoRAs' targets merged.
// The LoRA tests compare these with an independent PyTorch merge, and the engine's image with
// --lora against the image of a folder made of these files.
//   moss-check lora-merge --model DIR --out DIR --lora FILE[:WEIGHT] [--lora FILE[:WEIGHT] ...]
#include "subcommand.h"
#include "io/files.h"
#include "model/lora.h"
#include "pipeline/moss_model.h"
#include "pipeline/request_fields.h"
#include "util/error.h"

namespace {

void write_all(const moss::WeightFiles& w, const std::string& path) {
  std::vector<std::pair<std::string, moss::Tensor>> tensors;
  for (const std::string& name : w.names()) tensors.emplace_back(name, w.get(name));
  std::sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  moss::write_safetensors(path, tensors);
}

int lora_merge(const std::vector<std::string>& args) {
  using namespace moss;
  const MossModel model = open_moss_model(golden::flag(args, "--model"));
  const std::string out = golden::flag(args, "--out");
  GenerationRequest r;
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--lora") set_field(r, RequestField::Lora, args[i + 1]);
  if (r.loras.empty()) throw usage_error("lora-merge: give --lora FILE[:WEIGHT] at least once");
  std::vector<BoundLora> bound;
  for (const LoraChoice& c : r.loras)
    bound.push_back(bind_lora(std::make_shared<LoraFile>(read_lora(c.path)), model.dit_weights, model.te_weights));
  std::vector<WeightedLora> weighted;
  for (size_t i = 0; i < bound.size(); ++i) weighted.push_back({&bound[i], r.loras[i].weight});
  const MergedWeights merged = merge_loras(model.dit_weights, model.te_weights, weighted);
  write_all(merged.dit, out + "/transformer/diffusion_pytorch_model.safetensors");
  write_all(merged.te, out + "/text_encoder/model.safetensors");
  std::printf("merged %zu LoRA(s): %d DiT and %d text encoder tensors changed\n1 passed, 0 failed\n", bound.size(),
              merged.dit_tensors, merged.te_tensors);
  return 0;
}

}  // namespace

CHECK_SUBCOMMAND("lora-merge", "--model DIR --out DIR --lora FILE[:WEIGHT]...: the engine's LoRA merge as files",
                 lora_merge);
