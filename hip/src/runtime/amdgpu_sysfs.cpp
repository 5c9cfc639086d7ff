#include "runtime/amdgpu_sysfs.h"

#include <cstdio>
#include <fstream>
#include <string>

namespace moss {

// A decimal byte count alone on its line; anything else (a sign, text, an overflow) is unknown.
static size_t read_bytes(const std::string& path) {
  std::ifstream f(path);
  std::string word;
  if (!(f >> word) || word.empty() || word.size() > 19 || word.find_first_not_of("0123456789") != std::string::npos)
    return 0;
  return size_t(std::stoull(word));
}

AmdgpuPools read_amdgpu_pools(int pci_domain, int pci_bus, int pci_device, const std::string& sysfs_root) {
  char dev[64];
  std::snprintf(dev, sizeof dev, "/bus/pci/devices/%04x:%02x:%02x.0/", unsigned(pci_domain) & 0xffffu,
                unsigned(pci_bus) & 0xffu, unsigned(pci_device) & 0x1fu);
  const std::string base = sysfs_root + dev;
  return {read_bytes(base + "mem_info_vram_total"), read_bytes(base + "mem_info_gtt_total")};
}

}  // namespace moss
