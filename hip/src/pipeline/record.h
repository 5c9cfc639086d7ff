// The generation record written into the PNG (docs/product.md section 4): a JSON text chunk
// ("generation") and the A1111-style "parameters" chunk that PNG-info readers understand.
#pragma once
#include <string>
#include <vector>

#include "io/image_files.h"
#include "pipeline/request.h"

namespace moss {

struct StageTimes {
  double text_encoder_s = 0, dit_load_s = 0, denoise_s = 0, vae_s = 0, total_s = 0;
};

// One component's weights file as the record names it (docs/model_files.md): base name and a
// short content hash, so a replay can tell the files apart.
struct RecordedFile {
  std::string component;  // "diffusion model", "text encoder", "VAE"
  std::string file, hash;
  std::string note;       // e.g. "latent statistics: built-in FLUX.2 values"
};

struct RunRecord {
  GenerationRequest request;
  int steps_run = 0;             // after snapping to the training grid (request.steps: asked for)
  std::string model_identity;    // e.g. "MOSS-Image (tiny-moss, MOSSImagePipeline)"
  std::string backend;           // "hip gfx1100", "hip nvidia sm_90", "host"
  StageTimes times;
  int resident_blocks = 0, total_blocks = 0;
  std::vector<RecordedFile> model_files;  // DiT, text encoder, VAE
};

std::string engine_version();                      // "moss-infer-hip 0.1.0 (git abc123)"
std::string record_json(const RunRecord& r);       // the JSON generation record
// "prompt\nNegative prompt: ...\nSteps: 200, Steps run: 172, ...": Steps is the count asked for (what
// an A1111 reader passes back as --steps), Steps run what the snapped schedule ran.
std::string a1111_parameters(const RunRecord& r);
std::vector<PngText> png_record_chunks(const RunRecord& r);

}  // namespace moss
