// The whole stages of `moss-infer-hip bench` (README "Self-test and benchmark"): the DiT step with
// every block resident and streamed, the text encoder's forward and the VAE decode, each through
// the code a generation runs (the memory planner, the one weight streamer, the text encoder's
// and the VAE's own classes), on random weights held in memory (io/safetensors.h,
// WeightFiles::in_memory): no model files, nothing written to disk. Written against Backend&:
// the device binary times them on its card, the unit tests run them on the host backend at the
// tiny model's shapes.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "diagnostics/diagnostics_options.h"
#include "model/dit.h"
#include "model/text_encoder.h"
#include "model/vae_config.h"
#include "ops/backend.h"

namespace moss {

// The shapes to time: MOSS-Image's (full_size_shapes) or, in the tests, the tiny model's.
struct BenchShapes {
  std::string name;  // "MOSS-Image", for the lines
  TextEncoderConfig te;
  DitConfig dit;
  VaeConfig vae;
  // The text encoder's layers made and timed: 0 every layer; else the first N (a multiple of 4
  // keeps Qwen3.5's three DeltaNet layers to one attention layer), their time scaled to all of
  // them in the line. run_stage_bench lowers it where the host's available memory cannot hold
  // every layer's random weights beside the DiT's.
  int te_layers_timed = 0;
};
// The official configs: DiT dim 3072, 24 heads, 42 blocks; text encoder Qwen3.5-9B (32 layers,
// hidden 4096); VAE the FLUX.2 small decoder.
BenchShapes full_size_shapes();

struct StageBench {
  std::vector<std::string> lines;  // the summary block's stage lines, in order
  bool ok = true;                  // false when a stage failed (its line says why)
};

// Times the stages on `be` and returns their summary lines. `tokens`: each of the two prompts'
// length (cond and uncond, cfg 3, as the CLI's default). `pool_bytes`, when given, reads the
// device allocator's pool (weights, activations, cached blocks) after the resident steps.
StageBench run_stage_bench(Backend& be, const BenchShapes& shapes, const BenchOptions& o, int64_t tokens,
                           const std::function<size_t(Backend&)>& pool_bytes = {});

}  // namespace moss
