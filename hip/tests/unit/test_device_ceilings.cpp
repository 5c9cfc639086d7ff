// bench's ceilings come from the card it runs on (issue 50): the table keyed by the device's
// name, each entry saying where its figures come from; any other name is unknown, never another
// card's figures.
#include <gtest/gtest.h>

#include "runtime/device_ceilings.h"

using moss::nvidia_ceilings;

TEST(DeviceCeilings, EachCardItsOwnFiguresAndSource) {
  const auto h200 = nvidia_ceilings("NVIDIA H200");
  EXPECT_TRUE(h200.known());
  EXPECT_DOUBLE_EQ(h200.tflops, 790.0);
  EXPECT_NE(h200.source.find("measured on an H200"), std::string::npos) << h200.source;
  const auto h100 = nvidia_ceilings("NVIDIA H100 80GB HBM3");
  EXPECT_TRUE(h100.known());
  EXPECT_NE(h100.tflops, h200.tflops);
  EXPECT_NE(h100.gbs, h200.gbs);
  EXPECT_NE(h100.source.find("datasheet"), std::string::npos) << h100.source;
  EXPECT_EQ(h100.source.find("measured"), std::string::npos) << h100.source;
  for (const char* name : {"NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA H200 NVL"}) {
    const auto c = nvidia_ceilings(name);
    EXPECT_TRUE(c.known()) << name;
    EXPECT_NE(c.source.find(name), std::string::npos) << c.source;
  }
}

TEST(DeviceCeilings, OtherNamesAreUnknown) {
  for (const char* name : {"", "NVIDIA H20", "NVIDIA H100", "NVIDIA H200 ", "nvidia h200", "NVIDIA GeForce RTX 4090",
                           "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3e"}) {
    const auto c = nvidia_ceilings(name);
    EXPECT_FALSE(c.known()) << name;
    EXPECT_EQ(c.tflops, 0.0) << name;
    EXPECT_NE(c.source.find("unknown"), std::string::npos) << c.source;
    EXPECT_NE(c.source.find(std::string("'") + name + "'"), std::string::npos) << c.source;
  }
}
