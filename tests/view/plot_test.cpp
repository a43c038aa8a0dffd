#include "concord/view/plot.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/temp_dir.h"

namespace concord::view {
namespace {

namespace fs = std::filesystem;

class PlotTest : public test::TempDirTest {
 protected:
  PlotTest() : TempDirTest("concord_plot_") {}

  static std::vector<PlotPanel> two_panels() {
    PlotPanel returns{"charts/episodic_return", "env steps", "return", {}};
    returns.lines.push_back({"seed 1", {{0, 1000, 2000}, {10, 50, 200}}, {}, {}});
    returns.lines.push_back({"group", {{0, 1000, 2000}, {12, 40, 180}}, {8, 30, 150}, {15, 60, 210}});
    PlotPanel loss{"losses/value_loss", "env steps", "loss", {}};
    loss.lines.push_back({"one point", {{500}, {0.25}}, {}, {}});
    return {returns, loss};
  }
  // A PNG's width and height from its IHDR chunk (big-endian, bytes 16-23), after the signature.
  static std::pair<uint32_t, uint32_t> png_size(const std::string& bytes) {
    auto be32 = [&](std::size_t at) {
      uint32_t v = 0;
      for (int i = 0; i < 4; ++i) v = v << 8 | static_cast<unsigned char>(bytes.at(at + i));
      return v;
    };
    return {be32(16), be32(20)};
  }
};

TEST_F(PlotTest, WritesAPngOfTheAskedSize) {
  write_plot(two_panels(), dir_ / "curves.png", 800, 600);
  const std::string bytes = read_bytes(dir_ / "curves.png");
  ASSERT_GT(bytes.size(), 1000u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(bytes.substr(12, 4), "IHDR");
  EXPECT_EQ(png_size(bytes), (std::pair<uint32_t, uint32_t>{800, 600}));
}

TEST_F(PlotTest, WritesAnSvgOfTheAskedSize) {
  write_plot(two_panels(), dir_ / "curves.svg", 640, 400);
  const std::string text = read_bytes(dir_ / "curves.svg");
  EXPECT_EQ(text.rfind("<?xml", 0), 0u);
  EXPECT_NE(text.find("viewBox=\"0 0 640 400\""), std::string::npos) << text.substr(0, 300);
  EXPECT_NE(text.find("</svg>"), std::string::npos);
}

TEST_F(PlotTest, AnEmptyPanelStillDraws) {
  write_plot({PlotPanel{"nothing yet", "env steps", "return", {}}}, dir_ / "empty.png", 300, 200);
  EXPECT_EQ(png_size(read_bytes(dir_ / "empty.png")), (std::pair<uint32_t, uint32_t>{300, 200}));
}

TEST_F(PlotTest, RefusesOtherExtensionsSmallSizesAndUnwritablePaths) {
  EXPECT_THROW(write_plot(two_panels(), dir_ / "curves.jpg", 800, 600), std::invalid_argument);
  EXPECT_THROW(write_plot(two_panels(), dir_ / "curves.png", 800, 200), std::invalid_argument);  // 100 a panel
  EXPECT_THROW(write_plot(two_panels(), dir_ / "no" / "such" / "dir.png", 800, 600), std::runtime_error);
  EXPECT_THROW(write_plot(two_panels(), dir_ / "no" / "such" / "dir.svg", 800, 600), std::runtime_error);
  EXPECT_FALSE(fs::exists(dir_ / "curves.jpg"));
}

TEST(AxisTicks, RoundStepsCoveringTheRange) {
  EXPECT_EQ(axis_ticks(0, 1000, 5), (std::vector<double>{0, 200, 400, 600, 800, 1000}));
  EXPECT_EQ(axis_ticks(3, 97, 5), (std::vector<double>{0, 20, 40, 60, 80, 100}));
  EXPECT_EQ(axis_ticks(-1, 1, 4), (std::vector<double>{-1, -0.5, 0, 0.5, 1}));
  const std::vector<double> tenths = axis_ticks(0.1, 0.35, 5);
  ASSERT_EQ(tenths.size(), 6u);
  EXPECT_DOUBLE_EQ(tenths.front(), 0.1);
  EXPECT_DOUBLE_EQ(tenths.back(), 0.35);
  EXPECT_TRUE(axis_ticks(1, 1, 5).empty());
}

TEST(AxisTicks, LabelsAreShort) {
  EXPECT_EQ(tick_label(250000), "250k");
  EXPECT_EQ(tick_label(1500000), "1.5M");
  EXPECT_EQ(tick_label(2000), "2k");
  EXPECT_EQ(tick_label(999), "999");

  EXPECT_EQ(tick_label(0.25), "0.25");
  EXPECT_EQ(tick_label(-3), "-3");
}

}  // namespace
}  // namespace concord::view
