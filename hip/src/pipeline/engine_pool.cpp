#include "pipeline/engine_pool.h"

#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include "runtime/device_choice.h"
#include "util/error.h"

namespace moss {

std::vector<int> engine_devices(const DeviceList& list) {
  if (!list.all) return list.indexes.empty() ? std::vector<int>{-1} : list.indexes;
  if (host_backend_chosen()) return {-1};
  std::vector<int> supported;
  const std::vector<DeviceInfo> devices = list_devices();
  for (const DeviceInfo& d : devices)
    if (d.supported) supported.push_back(d.index);
  if (supported.empty())
    throw failure(std::string(devices.empty() ? "--device all: no HIP devices found (see --list-devices); "
                                              : "--device all: no supported HIP device found (see --list-devices); ") +
                  kHostBackendHint);
  return supported;
}

std::string device_label(int device) { return device < 0 ? "default" : std::to_string(device); }

EnginePool::EnginePool(const EngineSettings& settings, const std::vector<int>& devices, const Reporter& rep)
    : devices_(devices) {
  for (int d : devices) {
    EngineSettings s = settings;
    s.device = d;
    if (devices.size() > 1) s.device_label = device_label(d);
    engines_.push_back(std::make_unique<Engine>(s, rep));
  }
}

void EnginePool::spread(size_t count, const std::function<void(size_t, size_t)>& work) {
  if (engines_.size() == 1) {
    for (size_t i = 0; i < count; ++i) work(0, i);
    return;
  }
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first;
  std::mutex first_mutex;
  auto drive = [&](size_t engine) {
    try {
      for (size_t i; !failed && (i = next++) < count;) work(engine, i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(first_mutex);
      if (!first) first = std::current_exception();
      failed = true;
    }
  };
  std::vector<std::thread> threads;
  for (size_t e = 0; e < engines_.size(); ++e) threads.emplace_back(drive, e);
  for (std::thread& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace moss
