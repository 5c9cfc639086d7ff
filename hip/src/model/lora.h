// LoRAs at run time (docs/loras.md): a LoRA file read whatever its format (PEFT/diffusers,
// kohya, ComfyUI, LyCORIS LoHa and LoKr, full deltas), each of its modules mapped onto the
// official weight names of the DiT or the text encoder, and the weights merged with it:
//   W' = bf16(float(W) + sum over the LoRAs, in the order given, of weight * scale * dW)
// in fp32 with one rounding per weight, by the LoRA op (ops/lora_ops.h, whose header defines the
// arithmetic to the bit; host reference and kernel agree). LoraMergePlan says where each weight
// merges: the DiT's resident weights on the device in place after their upload, the others into
// host copies that replace them in a WeightFiles (io/safetensors.h, with_replaced), which the
// pinned streaming images and the text encoder's loaders read as they read the mapped files. The
// base files stay mapped and untouched, so going back to no LoRA is a fresh load of them, bit for
// bit.
//
// Everything that can be refused is refused by read_lora and bind_lora, before any compute: a
// format the reader does not know (named), a module matching no weight of this model (with the
// model it looks like when nothing matches), a rank or shape that does not fit, NaN or Inf.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "model/dit_weights.h"
#include "ops/backend.h"

namespace moss {

enum class LoraFormat { Peft, Kohya, Comfy, LoHa, LoKr, FullDelta };
const char* lora_format_name(LoraFormat f);

// One module of the file: its tensors and how they make dW ([out, in], the module's shape).
struct LoraModule {
  std::string key;                    // the module's name in the file, as written ("transformer.layers.0.proj.q")
  LoraFormat format = LoraFormat::Peft;
  std::map<std::string, Tensor> parts;  // by role: "up" "down" (low rank); "w1a" "w1b" "w2a" "w2b" (LoHa);
                                        // "w1" "w1a" "w1b" "w2" "w2a" "w2b" (LoKr); "diff" "diff_b" (full)
  float alpha = 0;                    // 0: none given (scale 1)
  std::string first_tensor;           // a tensor of the module, named in messages
};

struct LoraFile {
  std::string path;
  std::string name;   // the file name without folder and .safetensors (what a prompt tag names)
  std::vector<LoraModule> modules;
  std::shared_ptr<SafetensorsFile> file;  // keeps the views alive
};

// Reads and parses the file (exit 1 when unreadable, exit 2 for a format it does not know).
LoraFile read_lora(const std::string& path);

// Where one module's dW goes: rows [row0, row0 + rows) of dW onto the whole of `target`
// (a fused proj.qkv module over a model with separate q, k, v gives three pieces).
struct LoraPiece {
  std::string target;   // official tensor name ("layers.0.proj.q.weight", or a .bias for diff_b)
  int64_t row0 = 0;
  bool bias = false;    // the module's diff_b
  bool beside = false;  // the target is an INT8 ConvRot layer: the update runs beside it (DitSideLora)
};
struct BoundModule {
  const LoraModule* module = nullptr;
  bool text_encoder = false;   // else the DiT
  std::vector<LoraPiece> pieces;
  int64_t out = 0, in = 0;     // dW's shape
  float scale = 1;             // alpha / rank, or 1
};
struct BoundLora {
  std::shared_ptr<const LoraFile> file;
  std::vector<BoundModule> modules;
};

// Maps every module of `lora` onto the DiT's and text encoder's weights and checks shapes and
// values. Throws moss::Error (exit 2) naming file and tensor for anything that does not fit.
BoundLora bind_lora(std::shared_ptr<const LoraFile> lora, const WeightFiles& dit, const WeightFiles& te);

struct WeightedLora {
  const BoundLora* lora;
  float weight;
};
// One weight's share of a LoRA set: the pieces of modules that land on it, in the set's order,
// each with its coefficient (the LoRA's weight times the module's scale).
struct LoraTarget {
  std::string name;   // the official tensor name
  bool text_encoder = false;
  bool beside = false;  // an INT8 ConvRot DiT layer: its parts become side corrections, not a merge
  struct Part {
    const BoundModule* module;
    const LoraPiece* piece;
    float coef;
  };
  std::vector<Part> parts;
};
// Every weight the set changes: the DiT's, then the text encoder's, each by name.
std::vector<LoraTarget> lora_targets(const std::vector<WeightedLora>& loras);

// A target's updates as the LoRA op takes them (ops/lora_ops.h): each module's tensors as f32
// factors staged on `be` (uploaded to a device backend; the host backend's are host copies),
// so a device merges in place one weight at a time, holding one weight's factors.
std::vector<LoraDelta> lora_deltas(const LoraTarget& target, Backend& be);

struct MergedWeights {
  WeightFiles dit, te;
  int dit_tensors = 0, te_tensors = 0;  // how many tensors changed (merged here)
};

// A LoRA set ready to merge wherever each weight lives. On an INT8 ConvRot DiT the quantized
// layers have no bf16 weight to merge into: their targets become side corrections (DitSideLora,
// model/dit_weights.h), one per part in the set's order, made as host tensors of the DiT's
// weight files (dit_side_tensors) under dit_side_lora_name's names, so they load, stay resident
// or stream with their block; DitConfig::side_loras (dit_side_forms) tells the DiT. The DiT's weights a device holds resident
// merge there, in place, right after their upload (merge_on_device: one weight's factors staged
// at a time, so no second copy of the DiT on the device); every other target merges into a host
// copy that replaces it in the WeightFiles the loaders read (merge_into_copies): the streamed blocks'
// pinned images (which may pack the merged values), the text encoder's weights, and every weight
// on the host backend (whose upload is the read-only mapping itself). Both run the LoRA op's one
// arithmetic (ops/lora_ops.h), so a weight gets the same bits wherever it merges. The plan points
// into the bound LoRAs, which must outlive it.
class LoraMergePlan {
 public:
  explicit LoraMergePlan(const std::vector<WeightedLora>& loras);
  // One network's base weights (`text_encoder` or the DiT's) with its targets merged into host
  // copies, except the DiT's tensors for which `on_device` says yes (left for merge_on_device).
  // `by` computes them: null, the host reference; a device backend, each weight uploaded, merged
  // there and downloaded (a rank-64 DiT block in milliseconds over the bus, where the host's
  // fp32 loops take about a second: docs/loras.md).
  struct Merged {
    WeightFiles weights;
    int tensors = 0;  // how many it merged
  };
  Merged merge_into_copies(const WeightFiles& base, bool text_encoder,
                           const std::function<bool(const std::string&)>& on_device = nullptr,
                           Backend* by = nullptr) const;
  // The DiT's tensor `name`, uploaded to `be`: merged there in place when the set changes it.
  // Returns whether it did.
  bool merge_on_device(Backend& be, const std::string& name, Tensor& w) const;
  int dit_targets() const { return dit_targets_; }
  // The side tensors of the DiT's INT8 targets (DitSideLora) under dit_side_lora_name's names,
  // host tensors to add to the DiT's weight files (WeightFiles::with_replaced) wherever the blocks
  // will live; dense deltas are made by `by` (null: the host reference; a device: each uploaded,
  // merged there and downloaded). merge_into_copies leaves these targets alone.
  std::map<std::string, Tensor> dit_side_tensors(const WeightFiles& dit, Backend* by = nullptr) const;
  // The INT8 layers with corrections beside them, and each one's forms (DitConfig::side_loras).
  int dit_beside_targets() const { return int(side_forms_.size()); }
  const DitSideForms& dit_side_forms() const { return side_forms_; }
  bool changes_dit_tensor(const std::string& name) const { return dit_index_.count(name) != 0; }

 private:
  std::vector<LoraTarget> targets_;
  std::map<std::string, size_t> dit_index_;  // a DiT target's name -> its index in targets_
  int dit_targets_ = 0;
  DitSideForms side_forms_;  // by projection ("layers.N.proj.o"): its beside targets' parts
};

// All of the set merged on the host (LoraMergePlan::merge_into_copies with nothing on a device): the
// offline merge (moss-check lora-merge). A set with modules on INT8 ConvRot layers is refused
// (exit 2): those run beside the layer, never in a file.
MergedWeights merge_loras(const WeightFiles& dit, const WeightFiles& te, const std::vector<WeightedLora>& loras);

}  // namespace moss
