// What the amdgpu driver reports for a GPU's memory pools in sysfs: the VRAM (on an APU, the
// BIOS carve-out) and the GTT (system memory the GPU may map: amdgpu.gttsize, ttm pages_limit).
// The memory planner reads both on an APU (pipeline/planner.h, DeviceMemory), where the HIP
// runtime's own figure may be the carve-out alone. Plain C++: no HIP header.
#pragma once

#include <cstddef>
#include <string>

namespace moss {

struct AmdgpuPools {
  size_t vram_bytes = 0;  // mem_info_vram_total; 0 when unknown
  size_t gtt_bytes = 0;   // mem_info_gtt_total; 0 when unknown
};

// The pools of the PCI device DOMAIN:BUS:DEVICE.0, read under `sysfs_root` (the tests point it at
// a folder of their own). Files that are missing or unreadable leave their figure 0.
AmdgpuPools read_amdgpu_pools(int pci_domain, int pci_bus, int pci_device, const std::string& sysfs_root = "/sys");

}  // namespace moss
