// One engine per device (README "Several devices"): the CLI's batches and jobs files and the
// server spread their images over them. Each engine keeps its own memory plan and is driven from
// one thread of its own (a HIP device is bound to the thread that uses it); an image's pixels do
// not depend on which engine made it (the same kernels, the same order of operations).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/engine.h"
#include "runtime/devices.h"

namespace moss {

// The devices of --device: the list as given; `all`: every supported HIP device (exit 1 when
// there is none); nothing given: {-1}, the first supported device. On the host backend
// (MOSSINFER_BACKEND=host) the indexes name no hardware: a list gives that many host engines
// sharing the host's threads (how the tests run several engines on one machine), `all` one.
std::vector<int> engine_devices(const DeviceList& list);

// How metrics and logs name an engine's device: "0", "1", ...; "default" for -1.
std::string device_label(int device);

class EnginePool {
 public:
  // Opens the model once per device (exit 2 / 1 as Engine does).
  EnginePool(const EngineSettings& settings, const std::vector<int>& devices, const Reporter& rep);
  size_t size() const { return engines_.size(); }
  Engine& engine(size_t i) { return *engines_[i]; }
  int device(size_t i) const { return devices_[i]; }

  // work(engine, item) for every item in [0, count): each engine, on a thread of its own (the
  // calling thread when there is one engine), takes the next item when it is free. The first
  // exception stops the handing out; it is rethrown once every engine has stopped.
  void spread(size_t count, const std::function<void(size_t engine, size_t item)>& work);

 private:
  std::vector<int> devices_;
  std::vector<std::unique_ptr<Engine>> engines_;
};

}  // namespace moss
