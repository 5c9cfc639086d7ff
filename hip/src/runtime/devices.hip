// Device discovery for the HIP builds (AMD through ROCm, NVIDIA through the shim).
#include "runtime/devices.h"

#include <algorithm>

#include "runtime/amdgpu_sysfs.h"
#include "runtime/device_families.h"
#include "runtime/portability.h"

namespace moss {
namespace {

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

std::string join(const std::vector<std::string>& list) {
  std::string out;
  for (const std::string& s : list) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// The matrix leaf the kernels use on this architecture (kernels/matrix_leaf.h).
std::string matrix_leaf(const std::string& arch) {
  if (arch.rfind("gfx11", 0) == 0) return "v_wmma_f32_16x16x16_bf16 (gfx11 layout)";
  if (arch.rfind("gfx12", 0) == 0) return "v_wmma_f32_16x16x16_bf16 (gfx12 layout)";
  // NVIDIA: the portable leaf, and the Hopper warpgroup instruction of kernels/gemm_hopper.h and
  // kernels/attention_hopper.h.
  return "2x mma.sync.m16n8k16 bf16; large GEMMs and DiT attention: wgmma bf16 (sm_90a)";
}

// The `kernels:` line of a run and of --list-devices: the kernel families of hip/src/kernels that
// are built in, and the matrix leaf under them. Add a family here when its kernels land.
std::vector<std::string> kernel_families(const std::string& arch) {
  return {"gemm", "linear_f32", "flash attention", "rows (norms, modulation, gates, RoPE, gathers)",
          "gated deltanet (chunked)", "text rows (conv1d, gates, norms)", "conv2d (implicit GEMM)",
          "group norm", "vae layout", "matrix leaf: " + matrix_leaf(arch)};
}

// Empty when usable, otherwise the reason it is not. The product's architectures are
// runtime/device_families.cpp's table; the NVIDIA build exists to validate and measure the kernels
// on the H200.
std::string unsupported_reason(const std::string& arch, const ArchFamily& family, int wave_size) {
  const std::vector<std::string> built = built_device_archs();
  if (!family.supported) return family.reason;
  if (!contains(built, arch)) return "no " + arch + " code in this binary (built for: " + join(built) + ")";
  if (wave_size != kWaveSize)
    return "wave size " + std::to_string(wave_size) + ", the kernels need " + std::to_string(kWaveSize);
  return "";
}

DeviceInfo describe(int index) {
  DeviceInfo info;
  info.index = index;
  hipDeviceProp_t prop{};
  const hipError_t err = hipGetDeviceProperties(&prop, index);
  if (err != hipSuccess) {
    info.name = "(unknown)";
    info.reason = std::string("cannot query the device: ") + hipGetErrorString(err);
    (void)hipGetLastError();
    return info;
  }
  info.name = prop.name;
  info.arch = device_arch(prop);
  info.total_bytes = prop.totalGlobalMem;
  // Free memory needs the device current (it creates the runtime's context on it).
  size_t free_bytes = 0, total_bytes = 0;
  if (hipSetDevice(index) == hipSuccess && hipMemGetInfo(&free_bytes, &total_bytes) == hipSuccess) {
    info.free_bytes = free_bytes;
    info.total_bytes = total_bytes;
  }
  (void)hipGetLastError();
  const ArchFamily family = arch_family(info.arch);
  info.family = family.family;
  info.integrated = prop.integrated != 0;
  if (info.integrated && !kPlatformNvidia) {
    const AmdgpuPools pools = read_amdgpu_pools(prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
    info.carveout_bytes = pools.vram_bytes;
    info.gtt_bytes = pools.gtt_bytes;
  }
  info.reason = unsupported_reason(info.arch, family, prop.warpSize);
  info.supported = info.reason.empty();
  if (info.supported) info.kernels = kernel_families(info.arch);
  return info;
}

}  // namespace

std::vector<DeviceInfo> list_devices() {
  std::vector<DeviceInfo> devices;
  try {
    int count = 0;
    if (hipGetDeviceCount(&count) != hipSuccess) {  // no driver, no runtime or no GPU
      (void)hipGetLastError();
      return {};
    }
    int current = 0;
    const bool have_current = hipGetDevice(&current) == hipSuccess;
    for (int i = 0; i < count; ++i) devices.push_back(describe(i));
    if (have_current) (void)hipSetDevice(current);
    (void)hipGetLastError();
  } catch (...) {  // allocation failure while describing: report what was gathered
  }
  return devices;
}

std::string built_architectures() { return join(built_device_archs()); }

}  // namespace moss
