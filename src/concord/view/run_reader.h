#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace concord::view {

// What `concord plot` and `concord board` read: the run directories that `concord train` (and
// `fit`, `rollout`) write, their metrics.csv read incrementally (a live run is refreshed by
// reading only the bytes appended since the last look), and runs grouped by config, the seeds of
// one config summarised by their mean and spread.

// A run directory: one that holds metrics.csv and config.toml.
struct RunInfo {
  std::size_t root = 0;             // index of the run root it was found under
  std::string relative;             // its path under that root, '/'-separated ("." for the root itself)
  std::filesystem::path directory;  // root / relative
  // "<root>/<relative>": unique among the runs of one listing, stable while the roots are.
  std::string id() const { return std::to_string(root) + "/" + relative; }
};

bool is_run_directory(const std::filesystem::path& directory);

// Every run under each root (a root that is itself a run is one), sorted by root, then path; at most
// `max_depth` directories below a root, not inside a run, not through symbolic links (a link could
// lead out of the roots the user named). Throws std::runtime_error naming a root that is not a
// directory.
std::vector<RunInfo> list_runs(const std::vector<std::filesystem::path>& roots, int max_depth = 4);

// A run's metrics.csv (core::CsvWriter's wide table: step, wall_time, then one column per metric;
// an empty cell is NaN), kept in memory and brought up to date by refresh(). CsvWriter appends
// rows, and rewrites the whole file (atomically, so as a new file) when a new metric widens the
// header or a resumed run drops rows; refresh() reads only the complete lines appended since the
// last call, and reads everything again, with a new generation(), when the file was replaced or
// shrank or its header changed. Not thread-safe.
class MetricsTable {
 public:
  explicit MetricsTable(std::filesystem::path csv_path);

  // True when rows were added or the table was read afresh. A missing file is an empty table.
  // Throws std::runtime_error naming the file when it exists but cannot be read.
  bool refresh();

  // "step", "wall_time", then the metrics, in the file's order.
  const std::vector<std::string>& columns() const { return columns_; }
  std::size_t rows() const { return values_.empty() ? 0 : values_.front().size(); }
  // The column's index, or -1.
  int column_index(const std::string& name) const;
  const std::vector<double>& column(std::size_t index) const { return values_.at(index); }
  // Bumped each time the table is read from the start again: rows a reader took before belong to
  // an older table.
  uint64_t generation() const { return generation_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  void reset();
  void parse_line(const std::string& line);

  std::filesystem::path path_;
  std::vector<std::string> columns_;
  std::vector<std::vector<double>> values_;  // one vector per column
  std::string header_;                       // the header line as read, with its '\n'
  uint64_t offset_ = 0;                      // bytes consumed: whole lines only
  uint64_t device_ = 0, inode_ = 0;
  uint64_t generation_ = 0;
};

enum class XAxis { kSteps, kWallTime };

struct Series {
  std::vector<double> x, y;
};

// The points of `metric`: x is the step, or the wall time in seconds since the table's first row.
// Rows whose cell is empty or not finite are left out; a metric the table lacks gives no points.
Series metric_series(const MetricsTable& table, const std::string& metric, XAxis x_axis);

// Runs whose config.toml is the same but for the seed (and for what does not change learning: the
// run root, the log level, the progress display) form one group, in the order of their first run.
struct RunGroup {
  std::string label;                 // "<env.id> <train.algo> <train.policy>", "#2" etc. when shared
  std::vector<std::size_t> members;  // indices into the runs given
  std::vector<int64_t> seeds;        // run.seed of each member
};
std::vector<RunGroup> group_runs(const std::vector<RunInfo>& runs);

// The seeds' mean and spread at the x values of the first series that lie where every series has
// points (from the largest first x to the smallest last x); the others are interpolated linearly.
// std is the sample standard deviation (0 for one series). Series without points are left out.
struct Aggregate {
  std::vector<double> x, mean, std, min, max;
  std::size_t series = 0;  // how many series it summarises
};
Aggregate aggregate(const std::vector<Series>& series);

}  // namespace concord::view
