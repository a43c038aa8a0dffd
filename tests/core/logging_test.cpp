#include "concord/core/logging.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include "core/temp_dir.h"

namespace concord::core {
namespace {

class LoggingTest : public test::TempDirTest {
 protected:
  LoggingTest() : TempDirTest("concord_logging_test_") {}
  void TearDown() override {
    init_logging("info");  // let go of the file before the directory goes
    TempDirTest::TearDown();
  }
};

// Each line is in log.txt as soon as it is logged, not when a buffer fills or the process exits:
// a run killed with SIGKILL keeps its log up to that moment.
TEST_F(LoggingTest, EveryLineReachesTheFileAtOnce) {
  const std::filesystem::path log = dir_ / "log.txt";
  init_logging("info", log.string());
  spdlog::info("first line");
  spdlog::debug("below the level");
  spdlog::info("second line");
  std::ifstream in(log, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("first line"), std::string::npos) << text;
  EXPECT_NE(text.find("second line"), std::string::npos) << text;
  EXPECT_EQ(text.find("below the level"), std::string::npos) << text;
}

}  // namespace
}  // namespace concord::core
