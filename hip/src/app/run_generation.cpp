#include "app/run_generation.h"

#include <chrono>
#include <vector>

#include "cli/batch.h"
#include "frontend/a1111_request.h"
#include "frontend/jobs_file.h"
#include "io/files.h"
#include "io/mapping_faults.h"
#include "io/output_paths.h"
#include "pipeline/engine_pool.h"
#include "pipeline/reporter.h"
#include "util/interrupt.h"
#include "util/test_pause.h"
#include "util/thread_pool.h"

namespace moss {
namespace {

void report_drawn_seed(const Reporter& rep, uint64_t seed, const std::string& where) {
  const std::string text = "seed: " + std::to_string(seed) + " (drawn at random" + where + ")";
  rep.always(text, {{"event", "info"}, {"message", text}, {"seed", seed}, {"drawn", true}});
}

// Every file the images will write, named for messages by its flag (and image, in a batch).
std::vector<OutputPath> output_paths(const std::vector<GenerationRequest>& images) {
  std::vector<OutputPath> out;
  for (size_t i = 0; i < images.size(); ++i) {
    const std::string image = images.size() > 1 ? " (image " + std::to_string(i + 1) + ")" : "";
    const GenerationRequest& r = images[i];
    const uint64_t w = uint64_t(r.width), h = uint64_t(r.height);
    // Upper bounds of the sizes (for the free-space check): a PNG no smaller than its raw rows
    // (a filter byte a row; zlib's stored blocks add 5 bytes in 16 KiB) and its record (the
    // prompts, JSON-escaped, and the settings); the latent as float32 npy, 2 bytes a pixel.
    const uint64_t rows = h * (w * 3 + 1);
    const uint64_t png = rows + rows / 16000 * 5 + 6 * (r.prompt.size() + r.negative.size()) + 64 * 1024;
    if (!r.output_png.empty()) out.push_back({r.output_png, "-o" + image, png});
    if (!r.latent_out.empty()) out.push_back({r.latent_out, "--latent-out" + image, w * h * 2 + 4096});
  }
  return out;
}

// What the model cannot run, refused before any compute and named by where the request came from:
// a jobs line as FILE:LINE and its field ("j.jsonl:3: skip_layers 22: block 22 does not exist
// ..."), the command line by its flag, or as the default when the flag was not given.
void check_with_model(const Engine& engine, const GenerationRequest& r, const RunOptions& o,
                      const std::vector<std::string>& origins, size_t i) {
  if (origins.empty()) return engine.check(r, o.given.count(RequestField::SkipLayers) > 0);
  try {
    engine.check(r);
  } catch (const Error& e) {
    throw Error(e.code(), origins[i] + ": " + request_error(e).what());
  }
}

}  // namespace

int run_generation(const RunOptions& o) {
  const auto t_start = std::chrono::steady_clock::now();
  Reporter rep(o.quiet, o.progress_json ? ProgressFormat::Json : ProgressFormat::Text);
  install_interrupt_handlers();
  install_mapping_fault_handler();
  // Printed before anything can fail, so even an interrupted run can be repeated: the seed of
  // the first image (a batch's images take seed, seed+1, ...). A jobs file's lines bring their
  // own seeds; those drawn are printed once the file is read.
  if (o.seed_drawn && o.jobs_file.empty()) report_drawn_seed(rep, o.seed, "");
  test_pause("start");

  // Everything that can be refused is refused before any compute: every image's request and
  // files, then (with the model open) what the model cannot run.
  const HostThreads threads = host_threads_from_env();  // a bad MOSSINFER_THREADS: exit 2, on any backend
  if (!threads.note.empty()) rep.warning("%s", threads.note.c_str());
  std::vector<std::string> origins;  // a jobs file's images: "FILE:LINE"
  const std::vector<GenerationRequest> images = o.jobs_file.empty() ? batch_requests(o) : read_jobs_file(o, &origins);
  if (!o.jobs_file.empty())
    for (size_t i = 0; i < images.size(); ++i)
      if (images[i].seed_drawn) report_drawn_seed(rep, images[i].seed, "; image " + std::to_string(i + 1));
  check_output_paths(output_paths(images));
  EngineSettings settings;
  settings.model = o.model;
  settings.vram_budget_gib = o.vram_budget_gib;
  settings.keep_loaded = images.size() > 1;
  // One engine per --device entry (no more than there are images); the images are spread over
  // them, each keeping the name and seed it has with one engine.
  std::vector<int> devices = engine_devices(o.devices);
  if (devices.size() > images.size()) devices.resize(images.size());
  EnginePool pool(settings, devices, rep);
  test_pause("model");
  check_interrupted();
  for (size_t i = 0; i < images.size(); ++i) check_with_model(pool.engine(0), images[i], o, origins, i);
  for (const std::string& d : replay_file_differences(o.replay, pool.engine(0).model_files())) rep.warning("%s", d.c_str());

  // Each image's outputs are committed together when it is finished (Engine::generate, through
  // io/output_files.h): a stopped or failed image leaves none of its files; the images of a
  // batch finished before it stay (with several engines: the ones finished before the first
  // failure; the others stop at their image's end).
  std::vector<std::vector<std::string>> image_paths(images.size());
  pool.spread(images.size(), [&](size_t engine, size_t i) {
    if (images.size() > 1) {
      std::string text = "image " + std::to_string(i + 1) + "/" + std::to_string(images.size());
      nlohmann::ordered_json event = {{"event", "stage"}, {"stage", "image"}, {"image", i + 1}, {"images", images.size()}};
      if (pool.size() > 1) {
        text += " (device " + device_label(pool.device(engine)) + ")";
        event["device"] = device_label(pool.device(engine));
      }
      rep.event(text, event);
    }
    image_paths[i] = pool.engine(engine).generate(images[i], false).paths;
  });
  std::vector<std::string> paths;
  std::vector<uint64_t> seeds;
  for (size_t i = 0; i < images.size(); ++i) {
    paths.insert(paths.end(), image_paths[i].begin(), image_paths[i].end());
    seeds.push_back(images[i].seed);
  }
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  char text[160];
  std::snprintf(text, sizeof text, "batch: %zu images in %.3f s, %.3f s per image", images.size(), total,
                total / double(images.size()));
  if (images.size() > 1 || rep.format() == ProgressFormat::Json)
    rep.event(text, {{"event", "done"}, {"images", images.size()}, {"seeds", seeds}, {"paths", paths},
                     {"seconds", total}});
  return 0;
}

}  // namespace moss
