// `concord plot` and `concord board` as a user runs them, on synthetic run directories.
#include <cstdint>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "cli/concord_process.h"
#include "core/temp_dir.h"

namespace concord::test {
namespace {

namespace fs = std::filesystem;

class ViewCommandsTest : public TempDirTest {
 protected:
  ViewCommandsTest() : TempDirTest("concord_view_commands_") {}

  void SetUp() override {
    TempDirTest::SetUp();
    for (int seed = 1; seed <= 2; ++seed) {
      const fs::path run = dir_ / "runs" / ("CartPole-v1__train__" + std::to_string(seed) + "__t");
      fs::create_directories(run);
      write_bytes(run / "config.toml", "[run]\nseed = " + std::to_string(seed) + "\n");
      write_bytes(run / "metrics.csv",
                  "step,wall_time,charts/episodic_return,losses/entropy\n"
                  "100,10,,0.69\n200,11,20,0.6\n300,12,35,0.5\n");
    }
  }
  // The number of lines of `text`.
  static int lines(const std::string& text) {
    int count = 0;
    for (const char c : text) count += c == '\n';
    return count;
  }
  static std::pair<uint32_t, uint32_t> png_size(const std::string& bytes) {
    auto be32 = [&](std::size_t at) {
      uint32_t v = 0;
      for (int i = 0; i < 4; ++i) v = v << 8 | static_cast<unsigned char>(bytes.at(at + i));
      return v;
    };
    return {be32(16), be32(20)};
  }
};

TEST_F(ViewCommandsTest, PlotWritesPngAndSvgOfTheExpectedSize) {
  const fs::path png = dir_ / "curves.png";
  CommandResult result =
      run_concord("plot " + (dir_ / "runs").string() + " -o " + png.string() + " --width 700 --height 400");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("2 runs"), std::string::npos) << result.output;
  const std::string bytes = read_bytes(png);
  ASSERT_GT(bytes.size(), 24u);
  EXPECT_EQ(bytes.substr(1, 3), "PNG");
  EXPECT_EQ(png_size(bytes), (std::pair<uint32_t, uint32_t>{700, 400}));

  const fs::path svg = dir_ / "curves.svg";
  result = run_concord("plot " + (dir_ / "runs").string() + " -o " + svg.string() +
                       " --group --x time --metric losses/entropy --metric charts/episodic_return");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::string text = read_bytes(svg);
  EXPECT_NE(text.find("viewBox=\"0 0 960 640\""), std::string::npos) << text.substr(0, 300);  // 320 a metric
}

TEST_F(ViewCommandsTest, PlotBadInputIsOneLineAndAFailure) {
  const std::string runs = (dir_ / "runs").string();
  const struct {
    std::string arguments, expected;
  } cases[] = {
      {"plot " + (dir_ / "nope").string() + " -o " + (dir_ / "a.png").string(), "no such run directory"},
      {"plot " + runs + " -o " + (dir_ / "a.jpg").string(), "must end in .png or .svg"},
      {"plot " + (dir_ / "runs" / "CartPole-v1__train__1__t").string() + " -o " + (dir_ / "a.png").string() +
           " --metric charts/episodic_retrun",
       "no metric 'charts/episodic_retrun' in run " + (dir_ / "runs" / "CartPole-v1__train__1__t").string() +
           " (did you mean charts/episodic_return?)"},
  };
  for (const auto& c : cases) {
    const CommandResult result = run_concord(c.arguments);
    EXPECT_NE(result.exit_code, 0) << c.arguments;
    EXPECT_EQ(lines(result.output), 1) << result.output;
    EXPECT_NE(result.output.find(c.expected), std::string::npos) << result.output;
  }
  fs::create_directories(dir_ / "empty");
  const CommandResult empty = run_concord("plot " + (dir_ / "empty").string() + " -o " + (dir_ / "a.png").string());
  EXPECT_NE(empty.exit_code, 0);
  EXPECT_NE(empty.output.find("no run under"), std::string::npos) << empty.output;
  EXPECT_FALSE(fs::exists(dir_ / "a.png"));
  EXPECT_FALSE(fs::exists(dir_ / "a.jpg"));
}

TEST_F(ViewCommandsTest, BoardBadInputIsOneLineAndAFailure) {
  for (const std::string& arguments :
       {"board " + (dir_ / "nope").string(), "board " + (dir_ / "runs").string() + " --host 203.0.113.9 --port 0"}) {
    const CommandResult result = run_concord(arguments);
    EXPECT_NE(result.exit_code, 0) << arguments;
    EXPECT_EQ(lines(result.output), 1) << result.output;
  }
}

}  // namespace
}  // namespace concord::test
