// Which HIP device a run uses: --device N, else the first supported one. One rule and one set of
// messages for generation (pipeline/engine.cpp), `self-test` and `bench` (diagnostics/).
#pragma once
#include "runtime/devices.h"

namespace moss {

// Throws usage_error (exit 2) for an index the runtime does not list or a device this binary
// does not support, failure (exit 1) when there is no supported device at all.
DeviceInfo choose_device(int device);

}  // namespace moss
