// The two environment variables that pick what a run executes, read by one parser each:
// MOSSINFER_BACKEND ("hip", "host" or unset: the HIP device) and MOSSINFER_KERNELS ("native",
// "portable" or unset: native; only NVIDIA builds have both configurations). An unknown value is
// refused (exit 2) naming the variable and the values it takes, on every backend and build: a
// misspelt value is never silently ignored, even where the variable has no effect (the kernel
// path on the host backend).
#pragma once

namespace moss {

bool host_backend_requested();      // MOSSINFER_BACKEND=host
bool portable_kernels_requested();  // MOSSINFER_KERNELS=portable

// Both variables checked, before any work: main calls it for every command that runs something.
void check_backend_environment();

}  // namespace moss
