#include "app/run_generation.h"

#include <chrono>
#include <vector>

#include "cli/batch.h"
#include "frontend/jobs_file.h"
#include "io/files.h"
#include "io/mapping_faults.h"
#include "pipeline/engine.h"
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
  const std::vector<GenerationRequest> images = o.jobs_file.empty() ? batch_requests(o) : read_jobs_file(o);
  if (!o.jobs_file.empty())
    for (size_t i = 0; i < images.size(); ++i)
      if (images[i].seed_drawn) report_drawn_seed(rep, images[i].seed, "; image " + std::to_string(i + 1));
  check_distinct_outputs(images);
  for (const GenerationRequest& r : images) {
    if (!r.output_png.empty()) check_writable_output(r.output_png, "-o");
    if (!r.latent_out.empty()) check_writable_output(r.latent_out, "--latent-out");
  }
  EngineSettings settings;
  settings.model = o.model;
  settings.vram_budget_gib = o.vram_budget_gib;
  settings.device = o.device;
  settings.keep_loaded = images.size() > 1;
  Engine engine(settings, rep);
  test_pause("model");
  check_interrupted();
  for (const GenerationRequest& r : images) engine.check(r);

  // Each image's outputs are committed together when it is finished (Engine::generate, through
  // io/output_files.h): a stopped or failed image leaves none of its files; the images of a
  // batch finished before it stay.
  std::vector<std::string> paths;
  std::vector<uint64_t> seeds;
  for (size_t i = 0; i < images.size(); ++i) {
    if (images.size() > 1)
      rep.event("image " + std::to_string(i + 1) + "/" + std::to_string(images.size()),
                {{"event", "stage"}, {"stage", "image"}, {"image", i + 1}, {"images", images.size()}});
    GeneratedImage done = engine.generate(images[i], false);
    paths.insert(paths.end(), done.paths.begin(), done.paths.end());
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
