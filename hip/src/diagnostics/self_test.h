// `moss-infer-hip self-test [--device N] [--full]` and the gate that runs its quick form once
// before the first generation on a device (README "Self-test and benchmark").
#pragma once
#include <string>
#include <vector>

#include "pipeline/reporter.h"
#include "runtime/devices.h"

namespace moss {

// Exit status: 0 every family passed, 1 a family failed or no supported device, 2 a bad flag.
int self_test_command(const std::vector<std::string>& args);

// The device gate moss-infer-hip installs (pipeline/device_gate.h): the quick self-test, unless
// this binary, device, runtime and kernel path passed it before (remembered under
// $XDG_CACHE_HOME/moss-infer-hip/, else ~/.cache/moss-infer-hip/). A failure throws (exit 1)
// naming the failing family.
void self_test_gate(const DeviceInfo& device, const Reporter& rep);

// The cache folder (XDG_CACHE_HOME when set and absolute, else $HOME/.cache) + "/moss-infer-hip";
// empty when neither is set.
std::string self_test_cache_dir();

}  // namespace moss
