// The environment variables that pick what a run executes, read by one parser each:
// MOSSINFER_BACKEND ("hip", "host" or unset: the HIP device), MOSSINFER_KERNELS ("native",
// "portable" or unset: native; only NVIDIA builds have both configurations) and MOSSINFER_INT8_QK
// ("0", "1" or unset: whether an INT8 DiT's attention takes int8 QKᵀ, docs/attention_int8_qk.md). An unknown value is
// refused (exit 2) naming the variable and the values it takes, on every backend and build: a
// misspelt value is never silently ignored, even where the variable has no effect (the kernel
// path on the host backend).
#pragma once

namespace moss {

bool host_backend_requested();      // MOSSINFER_BACKEND=host
bool portable_kernels_requested();  // MOSSINFER_KERNELS=portable

// MOSSINFER_INT8_QK: "0" never, "1" in every INT8 block (a backend without the ops then refuses
// them by name), unset: where the backend's CoreOps::attention_int8_qk says yes.
enum class Int8QkSetting { Backend, Never, Always };
Int8QkSetting int8_qk_setting();

// Every variable checked, before any work: main calls it for every command that runs something.
void check_backend_environment();

}  // namespace moss
