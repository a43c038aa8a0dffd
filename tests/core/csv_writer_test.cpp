#include "concord/core/csv_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace concord::core {
namespace {

namespace fs = std::filesystem;

class CsvWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device entropy;
    dir_ = fs::temp_directory_path() /
           ("concord_csv_writer_test_" + std::to_string(::getpid()) + "_" + std::to_string(entropy()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

  fs::path dir_;
};

TEST_F(CsvWriterTest, WritesHeaderWithTheFirstRow) {
  CsvWriter writer(dir_ / "m.csv");
  EXPECT_EQ(read(writer.path()), "");
  writer.write_row(1, 10.5, {{"loss", 0.5}, {"entropy", 1.25}});
  EXPECT_EQ(read(writer.path()), "step,wall_time,entropy,loss\n1,10.5,1.25,0.5\n");
}

TEST_F(CsvWriterTest, MissingValuesAreEmptyCells) {
  CsvWriter writer(dir_ / "m.csv");
  writer.write_row(1, 10.0, {{"a", 1.0}, {"b", 2.0}});
  writer.write_row(2, 11.0, {{"b", 3.0}});
  writer.write_row(3, 12.0, {});
  EXPECT_EQ(read(writer.path()), "step,wall_time,a,b\n1,10,1,2\n2,11,,3\n3,12,,\n");
}

TEST_F(CsvWriterTest, NewMetricWidensTheHeaderAndPadsOldRows) {
  CsvWriter writer(dir_ / "m.csv");
  writer.write_row(1, 100.0, {{"b", 1.0}});
  writer.write_row(2, 101.0, {{"b", 2.0}});
  writer.write_row(3, 102.0, {{"c", 3.0}, {"a", 4.0}});
  EXPECT_EQ(read(writer.path()),
            "step,wall_time,b,a,c\n"
            "1,100,1,,\n"
            "2,101,2,,\n"
            "3,102,,4,3\n");
  writer.write_row(4, 103.0, {{"a", 5.0}, {"b", 6.0}, {"c", 7.0}});
  writer.write_row(5, 104.0, {{"d", 8.0}});
  EXPECT_EQ(read(writer.path()),
            "step,wall_time,b,a,c,d\n"
            "1,100,1,,,\n"
            "2,101,2,,,\n"
            "3,102,,4,3,\n"
            "4,103,6,5,7,\n"
            "5,104,,,,8\n");
  EXPECT_EQ(writer.metric_names(), (std::vector<std::string>{"b", "a", "c", "d"}));
  // No temporary left behind by the rewrites.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(CsvWriterTest, NumbersRoundTripAndNonFiniteValuesAreSpelledOut) {
  CsvWriter writer(dir_ / "m.csv");
  writer.write_row(-3, 1700000000.123456,
                   {{"third", 1.0 / 3.0},
                    {"tiny", 1e-300},
                    {"nan", std::numeric_limits<double>::quiet_NaN()},
                    {"inf", -std::numeric_limits<double>::infinity()}});
  EXPECT_EQ(read(writer.path()),
            "step,wall_time,inf,nan,third,tiny\n"
            "-3,1700000000.123456,-inf,nan,0.3333333333333333,1e-300\n");
}

TEST_F(CsvWriterTest, QuotesAwkwardMetricNames) {
  CsvWriter writer(dir_ / "m.csv");
  writer.write_row(0, 1.0, {{"a,b", 1.0}, {"say \"hi\"", 2.0}, {"plain/name", 3.0}});
  EXPECT_EQ(read(writer.path()), "step,wall_time,\"a,b\",plain/name,\"say \"\"hi\"\"\"\n0,1,1,3,2\n");
}

TEST_F(CsvWriterTest, RejectsNamesOfTheFixedColumns) {
  CsvWriter writer(dir_ / "m.csv");
  EXPECT_THROW(writer.write_row(0, 1.0, {{"step", 1.0}}), std::invalid_argument);
  EXPECT_THROW(writer.write_row(0, 1.0, {{"wall_time", 1.0}}), std::invalid_argument);
  writer.write_row(0, 1.0, {{"ok", 1.0}});
  EXPECT_EQ(read(writer.path()), "step,wall_time,ok\n0,1,1\n");
}

TEST_F(CsvWriterTest, TruncatesAnExistingFile) {
  {
    std::ofstream old(dir_ / "m.csv");
    old << "stale contents\n";
  }
  CsvWriter writer(dir_ / "m.csv");
  writer.write_row(1, 2.0, {{"x", 3.0}});
  EXPECT_EQ(read(writer.path()), "step,wall_time,x\n1,2,3\n");
}

TEST_F(CsvWriterTest, UnwritablePathThrowsNamingIt) {
  const fs::path path = dir_ / "missing_dir" / "m.csv";
  try {
    CsvWriter writer(path);
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find(path.string()), std::string::npos) << error.what();
  }
}

TEST_F(CsvWriterTest, ConcurrentRowsStayWholeAndRectangular) {
  constexpr int kThreads = 4;
  constexpr int kRows = 50;
  CsvWriter writer(dir_ / "m.csv");
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&writer, t] {
      for (int i = 0; i < kRows; ++i) {
        writer.write_row(i, 1.0, {{"metric" + std::to_string(t), static_cast<double>(i)}});
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  std::ifstream in(writer.path());
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    EXPECT_EQ(std::count(line.begin(), line.end(), ','), 1 + kThreads) << line;
    ++lines;
  }
  EXPECT_EQ(lines, 1 + kThreads * kRows);
}

}  // namespace
}  // namespace concord::core

namespace concord::core {
namespace {

TEST(CsvWriterAppend, ResumedRunKeepsRowsAndHeader) {
  const auto path = std::filesystem::temp_directory_path() / "concord_csv_append_test.csv";
  std::filesystem::remove(path);
  {
    CsvWriter writer(path);
    writer.write_row(1, 0.5, {{"a", 1.0}, {"b", 2.0}});
  }
  {
    CsvWriter writer(path, /*append=*/true);
    EXPECT_EQ(writer.metric_names(), (std::vector<std::string>{"a", "b"}));
    writer.write_row(2, 1.5, {{"b", 4.0}});
    writer.write_row(3, 2.5, {{"c", 5.0}});
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "step,wall_time,a,b,c\n1,0.5,1,2,\n2,1.5,,4,\n3,2.5,,,5\n");
}

}  // namespace
}  // namespace concord::core
