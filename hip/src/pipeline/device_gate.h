// A check the program makes on a HIP device before the first generation there (the engine calls
// it when it picks the device; the host backend never does). moss-infer-hip installs the kernel
// self-test's (diagnostics/self_test.h); developer tools and tests install none, so their runs
// are not gated. It throws to refuse the device.
#pragma once
#include "pipeline/reporter.h"
#include "runtime/devices.h"

namespace moss {

using DeviceGate = void (*)(const DeviceInfo& device, const Reporter& rep);
void set_device_gate(DeviceGate gate);
void run_device_gate(const DeviceInfo& device, const Reporter& rep);  // nothing when none is set

}  // namespace moss
