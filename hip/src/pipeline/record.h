// The generation record written into the PNG (product.md section 4): a JSON text chunk
// ("generation") and the A1111-style "parameters" chunk that PNG-info readers understand.
#pragma once
#include <string>
#include <vector>

#include "cli/options.h"
#include "io/image_files.h"

namespace moss {

struct StageTimes {
  double text_encoder_s = 0, dit_load_s = 0, denoise_s = 0, vae_s = 0, total_s = 0;
};

struct RunRecord {
  const RunOptions* options = nullptr;
  int steps_run = 0;             // after snapping to the training grid
  std::string model_identity;    // e.g. "MOSS-Image (tiny-moss, MOSSImagePipeline)"
  std::string backend;           // "hip gfx1100", "hip nvidia sm_90", "host"
  StageTimes times;
  int resident_blocks = 0, total_blocks = 0;
};

std::string engine_version();                      // "moss-infer-hip 0.1.0 (git abc123)"
std::string record_json(const RunRecord& r);       // the JSON generation record
std::string a1111_parameters(const RunRecord& r);  // "prompt\nNegative prompt: ...\nSteps: ..., ..."
std::vector<PngText> png_record_chunks(const RunRecord& r);

}  // namespace moss
