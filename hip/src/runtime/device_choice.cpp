#include "runtime/device_choice.h"

#include <string>
#include <vector>

#include "util/error.h"

namespace moss {

DeviceInfo choose_device(int device, bool host_hint) {
  const std::string hint = host_hint ? std::string("; ") + kHostBackendHint : "";
  const std::vector<DeviceInfo> devices = list_devices();
  const DeviceInfo* chosen = nullptr;
  for (const DeviceInfo& d : devices) {
    if (device >= 0 ? d.index == device : d.supported) {
      chosen = &d;
      break;
    }
  }
  if (device >= 0 && !chosen)
    throw usage_error("--device " + std::to_string(device) + ": no such HIP device (" +
                      std::to_string(devices.size()) + " found; see --list-devices)");
  if (devices.empty())
    throw failure("no supported device: no HIP devices found (this build: " + built_architectures() +
                  "; see --list-devices)" + hint);
  if (chosen && !chosen->supported)
    throw usage_error("--device " + std::to_string(chosen->index) + " (" + chosen->name + ", " + chosen->arch +
                      "): not supported: " + chosen->reason);
  if (!chosen) throw failure("no supported device: no supported HIP device found (see --list-devices)" + hint);
  return *chosen;
}

}  // namespace moss
