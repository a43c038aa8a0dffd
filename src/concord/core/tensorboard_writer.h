#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace concord::core {

// Writes scalar summaries in TensorBoard's event-file format (a TFRecord stream of serialised
// tensorboard.Event protos), so a stock TensorBoard pointed at `log_dir` shows the curves.
//
//   add_scalar(s) -> Event proto -> record [len u64 LE | masked crc(len) | data | masked crc(data)]
//                 -> buffered file events.out.tfevents.<unix seconds>.<hostname> -> flush()
//
// The constructor creates `log_dir` if needed and writes the file_version record "brain.Event:2";
// it throws std::runtime_error naming the file when it cannot be created. Records are buffered:
// they reach the OS on flush() and in the destructor (which never throws; failures are logged).
// A failed write throws std::runtime_error naming the file. Thread-safe: all members may be
// called concurrently; each record is written whole.
class TensorBoardWriter {
 public:
  explicit TensorBoardWriter(const std::filesystem::path& log_dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // One Event holding one scalar. `wall_time` is seconds since the Unix epoch (default: now).
  void add_scalar(const std::string& tag, double value, int64_t step, std::optional<double> wall_time = std::nullopt);

  // One Event holding every scalar in `values`, all at the same step and time.
  void add_scalars(const std::map<std::string, double>& values, int64_t step,
                   std::optional<double> wall_time = std::nullopt);

  // A SessionLog START at `step`: TensorBoard discards the events of this directory's earlier
  // files at `step` or later, as it does for a TensorFlow job restarted from a checkpoint.
  void add_session_start(int64_t step, std::optional<double> wall_time = std::nullopt);

  // Hands buffered records to the OS.
  void flush();

  // The event file being written.
  const std::filesystem::path& path() const { return path_; }

 private:
  void write_record_locked(const std::string& data);
  void flush_locked();

  std::filesystem::path path_;
  std::mutex mutex_;
  std::FILE* file_ = nullptr;
};

// Seconds since the Unix epoch, with sub-second precision, as TensorBoard's wall_time expects.
double unix_time_now();

}  // namespace concord::core
