// A loaded pipeline that makes one image per generate() call: request -> tokens -> text
// encoder -> sampler (DiT) -> VAE -> PNG (docs/product.md sections 4 and 5). The CLI (one image, a
// batch, a jobs file) and the server all drive it; the model folder, the tokenizer, the backend
// and the VAE weights are opened once, and with keep_loaded the text encoder and the DiT stay
// loaded between images where the memory plan holds them together.
#pragma once
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/model_files.h"
#include "pipeline/record.h"
#include "pipeline/reporter.h"
#include "pipeline/request.h"

namespace moss {

struct MossModel;

struct EngineSettings {
  ModelPaths model;                      // folder, all-in-one file, component files
  std::optional<double> vram_budget_gib;
  int device = -1;                       // -1: first supported device
  // Several images per load: keep the text encoder's and the DiT's weights between images when
  // the plan holds them beside each other and the decode (always on the host backend). Off (one
  // image): each is freed before the next stage, the smallest peak.
  bool keep_loaded = false;
  // Several engines (--device 0,1): this one's device as logs name it ("1"), carried by its step
  // events so that interleaved progress says which engine it belongs to. Empty with one engine.
  std::string device_label;
};

// What a caller follows (the server's /progress, its cancellation): the stage that starts
// ("text_encoder", "denoise", "vae") or a finished denoise step. A hook may throw to stop the
// image; the engine stays usable.
struct ProgressEvent {
  std::string stage;
  int step = 0, steps = 0;     // denoise: steps done, steps that run
  double seconds = 0, eta_s = 0;  // the step's time; the denoise's estimated time left
};
using ProgressHook = std::function<void(const ProgressEvent&)>;

struct GeneratedImage {
  RunRecord record;
  std::string png;                 // the encoded image (with its record unless no_metadata); empty without decode
  std::vector<std::string> paths;  // files written (request.output_png, request.latent_out)
  bool stopped_early = false;      // the denoise ended before its last step (record.steps_run: how far)
};

// The memory of an engine's device: used by every program on it (our allocator's cache counts
// as free); all zero on the host backend and before the first image chose the backend.
struct DeviceMemoryUse {  // what a device holds now (metrics), not its pools (planner.h)
  size_t used_bytes = 0, total_bytes = 0;
};

// Whether MOSSINFER_BACKEND=host picks the host reference backend (a developer feature for tests
// and machines without a GPU); exit 2 for a value other than host or hip.
bool host_backend_chosen();

class Engine {
 public:
  // Opens and checks the model folder and the tokenizer (exit 2 / 1 as open_moss_model says).
  Engine(const EngineSettings& settings, const Reporter& rep);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Refuses (exit 2) what this model cannot run, before any compute: skip layers beyond its
  // blocks, named with the blocks that exist. `skip_layers_given` false: the request's skip
  // layers are the default (no --skip-layers), and the message says so instead of naming a flag
  // the user did not give.
  void check(const GenerationRequest& r, bool skip_layers_given = true) const;
  // Makes the image; decodes when the request writes a PNG or `decode` asks for the image anyway
  // (the server). The backend is chosen on the first call, on the calling thread (a HIP device
  // is bound to it): call every method of one engine from one thread.
  // stop_denoise, when given and set during the denoise, ends it (a step it cuts short is dropped)
  // and the image is decoded from the latents as they are, the initial noise when no step had
  // finished: stopped_early, record.steps_run how many steps did.
  GeneratedImage generate(const GenerationRequest& r, bool decode, const ProgressHook& hook = {},
                          const std::atomic<bool>* stop_denoise = nullptr);
  DeviceMemoryUse device_memory() const;

  const std::string& model_identity() const;
  const std::string& model_folder() const;
  std::vector<RecordedFile> model_files() const;  // each component's file and hash, as the record names them

 private:
  struct Loaded;
  // Merges the request's LoRA set unless it is the one merged now (exit 2 for a LoRA that does not fit).
  void apply_loras(const std::vector<LoraChoice>& loras);
  // The merged set as the record lists it, each with its hash: waits for the hashes that
  // apply_loras started beside the loads (a file that could not be read again: exit 1).
  const std::vector<LoraChoice>& recorded_loras();
  GeneratedImage make_image(const GenerationRequest& r, bool decode, const ProgressHook& hook,
                            const std::atomic<bool>* stop_denoise);
  EngineSettings settings_;
  const Reporter& rep_;
  std::unique_ptr<Loaded> s_;
  // Guards Loaded::lora_key, which check() reads on a server's request threads while the
  // engine's thread may be changing the merged set.
  mutable std::mutex lora_mutex_;
};

}  // namespace moss
