// What GET /metrics reports, in the Prometheus text exposition format (version 0.0.4; README
// "Metrics"): requests by route and status, images made, the queue, each device's state (jobs in
// flight, memory), the denoise step and stage times as histograms, and the build. Counters are
// written from the request and engine threads and read by the scrape, under one mutex.
#pragma once
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/engine.h"

namespace moss {

// A Prometheus histogram: cumulative counts per upper bound, then the sum and the count.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1) {}
  void observe(double v);
  // Appends its _bucket, _sum and _count lines; `labels` (may be empty) come before "le".
  void render(std::string& out, const std::string& name, const std::string& labels) const;

 private:
  std::vector<double> bounds_;
  std::vector<unsigned long long> counts_;  // per bucket, not cumulative; the last is +Inf
  double sum_ = 0;
  unsigned long long count_ = 0;
};

class Metrics {
 public:
  // devices: the label of each engine's device (device_label), in engine order.
  explicit Metrics(std::vector<std::string> devices);

  // route: the path of a route the server has, or "other" (so that clients cannot make labels).
  void count_request(const std::string& route, int status);
  void count_image(size_t engine);
  void observe_step(double seconds);
  void observe_stages(const StageTimes& t);
  void set_device_memory(size_t engine, const DeviceMemoryUse& m);

  // The state the scrape reads from the queue and the server at that moment.
  struct Now {
    size_t queue_depth = 0, queue_capacity = 0;
    std::vector<int> in_flight;  // per engine
    bool ready = false, draining = false;
  };
  std::string render(const Now& now) const;

 private:
  const std::vector<std::string> devices_;
  mutable std::mutex m_;
  std::map<std::pair<std::string, int>, unsigned long long> requests_;
  std::vector<unsigned long long> images_;
  std::vector<DeviceMemoryUse> memory_;
  Histogram step_seconds_;
  std::map<std::string, Histogram> stage_seconds_;
};

}  // namespace moss
