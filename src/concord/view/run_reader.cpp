#include "concord/view/run_reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include <toml++/toml.h>

namespace concord::view {

namespace fs = std::filesystem;

bool is_run_directory(const fs::path& directory) {
  std::error_code error;
  return fs::is_regular_file(directory / "metrics.csv", error) && fs::is_regular_file(directory / "config.toml", error);
}

std::vector<RunInfo> list_runs(const std::vector<fs::path>& roots, int max_depth) {
  std::vector<RunInfo> runs;
  for (std::size_t r = 0; r < roots.size(); ++r) {
    const fs::path& root = roots[r];
    std::error_code error;
    if (!fs::is_directory(root, error)) {
      throw std::runtime_error("no such run directory or run root: '" + root.string() + "'");
    }
    if (is_run_directory(root)) {
      runs.push_back({r, ".", root});
      continue;
    }
    std::vector<RunInfo> found;
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, error);
    for (; !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
      if (it->is_symlink(error) || !it->is_directory(error)) {
        if (it->is_symlink(error)) it.disable_recursion_pending();
        continue;
      }
      if (is_run_directory(it->path())) {
        found.push_back({r, it->path().lexically_relative(root).generic_string(), it->path()});
        it.disable_recursion_pending();
      } else if (it.depth() + 1 >= max_depth) {
        it.disable_recursion_pending();
      }
    }
    std::sort(found.begin(), found.end(), [](const RunInfo& a, const RunInfo& b) { return a.relative < b.relative; });
    runs.insert(runs.end(), found.begin(), found.end());
  }
  return runs;
}

namespace {

// The fields of one CSV line (RFC 4180 quoting, as CsvWriter writes metric names), without its '\n'.
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else if (c != '\r') {
      fields.back() += c;
    }
  }
  return fields;
}

double parse_cell(const char* begin, const char* end) {
  if (begin == end) return std::numeric_limits<double>::quiet_NaN();
  double value = 0;
  const auto result = std::from_chars(begin, end, value);
  return result.ec == std::errc() ? value : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

MetricsTable::MetricsTable(fs::path csv_path) : path_(std::move(csv_path)) {}

int MetricsTable::column_index(const std::string& name) const {
  const auto it = std::find(columns_.begin(), columns_.end(), name);
  return it == columns_.end() ? -1 : static_cast<int>(it - columns_.begin());
}

void MetricsTable::reset() {
  const bool had_data = offset_ > 0;
  columns_.clear();
  values_.clear();
  header_.clear();
  offset_ = 0;
  if (had_data) ++generation_;
}

void MetricsTable::parse_line(const std::string& line) {
  const char* cursor = line.data();
  const char* const end = line.data() + line.size() - (!line.empty() && line.back() == '\r' ? 1 : 0);
  for (std::size_t column = 0; column < values_.size(); ++column) {
    const char* comma = cursor <= end ? std::find(cursor, end, ',') : end;
    values_[column].push_back(cursor <= end ? parse_cell(cursor, comma) : std::numeric_limits<double>::quiet_NaN());
    cursor = comma + 1;
  }
}

bool MetricsTable::refresh() {
  struct stat status {};
  if (::stat(path_.c_str(), &status) != 0) {
    const bool had_data = offset_ > 0;
    reset();
    return had_data;
  }
  const uint64_t size = static_cast<uint64_t>(status.st_size);
  const bool replaced = offset_ > 0 && (static_cast<uint64_t>(status.st_dev) != device_ ||
                                        static_cast<uint64_t>(status.st_ino) != inode_ || size < offset_);
  if (!replaced && size == offset_) return false;
  std::ifstream in(path_, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read '" + path_.string() + "'");
  bool reread = replaced;
  if (!reread && offset_ > 0) {
    // A rewrite that kept the inode (a tool that truncates and writes again) shows in the header.
    std::string header(header_.size(), '\0');
    in.read(header.data(), static_cast<std::streamsize>(header.size()));
    reread = header != header_;
  }
  if (reread) reset();
  device_ = static_cast<uint64_t>(status.st_dev);
  inode_ = static_cast<uint64_t>(status.st_ino);
  in.clear();
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string appended(size - offset_, '\0');
  in.read(appended.data(), static_cast<std::streamsize>(appended.size()));
  appended.resize(static_cast<std::size_t>(in.gcount()));
  // Only whole lines: the writer may be half-way through the last one.
  const std::size_t complete = appended.rfind('\n');
  if (complete == std::string::npos) return reread;
  std::size_t start = 0;
  bool added = false;
  while (start <= complete) {
    const std::size_t newline = appended.find('\n', start);
    std::string line = appended.substr(start, newline - start);
    if (header_.empty()) {
      header_ = line + "\n";
      columns_ = split_csv(line);
      values_.assign(columns_.size(), {});
    } else if (!line.empty()) {
      parse_line(line);
      added = true;
    }
    start = newline + 1;
  }
  offset_ += complete + 1;
  return added || reread;
}

Series metric_series(const MetricsTable& table, const std::string& metric, XAxis x_axis) {
  Series series;
  const int column = table.column_index(metric);
  if (column < 0 || table.rows() == 0) return series;
  const std::vector<double>& y = table.column(static_cast<std::size_t>(column));
  const std::vector<double>& x = table.column(x_axis == XAxis::kSteps ? 0 : 1);
  const double start = x_axis == XAxis::kSteps ? 0.0 : x.front();
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (std::isfinite(y[i]) && std::isfinite(x[i])) {
      series.x.push_back(x[i] - start);
      series.y.push_back(y[i]);
    }
  }
  return series;
}

namespace {

// What a group's runs share: the config without the keys that differ between seeds of one experiment.
struct ConfigKey {
  std::string text, label;
  int64_t seed = 0;
};

ConfigKey config_key(const fs::path& config_path) {
  ConfigKey key;
  toml::table config;
  try {
    config = toml::parse_file(config_path.string());
  } catch (const toml::parse_error&) {
    key.text = "unreadable:" + config_path.string();  // its own group
    key.label = config_path.parent_path().filename().string();
    return key;
  }
  key.seed = config["run"]["seed"].value_or(int64_t{0});
  key.label = config["env"]["id"].value_or(std::string("?")) + " " +
              config["train"]["algo"].value_or(std::string("?")) + " " +
              config["train"]["policy"].value_or(std::string("?"));
  if (toml::table* run = config["run"].as_table()) {
    for (const char* name : {"seed", "root", "log_level", "progress", "progress_interval_seconds"}) run->erase(name);
  }
  std::ostringstream text;
  text << config;  // toml++ keeps a table's keys sorted, so equal configs print equally
  key.text = text.str();
  return key;
}

}  // namespace

std::vector<RunGroup> group_runs(const std::vector<RunInfo>& runs) {
  std::vector<RunGroup> groups;
  std::map<std::string, std::size_t> by_config;
  std::map<std::string, int> label_uses;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const ConfigKey key = config_key(runs[i].directory / "config.toml");
    auto [it, inserted] = by_config.emplace(key.text, groups.size());
    if (inserted) {
      const int uses = ++label_uses[key.label];
      groups.push_back({uses == 1 ? key.label : key.label + " #" + std::to_string(uses), {}, {}});
    }
    groups[it->second].members.push_back(i);
    groups[it->second].seeds.push_back(key.seed);
  }
  return groups;
}

namespace {

// `series` at x (within its range), linearly between its neighbours.
double interpolate(const Series& series, double x) {
  const auto upper = std::lower_bound(series.x.begin(), series.x.end(), x);
  const std::size_t i = static_cast<std::size_t>(upper - series.x.begin());
  if (i < series.x.size() && series.x[i] == x) return series.y[i];
  if (i == 0) return series.y.front();
  if (i == series.x.size()) return series.y.back();
  const double t = (x - series.x[i - 1]) / (series.x[i] - series.x[i - 1]);
  return series.y[i - 1] + t * (series.y[i] - series.y[i - 1]);
}

}  // namespace

Aggregate aggregate(const std::vector<Series>& series) {
  Aggregate result;
  std::vector<const Series*> used;
  for (const Series& s : series) {
    if (!s.x.empty()) used.push_back(&s);
  }
  result.series = used.size();
  if (used.empty()) return result;
  double low = -std::numeric_limits<double>::infinity(), high = std::numeric_limits<double>::infinity();
  for (const Series* s : used) {
    low = std::max(low, s->x.front());
    high = std::min(high, s->x.back());
  }
  const double n = static_cast<double>(used.size());
  for (const double x : used.front()->x) {
    if (x < low || x > high) continue;
    double sum = 0, sum_squares = 0, lowest = std::numeric_limits<double>::infinity();
    double highest = -lowest;
    for (const Series* s : used) {
      const double y = interpolate(*s, x);
      sum += y;
      lowest = std::min(lowest, y);
      highest = std::max(highest, y);
    }
    const double mean = sum / n;
    for (const Series* s : used) {
      const double d = interpolate(*s, x) - mean;
      sum_squares += d * d;
    }
    result.x.push_back(x);
    result.mean.push_back(mean);
    result.std.push_back(used.size() > 1 ? std::sqrt(sum_squares / (n - 1)) : 0.0);
    result.min.push_back(lowest);
    result.max.push_back(highest);
  }
  return result;
}

}  // namespace concord::view
