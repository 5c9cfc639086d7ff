// The GPUs the runtime sees and whether this build can use them (docs/product.md section 3,
// --list-devices; section 1: the Radeons with bf16 WMMA of runtime/device_families.h on AMD, every
// other GPU listed with its family and the reason). Plain C++: the CLI includes this without any HIP header.
//   HIP builds:        runtime/devices.hip
//   HIP_TARGET=host:   runtime/devices_nodevice.cpp (no devices)
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace moss {

struct DeviceInfo {
  int index = 0;             // HIP device index (--device N)
  std::string name;          // marketing name, e.g. "AMD Radeon RX 9070 XT"
  std::string arch;          // "gfx1201", "sm_90"
  std::string family;        // "RDNA4 (Radeon RX 9070 XT/9070/9070 GRE, AI PRO R9700)" (device_families.h)
  bool integrated = false;   // an APU: its device memory is system memory (hipDeviceProp_t::integrated)
  size_t total_bytes = 0;    // device memory
  size_t free_bytes = 0;     // free now (0 when it could not be queried)
  size_t carveout_bytes = 0; // an APU's VRAM carve-out and GTT, as amdgpu reports them (runtime/amdgpu_sysfs.h);
  size_t gtt_bytes = 0;      //   0 on a card or when unknown
  bool supported = false;    // this binary has kernels for it and will use it
  std::string reason;        // why not, when !supported
  std::vector<std::string> kernels;  // kernel families usable on it (the `kernels:` line)
};

// --device N[,N...] | all: the devices to run one engine each on (README "Several devices").
struct DeviceList {
  std::vector<int> indexes;  // as given, distinct; empty: the first supported device
  bool all = false;          // every supported device
};

// Every device the runtime reports, in index order. Never throws: with no driver, no runtime
// or no GPU the list is empty; a device that cannot be queried is listed as unsupported.
std::vector<DeviceInfo> list_devices();

// The architectures this binary carries device code for, e.g. "gfx1100, gfx1101, ..., gfx1201",
// "sm_90", or "none (host backend only)".
std::string built_architectures();

}  // namespace moss
