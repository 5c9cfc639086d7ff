// runtime/amdgpu_sysfs.h: the carve-out and GTT read from a sysfs tree laid out as amdgpu's, and
// missing or broken files read as unknown (0), never as a guess.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "runtime/amdgpu_sysfs.h"

using namespace moss;
namespace fs = std::filesystem;

namespace {

struct FakeSysfs {
  fs::path root = fs::temp_directory_path() / ("moss-sysfs-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                                               "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::path device(const char* address) {
    const fs::path d = root / "bus/pci/devices" / address;
    fs::create_directories(d);
    return d;
  }
  ~FakeSysfs() { fs::remove_all(root); }
};

void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

}  // namespace

TEST(AmdgpuSysfs, ReadsThePoolsOfThePciDevice) {
  FakeSysfs sys;
  const fs::path d = sys.device("0000:c3:00.0");
  write(d / "mem_info_vram_total", "536870912\n");
  write(d / "mem_info_gtt_total", "137438953472\n");
  const AmdgpuPools p = read_amdgpu_pools(0, 0xc3, 0, sys.root.string());
  EXPECT_EQ(p.vram_bytes, size_t(512) << 20);
  EXPECT_EQ(p.gtt_bytes, size_t(128) << 30);
  // Another device's address reads nothing.
  const AmdgpuPools other = read_amdgpu_pools(0, 0x03, 0, sys.root.string());
  EXPECT_EQ(other.vram_bytes, 0u);
  EXPECT_EQ(other.gtt_bytes, 0u);
}

TEST(AmdgpuSysfs, MissingOrBrokenFilesAreUnknown) {
  FakeSysfs sys;
  const fs::path d = sys.device("0001:0a:02.0");
  write(d / "mem_info_vram_total", "not a number");
  AmdgpuPools p = read_amdgpu_pools(1, 0x0a, 2, sys.root.string());
  EXPECT_EQ(p.vram_bytes, 0u);
  EXPECT_EQ(p.gtt_bytes, 0u);  // absent
  write(d / "mem_info_vram_total", "");
  write(d / "mem_info_gtt_total", "-5");
  p = read_amdgpu_pools(1, 0x0a, 2, sys.root.string());
  EXPECT_EQ(p.vram_bytes, 0u);
  EXPECT_EQ(p.gtt_bytes, 0u);
}
