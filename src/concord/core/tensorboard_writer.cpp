#include "concord/core/tensorboard_writer.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include <spdlog/spdlog.h>

#include "concord/core/crc32c.h"
#include "concord/core/little_endian.h"
#include "concord/core/proto/tensorboard_event.pb.h"

namespace concord::core {

namespace {

std::string hostname() {
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0 || name[0] == '\0') {
    return "localhost";
  }
  return std::string(name.data());
}

// events.out.tfevents.<seconds>.<host>, with a numeric suffix if a writer in the same directory
// already took that name this second.
std::filesystem::path choose_event_file(const std::filesystem::path& log_dir) {
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string base = "events.out.tfevents." + std::to_string(seconds) + "." + hostname();
  std::filesystem::path candidate = log_dir / base;
  for (int suffix = 1; std::filesystem::exists(candidate); ++suffix) {
    candidate = log_dir / (base + "." + std::to_string(suffix));
  }
  return candidate;
}

}  // namespace

double unix_time_now() {
  const auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration<double>(since_epoch).count();
}

TensorBoardWriter::TensorBoardWriter(const std::filesystem::path& log_dir) {
  std::error_code error;
  std::filesystem::create_directories(log_dir, error);
  if (error) {
    throw std::runtime_error("cannot create TensorBoard log directory '" + log_dir.string() + "': " + error.message());
  }
  path_ = choose_event_file(log_dir);
  // "x": fail rather than clobber a file another writer created between the check and the open.
  file_ = std::fopen(path_.c_str(), "wbx");
  if (file_ == nullptr) {
    throw std::runtime_error("cannot create TensorBoard event file '" + path_.string() + "': " + std::strerror(errno));
  }
  tensorboard::Event event;
  event.set_wall_time(unix_time_now());
  event.set_step(0);
  event.set_file_version("brain.Event:2");
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    write_record_locked(event.SerializeAsString());
    flush_locked();
  } catch (...) {
    std::fclose(file_);
    throw;
  }
}

TensorBoardWriter::~TensorBoardWriter() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (std::fflush(file_) != 0) {
    spdlog::error("TensorBoard event file '{}': flush failed: {}", path_.string(), std::strerror(errno));
  }
  if (std::fclose(file_) != 0) {
    spdlog::error("TensorBoard event file '{}': close failed: {}", path_.string(), std::strerror(errno));
  }
}

void TensorBoardWriter::add_scalar(const std::string& tag, double value, int64_t step,
                                   std::optional<double> wall_time) {
  add_scalars({{tag, value}}, step, wall_time);
}

void TensorBoardWriter::add_scalars(const std::map<std::string, double>& values, int64_t step,
                                    std::optional<double> wall_time) {
  if (values.empty()) {
    return;
  }
  tensorboard::Event event;
  event.set_wall_time(wall_time.value_or(unix_time_now()));
  event.set_step(step);
  tensorboard::Summary* summary = event.mutable_summary();
  for (const auto& [tag, value] : values) {
    tensorboard::Summary::Value* entry = summary->add_value();
    entry->set_tag(tag);
    entry->set_simple_value(static_cast<float>(value));
  }
  const std::string data = event.SerializeAsString();
  std::lock_guard<std::mutex> lock(mutex_);
  write_record_locked(data);
}

void TensorBoardWriter::add_session_start(int64_t step, std::optional<double> wall_time) {
  tensorboard::Event event;
  event.set_wall_time(wall_time.value_or(unix_time_now()));
  event.set_step(step);
  event.mutable_session_log()->set_status(tensorboard::SessionLog::START);
  const std::string data = event.SerializeAsString();
  std::lock_guard<std::mutex> lock(mutex_);
  write_record_locked(data);
}

void TensorBoardWriter::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  flush_locked();
}

void TensorBoardWriter::write_record_locked(const std::string& data) {
  std::string record;
  record.reserve(data.size() + 16);
  put_le(record, data.size(), 8);
  put_le(record, masked_crc32c(record.data(), 8), 4);
  record += data;
  put_le(record, masked_crc32c(data), 4);
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size()) {
    throw std::runtime_error("cannot write TensorBoard event file '" + path_.string() + "': " + std::strerror(errno));
  }
}

void TensorBoardWriter::flush_locked() {
  if (std::fflush(file_) != 0) {
    throw std::runtime_error("cannot flush TensorBoard event file '" + path_.string() + "': " + std::strerror(errno));
  }
}

}  // namespace concord::core
