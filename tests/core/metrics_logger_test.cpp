#include "concord/core/metrics_logger.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "concord/core/tensorboard_reader.h"

namespace concord::core {
namespace {

namespace fs = std::filesystem;

class MetricsLoggerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device entropy;
    dir_ = fs::temp_directory_path() /
           ("concord_metrics_logger_test_" + std::to_string(::getpid()) + "_" + std::to_string(entropy()));
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::vector<std::string> lines(const fs::path& path) {
    std::ifstream in(path);
    std::vector<std::string> result;
    for (std::string line; std::getline(in, line);) {
      result.push_back(line);
    }
    return result;
  }

  static std::vector<fs::path> event_files(const fs::path& dir) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0) {
        files.push_back(entry.path());
      }
    }
    return files;
  }

  fs::path dir_;
};

TEST_F(MetricsLoggerTest, WritesCsvAndTensorBoardWithTheSameSteps) {
  const fs::path run_dir = dir_ / "run";
  MetricsLogger logger(run_dir, /*csv=*/true, /*tensorboard=*/true);
  logger.log(10, {{"loss", 0.5}, {"reward", 1.0}});
  logger.log(20, {{"loss", 0.25}});

  // Both sinks are flushed after each call: readable while the logger is alive.
  const std::vector<std::string> csv = lines(run_dir / "metrics.csv");
  ASSERT_EQ(csv.size(), 3U);
  EXPECT_EQ(csv[0], "step,wall_time,loss,reward");
  EXPECT_EQ(csv[1].rfind("10,", 0), 0U) << csv[1];
  EXPECT_EQ(csv[1].substr(csv[1].size() - 6), ",0.5,1") << csv[1];
  EXPECT_EQ(csv[2].substr(csv[2].size() - 6), ",0.25,") << csv[2];

  const std::vector<fs::path> files = event_files(run_dir);
  ASSERT_EQ(files.size(), 1U);
  const std::vector<tensorboard::Event> events = read_event_file(files[0]);
  ASSERT_EQ(events.size(), 3U);
  EXPECT_EQ(events[1].step(), 10);
  ASSERT_EQ(events[1].summary().value_size(), 2);
  EXPECT_EQ(events[1].summary().value(0).tag(), "loss");
  EXPECT_EQ(events[1].summary().value(0).simple_value(), 0.5F);
  EXPECT_EQ(events[1].summary().value(1).tag(), "reward");
  EXPECT_EQ(events[2].step(), 20);
  EXPECT_EQ(events[2].summary().value(0).simple_value(), 0.25F);

  // The CSV row and the event carry the same wall time.
  const std::string wall_time = csv[1].substr(3, csv[1].find(',', 3) - 3);
  EXPECT_DOUBLE_EQ(std::stod(wall_time), events[1].wall_time());
}

TEST_F(MetricsLoggerTest, CsvOnly) {
  MetricsLogger logger(dir_, /*csv=*/true, /*tensorboard=*/false);
  logger.log(1, {{"x", 2.0}});
  EXPECT_EQ(logger.tensorboard_writer(), nullptr);
  ASSERT_NE(logger.csv_writer(), nullptr);
  EXPECT_EQ(lines(dir_ / "metrics.csv").size(), 2U);
  EXPECT_TRUE(event_files(dir_).empty());
}

TEST_F(MetricsLoggerTest, TensorBoardOnly) {
  MetricsLogger logger(dir_, /*csv=*/false, /*tensorboard=*/true);
  logger.log(1, {{"x", 2.0}});
  EXPECT_EQ(logger.csv_writer(), nullptr);
  EXPECT_FALSE(fs::exists(dir_ / "metrics.csv"));
  ASSERT_NE(logger.tensorboard_writer(), nullptr);
  EXPECT_EQ(read_event_file(logger.tensorboard_writer()->path()).size(), 2U);
}

TEST_F(MetricsLoggerTest, NeitherSinkStillCreatesTheRunDirectory) {
  MetricsLogger logger(dir_ / "quiet", false, false);
  logger.log(1, {{"x", 2.0}});
  EXPECT_TRUE(fs::is_directory(dir_ / "quiet"));
  EXPECT_TRUE(fs::is_empty(dir_ / "quiet"));
}

}  // namespace
}  // namespace concord::core
