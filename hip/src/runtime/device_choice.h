// Which HIP device a run uses: --device N, else the first supported one. One rule and one set of
// messages for generation (pipeline/engine.cpp), `self-test` and `bench` (diagnostics/).
#pragma once
#include "runtime/devices.h"

namespace moss {

// What a generation can do without a device: said wherever one finds no device (a person
// without a GPU learns here that the host backend exists, and that it is slow).
constexpr const char* kHostBackendHint =
    "MOSSINFER_BACKEND=host runs the host reference backend on the CPU instead (slow: fine for the tiny test "
    "model, hours for a full-size image)";

// Throws usage_error (exit 2) for an index the runtime does not list or a device this binary
// does not support, failure (exit 1) when there is no supported device at all; with
// `host_hint` (a generation, which the host backend can run) that failure names the host backend.
DeviceInfo choose_device(int device, bool host_hint = false);

}  // namespace moss
