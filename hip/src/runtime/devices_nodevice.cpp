// HIP_TARGET=host: a build without device code sees no devices.
#include "runtime/devices.h"

namespace moss {

std::vector<DeviceInfo> list_devices() { return {}; }

std::string built_architectures() { return "none (host backend only)"; }

}  // namespace moss
