#include "server/metrics.h"

#include <cstdio>

#include "pipeline/record.h"
#include "runtime/devices.h"

namespace moss {
namespace {

// Label values are quoted: a backslash, a quote and a newline are escaped (the format's rule).
std::string quoted(const std::string& v) {
  std::string q = "\"";
  for (char c : v) {
    if (c == '\\' || c == '"') q += '\\';
    if (c == '\n') {
      q += "\\n";
      continue;
    }
    q += c;
  }
  return q + "\"";
}

std::string number(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void sample(std::string& out, const std::string& name, const std::string& labels, double v) {
  out += name + (labels.empty() ? "" : "{" + labels + "}") + " " + number(v) + "\n";
}

// Denoise steps: a tiny model on a CPU to a large image on a GPU.
const std::vector<double> kStepBounds = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
const std::vector<double> kStageBounds = {0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
const char* const kStages[] = {"text_encoder", "dit_load", "denoise", "vae", "total"};

}  // namespace

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += v;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& labels) const {
  const std::string prefix = labels.empty() ? "" : labels + ",";
  unsigned long long cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    sample(out, name + "_bucket", prefix + "le=" + quoted(i < bounds_.size() ? number(bounds_[i]) : "+Inf"),
           double(cumulative));
  }
  sample(out, name + "_sum", labels, sum_);
  sample(out, name + "_count", labels, double(count_));
}

Metrics::Metrics(std::vector<std::string> devices)
    : devices_(std::move(devices)), images_(devices_.size()), memory_(devices_.size()), step_seconds_(kStepBounds) {
  for (const char* stage : kStages) stage_seconds_.emplace(stage, Histogram(kStageBounds));
}

void Metrics::count_request(const std::string& route, int status) {
  std::lock_guard<std::mutex> lock(m_);
  ++requests_[{route, status}];
}

void Metrics::count_image(size_t engine) {
  std::lock_guard<std::mutex> lock(m_);
  ++images_[engine];
}

void Metrics::observe_step(double seconds) {
  std::lock_guard<std::mutex> lock(m_);
  step_seconds_.observe(seconds);
}

void Metrics::observe_stages(const StageTimes& t) {
  std::lock_guard<std::mutex> lock(m_);
  stage_seconds_.at("text_encoder").observe(t.text_encoder_s);
  stage_seconds_.at("dit_load").observe(t.dit_load_s);
  stage_seconds_.at("denoise").observe(t.denoise_s);
  stage_seconds_.at("vae").observe(t.vae_s);
  stage_seconds_.at("total").observe(t.total_s);
}

void Metrics::set_device_memory(size_t engine, const DeviceMemoryUse& m) {
  std::lock_guard<std::mutex> lock(m_);
  memory_[engine] = m;
}

std::string Metrics::render(const Now& now) const {
  std::lock_guard<std::mutex> lock(m_);
  std::string out;
  auto device = [&](size_t e) { return "device=" + quoted(devices_[e]); };

  header(out, "moss_build_info", "gauge", "The program's version and the architectures it carries device code for.");
  sample(out, "moss_build_info", "version=" + quoted(engine_version()) + ",architectures=" + quoted(built_architectures()),
         1);
  header(out, "moss_http_requests_total", "counter", "HTTP requests answered, by route and status.");
  for (const auto& [key, n] : requests_)
    sample(out, "moss_http_requests_total", "route=" + quoted(key.first) + ",status=" + quoted(std::to_string(key.second)),
           double(n));
  header(out, "moss_images_total", "counter", "Images made, by device.");
  for (size_t e = 0; e < devices_.size(); ++e) sample(out, "moss_images_total", device(e), double(images_[e]));
  header(out, "moss_queue_depth", "gauge", "Requests waiting for an engine.");
  sample(out, "moss_queue_depth", "", double(now.queue_depth));
  header(out, "moss_queue_capacity", "gauge", "Requests that may wait (--queue); more are answered 503.");
  sample(out, "moss_queue_capacity", "", double(now.queue_capacity));
  header(out, "moss_jobs_in_flight", "gauge", "Requests running, by device (each device runs one at a time).");
  for (size_t e = 0; e < devices_.size(); ++e)
    sample(out, "moss_jobs_in_flight", device(e), e < now.in_flight.size() ? double(now.in_flight[e]) : 0.0);
  header(out, "moss_ready", "gauge", "1 when GET /ready answers 200.");
  sample(out, "moss_ready", "", now.ready ? 1 : 0);
  header(out, "moss_draining", "gauge", "1 after SIGTERM: no new requests, the queued ones finish.");
  sample(out, "moss_draining", "", now.draining ? 1 : 0);
  // Only engines with device memory (not the host backend), once their first image chose it.
  header(out, "moss_device_memory_used_bytes", "gauge",
         "Device memory in use by every program on the device, after its last image.");
  for (size_t e = 0; e < devices_.size(); ++e)
    if (memory_[e].total_bytes) sample(out, "moss_device_memory_used_bytes", device(e), double(memory_[e].used_bytes));
  header(out, "moss_device_memory_total_bytes", "gauge", "Device memory of the device.");
  for (size_t e = 0; e < devices_.size(); ++e)
    if (memory_[e].total_bytes) sample(out, "moss_device_memory_total_bytes", device(e), double(memory_[e].total_bytes));
  header(out, "moss_denoise_step_seconds", "histogram", "Time of one denoise step (both guidance rows).");
  step_seconds_.render(out, "moss_denoise_step_seconds", "");
  header(out, "moss_stage_seconds", "histogram", "Time of an image's stages, and its total.");
  for (const char* stage : kStages) stage_seconds_.at(stage).render(out, "moss_stage_seconds", "stage=" + quoted(stage));
  return out;
}

}  // namespace moss
