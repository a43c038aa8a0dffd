#include "concord/core/csv_writer.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <utility>

#include <spdlog/spdlog.h>

#include "concord/core/atomic_file.h"

namespace concord::core {

namespace {

std::string quote_if_needed(const std::string& field) {
  if (field.find_first_of(",\"\r\n") == std::string::npos) {
    return field;
  }
  std::string quoted = "\"";
  for (const char c : field) {
    if (c == '"') {
      quoted += '"';
    }
    quoted += c;
  }
  quoted += '"';
  return quoted;
}

void append_number(std::string& out, double value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out.append(buffer, result.ptr);
}

std::string header_line(const std::vector<std::string>& metric_names) {
  std::string line = "step,wall_time";
  for (const std::string& name : metric_names) {
    line += ',';
    line += quote_if_needed(name);
  }
  line += '\n';
  return line;
}

}  // namespace

CsvWriter::CsvWriter(std::filesystem::path path) : CsvWriter(std::move(path), /*append=*/false) {}

CsvWriter::CsvWriter(std::filesystem::path path, bool append) : path_(std::move(path)) {
  std::string existing_header;
  if (append) {
    std::ifstream in(path_, std::ios::binary);
    std::getline(in, existing_header);
  }
  const std::string fixed = "step,wall_time";
  if (existing_header.compare(0, fixed.size(), fixed) != 0 || existing_header.find('"') != std::string::npos) {
    if (!existing_header.empty()) {
      throw std::runtime_error("CSV file '" + path_.string() + "' has an unexpected header; cannot append to it");
    }
    open_locked("wb");
    return;
  }
  header_ = existing_header + "\n";
  size_t start = fixed.size();
  while (start < existing_header.size()) {
    const size_t end = std::min(existing_header.find(',', start + 1), existing_header.size());
    metric_names_.push_back(existing_header.substr(start + 1, end - start - 1));
    start = end;
  }
  open_locked("ab");
}

CsvWriter::~CsvWriter() {
  if (file_ != nullptr && std::fclose(file_) != 0) {
    spdlog::error("CSV file '{}': close failed: {}", path_.string(), std::strerror(errno));
  }
}

void CsvWriter::write_row(int64_t step, double wall_time, const std::map<std::string, double>& values) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> added;
  for (const auto& entry : values) {
    const std::string& name = entry.first;
    if (name == "step" || name == "wall_time") {
      throw std::invalid_argument("CSV file '" + path_.string() + "': metric name '" + name +
                                  "' clashes with a fixed column");
    }
    if (std::find(metric_names_.begin(), metric_names_.end(), name) == metric_names_.end()) {
      added.push_back(name);
    }
  }
  if (header_.empty() || !added.empty()) {
    const std::string old_header = header_;
    metric_names_.insert(metric_names_.end(), added.begin(), added.end());
    header_ = header_line(metric_names_);
    if (old_header.empty()) {
      append_locked(header_);
    } else {
      widen_file_locked(old_header, added.size());
    }
  }

  std::string row = std::to_string(step);
  row += ',';
  append_number(row, wall_time);
  for (const std::string& name : metric_names_) {
    row += ',';
    const auto found = values.find(name);
    if (found != values.end()) {
      append_number(row, found->second);
    }
  }
  row += '\n';
  append_locked(row);
}

void CsvWriter::drop_rows_after(int64_t step) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (file_ != nullptr && std::fclose(file_) != 0) {
    file_ = nullptr;
    throw std::runtime_error("cannot close CSV file '" + path_.string() + "': " + std::strerror(errno));
  }
  file_ = nullptr;
  std::ifstream in(path_, std::ios::binary);
  const std::string old_contents((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::runtime_error("cannot read back CSV file '" + path_.string() + "' to drop rows");
  std::string contents;
  contents.reserve(old_contents.size());
  std::size_t line_start = 0;
  while (line_start < old_contents.size()) {
    std::size_t line_end = old_contents.find('\n', line_start);
    line_end = line_end == std::string::npos ? old_contents.size() : line_end + 1;
    const std::string_view line(old_contents.data() + line_start, line_end - line_start);
    int64_t row_step = 0;
    const auto parsed = std::from_chars(line.data(), line.data() + line.size(), row_step);
    // The header (and anything else without a leading step) stays.
    if (parsed.ec != std::errc() || row_step <= step) contents.append(line);
    line_start = line_end;
  }
  if (contents.size() != old_contents.size()) write_file_atomically(path_, contents);
  open_locked("ab");
}

std::vector<std::string> CsvWriter::metric_names() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return metric_names_;
}

void CsvWriter::widen_file_locked(const std::string& old_header, std::size_t added_columns) {
  if (std::fclose(file_) != 0) {
    file_ = nullptr;
    throw std::runtime_error("cannot close CSV file '" + path_.string() + "': " + std::strerror(errno));
  }
  file_ = nullptr;
  std::ifstream in(path_, std::ios::binary);
  if (!in) {
    throw std::runtime_error("cannot reopen CSV file '" + path_.string() +
                             "' to widen its header: " + std::strerror(errno));
  }
  const std::string old_contents((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    throw std::runtime_error("cannot read back CSV file '" + path_.string() + "' to widen its header");
  }
  if (old_contents.compare(0, old_header.size(), old_header) != 0) {
    throw std::runtime_error("CSV file '" + path_.string() + "' was changed by someone else; cannot widen its header");
  }
  const std::string padding(added_columns, ',');
  std::string contents = header_;
  contents.reserve(old_contents.size() * 2);
  std::size_t line_start = old_header.size();
  while (line_start < old_contents.size()) {
    std::size_t line_end = old_contents.find('\n', line_start);
    if (line_end == std::string::npos) {
      line_end = old_contents.size();
    }
    contents.append(old_contents, line_start, line_end - line_start);
    contents += padding;
    contents += '\n';
    line_start = line_end + 1;
  }
  write_file_atomically(path_, contents);
  open_locked("ab");
}

void CsvWriter::open_locked(const char* mode) {
  file_ = std::fopen(path_.c_str(), mode);
  if (file_ == nullptr) {
    throw std::runtime_error("cannot open CSV file '" + path_.string() + "': " + std::strerror(errno));
  }
}

void CsvWriter::append_locked(const std::string& text) {
  if (file_ == nullptr) {
    throw std::runtime_error("CSV file '" + path_.string() + "' is not open after an earlier failure");
  }
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() || std::fflush(file_) != 0) {
    throw std::runtime_error("cannot write CSV file '" + path_.string() + "': " + std::strerror(errno));
  }
}

}  // namespace concord::core
