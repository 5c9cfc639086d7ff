// The running requests of the A1111 routes: their images on an engine, what GET
// /sdapi/v1/progress says about them, and POST /sdapi/v1/interrupt.
#include <algorithm>
#include <chrono>
#include <ctime>

#include "server/a1111_routes.h"
#include "util/cancel.h"

namespace moss {
namespace {

using json = nlohmann::json;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string job_timestamp() {
  char b[32];
  std::time_t t = std::time(nullptr);
  std::tm tm = {};
  localtime_r(&t, &tm);
  std::strftime(b, sizeof b, "%Y%m%d%H%M%S", &tm);
  return b;
}

// A1111 keeps the fraction of an active job at 0.01 or more (a client's bar shows it started).
constexpr double kActiveProgressFloor = 0.01;

// The request's share done: finished images, and the current one's denoise (counted done once
// it decodes: the decode has no steps to show). Never goes back within a request.
double fraction_done(const JobProgress& p) {
  if (p.images <= 0) return kActiveProgressFloor;
  const double step_share = p.steps > 0 ? double(p.step) / double(p.steps) : 0.0;
  return std::clamp((double(p.image) + step_share) / double(p.images), kActiveProgressFloor, 1.0);
}

}  // namespace

void A1111Routes::make_images(Job& job, size_t engine, const std::vector<GenerationRequest>& images,
                              std::vector<GeneratedImage>& made) {
  auto update = [&](const std::function<void(JobProgress&)>& change) {
    std::lock_guard<std::mutex> lock(job.progress_mutex);
    const double before = fraction_done(job.progress);
    change(job.progress);
    // The time the whole request takes, estimated when its share done moves; /progress counts
    // down from it, so the eta shrinks between steps instead of growing with the elapsed time.
    const double fraction = fraction_done(job.progress);
    if (fraction != before && fraction > kActiveProgressFloor)
      job.progress.estimated_total_s = (now_s() - job.progress.started) / fraction;
  };
  update([&](JobProgress& p) {
    p = JobProgress{};
    p.images = int(images.size());
    p.stage = "starting";
    p.started = now_s();
    p.timestamp = job_timestamp();
  });
  Engine& e = pool_.engine(engine);
  // Within a step too (util/cancel.h): the DiT's blocks and the host backend's loops see this
  // flag, raised by an interrupt or a client that went away.
  CancelFlag cancel;
  CancelScope cancel_scope(&cancel);
  CancelPoller poll_cancel(cancel, [&] { return job.interrupted || job.cancelled || job.client_gone(); });
  // An interrupt ends the current image's denoise (the engine decodes what it has) and skips
  // the images after it, as A1111 does.
  for (size_t i = 0; i < images.size() && !job.interrupted; ++i) {
    update([&](JobProgress& p) {
      p.image = int(i);
      p.step = p.steps = 0;
    });
    ProgressHook hook = [&](const ProgressEvent& ev) {
      update([&](JobProgress& p) {
        p.stage = ev.stage;
        if (ev.stage == "denoise") {
          p.step = ev.step;
          p.steps = ev.steps;
        } else if (ev.stage == "vae") {
          p.step = p.steps;
        }
      });
      if (ev.stage == "denoise" && ev.step > 0) metrics_.observe_step(ev.seconds);
      if (job.cancelled) throw JobCancelled{};
    };
    made.push_back(e.generate(images[i], true, hook, &job.interrupted));
    metrics_.count_image(engine);
    metrics_.observe_stages(made.back().record.times);
    metrics_.set_device_memory(engine, e.device_memory());  // on the engine's thread: its device
  }
}

void A1111Routes::progress(httplib::Response& res) const {
  const std::shared_ptr<const Job> job = queue_.oldest_running();
  JobProgress p;
  bool interrupted = false;
  if (job) {
    std::lock_guard<std::mutex> lock(job->progress_mutex);
    p = job->progress;
    interrupted = job->interrupted;
  }
  const bool active = job && p.images > 0;
  const double fraction = active ? fraction_done(p) : 0.0;
  const double eta = active ? std::max(0.0, p.estimated_total_s - (now_s() - p.started)) : 0.0;
  const json body = {
      {"progress", fraction},
      {"eta_relative", eta},
      {"state",
       {{"skipped", false}, {"interrupted", interrupted}, {"job", active ? "txt2img" : ""},
        // A1111: job_count is the running request's image count, job_no the current one (below it).
        {"job_count", active ? p.images : 0}, {"job_timestamp", active ? p.timestamp : "0"},
        {"job_no", active ? std::min(p.image, p.images - 1) : 0}, {"sampling_step", p.step},
        {"sampling_steps", p.steps}}},
      // No live previews: the latents are decoded only at the end (README "The server").
      {"current_image", nullptr},
      {"textinfo", active ? json(p.stage) : json(nullptr)},
      // This server's own field (README "The server"): the requests waiting in the queue for an
      // engine, not counting the running ones (job_count is the running request's images).
      {"requests_waiting", queue_.waiting()}};
  res.status = 200;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void A1111Routes::interrupt(httplib::Response& res) {
  const int n = queue_.interrupt_running();
  if (n) rep_.line("interrupt: %d running request%s end%s at the next step, with the image so far", n,
                   n == 1 ? "" : "s", n == 1 ? "s" : "");
  res.status = 200;
  res.set_content("{}", "application/json");
}

}  // namespace moss
