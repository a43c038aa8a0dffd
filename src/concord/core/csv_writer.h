#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace concord::core {

// Writes metrics as a wide CSV table: columns step, wall_time, then one per metric name in the
// order names first appeared (names new in the same row in sorted order). A row lacking a metric
// leaves its cell empty. When a row brings a new name, the file is rewritten (atomically) with the
// widened header and empty cells appended to the earlier rows, as Stable-Baselines3's CSV logger
// does, so the file is always a rectangular table. Every row is flushed to the OS as written.
//
// The constructor creates or truncates `path` (the header is written with the first row) and throws
// std::runtime_error naming the path on failure; write errors throw the same way. Metric names
// "step" and "wall_time" are rejected with std::invalid_argument. Values are written in the
// shortest form that reads back to the same double ("nan", "inf" for non-finite ones); names with
// commas, quotes or line breaks are quoted per RFC 4180. Thread-safe: rows are written whole.
class CsvWriter {
 public:
  explicit CsvWriter(std::filesystem::path path);
  // With `append` (a resumed run), an existing file keeps its rows and header and new rows go
  // after them; a missing or empty file starts fresh.
  CsvWriter(std::filesystem::path path, bool append);
  ~CsvWriter();
  CsvWriter(const CsvWriter&) = delete;
  CsvWriter& operator=(const CsvWriter&) = delete;

  void write_row(int64_t step, double wall_time, const std::map<std::string, double>& values);

  // Removes the rows whose step is above `step`, keeping the header: a run resumed from a checkpoint
  // at `step` logs those steps again. The file is rewritten atomically.
  void drop_rows_after(int64_t step);

  // The metric columns so far (without step and wall_time).
  std::vector<std::string> metric_names() const;

  const std::filesystem::path& path() const { return path_; }

 private:
  void widen_file_locked(const std::string& old_header, std::size_t added_columns);
  void open_locked(const char* mode);
  void append_locked(const std::string& text);

  std::filesystem::path path_;
  mutable std::mutex mutex_;
  std::FILE* file_ = nullptr;
  std::vector<std::string> metric_names_;
  std::string header_;  // the header line as written, with its '\n'; empty before the first row
};

}  // namespace concord::core
