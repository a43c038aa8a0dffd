#include "concord/view/run_reader.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/temp_dir.h"

namespace concord::view {
namespace {

namespace fs = std::filesystem;

class RunReaderTest : public test::TempDirTest {
 protected:
  RunReaderTest() : TempDirTest("concord_run_reader_") {}

  // A run directory as `concord train` leaves it: config.toml and metrics.csv.
  fs::path make_run(const fs::path& directory, const std::string& csv, int64_t seed = 1,
                    const std::string& env = "CartPole-v1") {
    fs::create_directories(directory);
    write_bytes(directory / "config.toml",
                "[env]\nid = \"" + env + "\"\nnum_envs = 4\n\n[run]\nseed = " + std::to_string(seed) +
                    "\nprogress = \"bar\"\n\n[train]\n" + "algo = \"ppo\"\npolicy = \"single\"\n");
    write_bytes(directory / "metrics.csv", csv);
    return directory;
  }
  static void append(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::app);
    out << text;
  }
};

TEST_F(RunReaderTest, ListsRunsUnderRootsSortedAndSkipsOtherDirectories) {
  make_run(dir_ / "a" / "CartPole-v1__train__2__t", "step,wall_time\n");
  make_run(dir_ / "a" / "CartPole-v1__train__1__t", "step,wall_time\n");
  make_run(dir_ / "a" / "nested" / "deeper" / "run", "step,wall_time\n");
  fs::create_directories(dir_ / "a" / "not_a_run");
  write_bytes(dir_ / "a" / "not_a_run" / "metrics.csv", "step,wall_time\n");  // no config.toml
  const fs::path single = make_run(dir_ / "b", "step,wall_time\n");

  const std::vector<RunInfo> runs = list_runs({dir_ / "a", single});
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[0].id(), "0/CartPole-v1__train__1__t");
  EXPECT_EQ(runs[1].id(), "0/CartPole-v1__train__2__t");
  EXPECT_EQ(runs[2].id(), "0/nested/deeper/run");
  EXPECT_EQ(runs[3].id(), "1/.");
  EXPECT_EQ(runs[3].directory, single);
  EXPECT_EQ(list_runs({dir_ / "a"}, /*max_depth=*/2).size(), 2u);  // nested/deeper/run is 3 below
}

TEST_F(RunReaderTest, DoesNotFollowSymbolicLinksOutOfARoot) {
  make_run(dir_ / "outside" / "run", "step,wall_time\n");
  fs::create_directories(dir_ / "root");
  fs::create_directory_symlink(dir_ / "outside", dir_ / "root" / "link");
  EXPECT_TRUE(list_runs({dir_ / "root"}).empty());
}

TEST_F(RunReaderTest, AMissingRootIsNamed) {
  try {
    list_runs({dir_ / "nope"});
    FAIL() << "no error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("nope"), std::string::npos) << error.what();
  }
}

TEST_F(RunReaderTest, ReadsTheTableWithEmptyCellsAsNaN) {
  const fs::path run = make_run(dir_ / "r",
                                "step,wall_time,charts/episodic_return,\"a,b\"\n"
                                "100,1000.5,,2\n"
                                "200,1001.5,9.5,nan\n"
                                "300,1003,12,-inf\n");
  MetricsTable table(run / "metrics.csv");
  EXPECT_TRUE(table.refresh());
  ASSERT_EQ(table.columns(), (std::vector<std::string>{"step", "wall_time", "charts/episodic_return", "a,b"}));
  ASSERT_EQ(table.rows(), 3u);
  EXPECT_EQ(table.column(0), (std::vector<double>{100, 200, 300}));
  EXPECT_TRUE(std::isnan(table.column(2)[0]));
  EXPECT_EQ(table.column(2)[1], 9.5);
  EXPECT_EQ(table.column(3)[0], 2.0);
  EXPECT_TRUE(std::isinf(table.column(3)[2]));

  const Series by_step = metric_series(table, "charts/episodic_return", XAxis::kSteps);
  EXPECT_EQ(by_step.x, (std::vector<double>{200, 300}));
  EXPECT_EQ(by_step.y, (std::vector<double>{9.5, 12}));
  const Series by_time = metric_series(table, "charts/episodic_return", XAxis::kWallTime);
  EXPECT_EQ(by_time.x, (std::vector<double>{1.0, 2.5}));  // seconds since the first row
  EXPECT_TRUE(metric_series(table, "losses/none", XAxis::kSteps).x.empty());
  EXPECT_EQ(table.column_index("a,b"), 3);
  EXPECT_EQ(table.column_index("missing"), -1);
}

TEST_F(RunReaderTest, RefreshReadsOnlyWholeAppendedLines) {
  const fs::path run = make_run(dir_ / "r", "step,wall_time,x\n10,1,1\n");
  const fs::path csv = run / "metrics.csv";
  MetricsTable table(csv);
  ASSERT_TRUE(table.refresh());
  EXPECT_EQ(table.rows(), 1u);
  EXPECT_FALSE(table.refresh());  // nothing new

  append(csv, "20,2,2\n30,3,");  // the writer is half-way through the third row
  EXPECT_TRUE(table.refresh());
  EXPECT_EQ(table.column(0), (std::vector<double>{10, 20}));
  append(csv, "3\n");
  EXPECT_TRUE(table.refresh());
  EXPECT_EQ(table.column(2), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(table.generation(), 0u);
}

TEST_F(RunReaderTest, AWidenedOrReplacedFileIsReadAgainUnderANewGeneration) {
  const fs::path run = make_run(dir_ / "r", "step,wall_time,x\n10,1,1\n20,2,2\n");
  const fs::path csv = run / "metrics.csv";
  MetricsTable table(csv);
  table.refresh();
  // CsvWriter widens the header by writing a new file and renaming it over the old one.
  write_bytes(run / "metrics.csv.tmp", "step,wall_time,x,y\n10,1,1,\n20,2,2,\n30,3,3,7\n");
  fs::rename(run / "metrics.csv.tmp", csv);
  EXPECT_TRUE(table.refresh());
  EXPECT_EQ(table.generation(), 1u);
  EXPECT_EQ(table.columns().size(), 4u);
  EXPECT_EQ(table.rows(), 3u);
  EXPECT_EQ(table.column(3)[2], 7.0);

  // A resume drops rows (a shorter file), even when written in place.
  write_bytes(csv, "step,wall_time,x,y\n10,1,1,\n");
  EXPECT_TRUE(table.refresh());
  EXPECT_EQ(table.generation(), 2u);
  EXPECT_EQ(table.rows(), 1u);

  // A different header of the same length or longer, in place.
  write_bytes(csv, "step,wall_time,z,w\n10,1,5,6\n20,2,5,6\n");
  EXPECT_TRUE(table.refresh());
  EXPECT_EQ(table.generation(), 3u);
  EXPECT_EQ(table.columns()[2], "z");
  EXPECT_EQ(table.rows(), 2u);

  fs::remove(csv);
  EXPECT_TRUE(table.refresh());
  EXPECT_EQ(table.rows(), 0u);
}

TEST_F(RunReaderTest, GroupsRunsThatDifferOnlyBySeed) {
  const std::string csv = "step,wall_time\n";
  make_run(dir_ / "r1", csv, 1);
  make_run(dir_ / "r2", csv, 2);
  make_run(dir_ / "r3", csv, 3, "Acrobot-v1");
  make_run(dir_ / "r4", csv, 3);
  const fs::path other = make_run(dir_ / "r5", csv, 4);
  append(other / "config.toml", "total_timesteps = 1000\n");  // a different config, same label
  const std::vector<RunInfo> runs = list_runs({dir_});
  ASSERT_EQ(runs.size(), 5u);
  const std::vector<RunGroup> groups = group_runs(runs);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].label, "CartPole-v1 ppo single");
  EXPECT_EQ(groups[0].members, (std::vector<std::size_t>{0, 1, 3}));
  EXPECT_EQ(groups[0].seeds, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(groups[1].label, "Acrobot-v1 ppo single");
  EXPECT_EQ(groups[1].members, (std::vector<std::size_t>{2}));
  EXPECT_EQ(groups[2].label, "CartPole-v1 ppo single #2");
  EXPECT_EQ(groups[2].members, (std::vector<std::size_t>{4}));
}

TEST(Aggregate, MeanAndSpreadWhereEverySeriesHasPoints) {
  const Series a{{0, 10, 20, 30}, {0, 10, 20, 30}};
  const Series b{{5, 15, 25}, {4, 8, 12}};  // interpolated at 10 and 20: 6 and 10
  const Series empty;
  const Aggregate result = aggregate({a, b, empty});
  EXPECT_EQ(result.series, 2u);
  EXPECT_EQ(result.x, (std::vector<double>{10, 20}));
  EXPECT_EQ(result.mean, (std::vector<double>{8, 15}));
  EXPECT_EQ(result.min, (std::vector<double>{6, 10}));
  EXPECT_EQ(result.max, (std::vector<double>{10, 20}));
  EXPECT_DOUBLE_EQ(result.std[0], std::sqrt(8.0));  // (10 - 8)^2 + (6 - 8)^2 over n - 1 = 1
  EXPECT_DOUBLE_EQ(result.std[1], std::sqrt(50.0));

  const Aggregate one = aggregate({b});
  EXPECT_EQ(one.x, b.x);
  EXPECT_EQ(one.std, (std::vector<double>{0, 0, 0}));
  EXPECT_TRUE(aggregate({}).x.empty());
}

}  // namespace
}  // namespace concord::view
