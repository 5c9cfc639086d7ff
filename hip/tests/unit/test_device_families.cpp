// The architecture table behind --list-devices (runtime/device_families.h): every release
// target is supported and named with its marketing family, every other architecture is refused
// with its family and a reason, and the table agrees with the release's target list.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "runtime/device_families.h"

using namespace moss;

namespace {

std::vector<std::string> release_targets() {
  std::ifstream f(std::string(MOSSINFER_TEST_DATA) + "/../../amd_targets.txt");
  std::vector<std::string> out;
  for (std::string a; f >> a;) out.push_back(a);
  return out;
}

}  // namespace

TEST(DeviceFamilies, TheReleaseTargetsAreTheSupportedTable) {
  const std::vector<std::string> targets = release_targets();
  ASSERT_EQ(targets.size(), 10u) << "hip/amd_targets.txt not found or changed";
  EXPECT_EQ(targets, supported_amd_archs());
}

TEST(DeviceFamilies, EverySupportedTargetHasAFamilyWithProducts) {
  for (const std::string& arch : supported_amd_archs()) {
    const ArchFamily f = arch_family(arch);
    EXPECT_TRUE(f.supported) << arch;
    EXPECT_TRUE(f.reason.empty()) << arch;
    const std::string generation = arch.rfind("gfx12", 0) == 0 ? "RDNA4" : arch.rfind("gfx115", 0) == 0 ? "RDNA3.5" : "RDNA3";
    EXPECT_EQ(f.family.rfind(generation + " ", 0), 0u) << arch << ": " << f.family;
    EXPECT_NE(f.family.find("Radeon"), std::string::npos) << arch << ": " << f.family;
  }
}

TEST(DeviceFamilies, NamesTheCardsPeopleLookFor) {
  const std::pair<const char*, const char*> cases[] = {
      {"gfx1100", "RX 7900 XTX"}, {"gfx1101", "RX 7800 XT"}, {"gfx1101", "7700 XT"}, {"gfx1101", "PRO W7700"},
      {"gfx1102", "RX 7600"},     {"gfx1102", "PRO W7600"},  {"gfx1103", "780M"},     {"gfx1150", "890M"},
      {"gfx1151", "8060S"},       {"gfx1151", "Strix Halo"}, {"gfx1200", "RX 9060 XT"}, {"gfx1201", "RX 9070 XT"},
  };
  for (const auto& [arch, product] : cases)
    EXPECT_NE(arch_family(arch).family.find(product), std::string::npos) << arch << " should name " << product;
}

TEST(DeviceFamilies, OtherArchitecturesAreRefusedWithFamilyAndReason) {
  const struct {
    const char* arch;
    const char* family;
    const char* reason;
  } cases[] = {
      {"gfx1030", "RDNA2", "no bf16 matrix instructions"}, {"gfx1031", "RDNA2", "no bf16 matrix instructions"},
      {"gfx1036", "RDNA2", "no bf16 matrix instructions"}, {"gfx1010", "RDNA1", "no bf16 matrix instructions"},
      {"gfx906", "GCN5", "no bf16 matrix instructions"},   {"gfx90c", "GCN5 APU", "no bf16 matrix instructions"},
      {"gfx803", "GCN3/4", "no bf16 matrix instructions"}, {"gfx908", "CDNA1", "wave64"},
      {"gfx90a", "CDNA2", "wave64"},                       {"gfx942", "CDNA3", "MFMA"},
      {"gfx950", "CDNA4", "MFMA"},                         {"gfx1154", "RDNA3", "not one of the RDNA3 targets"},
      {"gfx1250", "RDNA4", "not one of the RDNA4 targets"}, {"sm_80", "NVIDIA", "Hopper"},
  };
  for (const auto& c : cases) {
    const ArchFamily f = arch_family(c.arch);
    EXPECT_FALSE(f.supported) << c.arch;
    EXPECT_EQ(f.family.rfind(c.family, 0), 0u) << c.arch << ": " << f.family;
    EXPECT_NE(f.reason.find(c.reason), std::string::npos) << c.arch << ": " << f.reason;
  }
}

TEST(DeviceFamilies, UnknownNamesAreRefusedNotGuessed) {
  for (const char* arch : {"", "gfx", "gfx11", "x86_64", "GFX1100", "gfx1100:xnack-", "gfx11-generic"}) {
    const ArchFamily f = arch_family(arch);
    EXPECT_FALSE(f.supported) << arch;
    EXPECT_FALSE(f.reason.empty()) << arch;
  }
  EXPECT_TRUE(arch_family("sm_90").supported);
}

TEST(DeviceFamilies, Int8MatricesAreFasterOnRdna4AndHopperOnly) {
  for (const std::string& arch : supported_amd_archs())
    EXPECT_EQ(int8_matrix_faster(arch), arch.rfind("gfx12", 0) == 0) << arch;
  EXPECT_TRUE(int8_matrix_faster("sm_90"));
  for (const char* arch : {"gfx1250", "gfx942", "sm_80", "", "gfx12"}) EXPECT_FALSE(int8_matrix_faster(arch)) << arch;
}
