#include "pipeline/device_gate.h"

namespace moss {
namespace {
DeviceGate installed = nullptr;
}

void set_device_gate(DeviceGate gate) { installed = gate; }

void run_device_gate(const DeviceInfo& device, const Reporter& rep) {
  if (installed) installed(device, rep);
}

}  // namespace moss
