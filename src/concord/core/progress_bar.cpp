#include "concord/core/progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <sstream>

namespace concord::core {

std::string format_count(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string grouped;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) grouped += ',';
    grouped += digits[i];
  }
  return value < 0 ? "-" + grouped : grouped;
}

std::string format_rate(double per_second) {
  char text[32];
  if (per_second >= 1e9) {
    std::snprintf(text, sizeof(text), "%.2fG", per_second / 1e9);
  } else if (per_second >= 1e6) {
    std::snprintf(text, sizeof(text), "%.2fM", per_second / 1e6);
  } else if (per_second >= 1e3) {
    std::snprintf(text, sizeof(text), "%.1fk", per_second / 1e3);
  } else {
    std::snprintf(text, sizeof(text), "%.0f", per_second);
  }
  return text;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "-";
  const int64_t total = static_cast<int64_t>(std::llround(seconds));
  char text[32];
  std::snprintf(text, sizeof(text), "%lld:%02lld:%02lld", static_cast<long long>(total / 3600),
                static_cast<long long>(total / 60 % 60), static_cast<long long>(total % 60));
  return text;
}

std::string format_progress_line(const std::string& label, int64_t steps, int64_t total_steps, double steps_per_second,
                                 std::optional<double> recent_return, bool with_bar) {
  std::ostringstream line;
  if (!label.empty()) line << label << " ";
  const double fraction =
      total_steps > 0 ? std::clamp(static_cast<double>(steps) / static_cast<double>(total_steps), 0.0, 1.0) : 0.0;
  if (with_bar) {
    constexpr int kWidth = 20;
    const int filled = static_cast<int>(fraction * kWidth);
    line << "[" << std::string(filled, '#') << std::string(kWidth - filled, '.') << "] ";
  }
  line << static_cast<int>(fraction * 100) << "%  " << format_count(steps) << "/" << format_count(total_steps) << "  ";
  line << (steps_per_second > 0 ? format_rate(steps_per_second) : std::string("-")) << " steps/s  ";
  line << "return ";
  if (recent_return) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.1f", *recent_return);
    line << text;
  } else {
    line << "-";
  }
  const double eta = steps_per_second > 0 ? static_cast<double>(total_steps - steps) / steps_per_second : -1.0;
  line << "  ETA " << format_duration(eta);
  return line.str();
}

ProgressBar::ProgressBar(int64_t total_steps, ProgressBarOptions options)
    : total_steps_(total_steps),
      options_(std::move(options)),
      terminal_(options_.force_terminal.value_or(isatty(fileno(options_.out)) == 1)),
      last_rate_steps_(options_.start_steps),
      latest_steps_(options_.start_steps) {}

ProgressBar::~ProgressBar() {
  if (!finished_) finish();
}

void ProgressBar::update(int64_t steps, std::optional<double> recent_return) {
  latest_steps_ = steps;
  if (recent_return) latest_return_ = recent_return;
  const double now = since_start_.elapsed_seconds();
  const double interval = terminal_ ? 0.1 : options_.plain_interval_seconds;
  if (last_draw_time_ >= 0 && now - last_draw_time_ < interval) return;
  draw(steps, /*final_draw=*/false);
}

void ProgressBar::finish() {
  if (finished_) return;
  draw(latest_steps_, /*final_draw=*/true);
  finished_ = true;
}

void ProgressBar::draw(int64_t steps, bool final_draw) {
  const double now = since_start_.elapsed_seconds();
  // The rate covers the span since the previous draw, so it follows changes in speed; the
  // final line reports the average over this process's part of the run instead.
  if (final_draw) {
    const int64_t done_here = steps - options_.start_steps;
    steps_per_second_ = now > 0 && done_here > 0 ? static_cast<double>(done_here) / now : 0.0;
  } else if (now - last_rate_time_ > 0 && steps > last_rate_steps_) {
    steps_per_second_ = static_cast<double>(steps - last_rate_steps_) / (now - last_rate_time_);
    last_rate_steps_ = steps;
    last_rate_time_ = now;
  }
  last_draw_time_ = now;
  const std::string line =
      format_progress_line(options_.label, steps, total_steps_, steps_per_second_, latest_return_, terminal_);
  if (terminal_) {
    std::fprintf(options_.out, "\r%s\033[K%s", line.c_str(), final_draw ? "\n" : "");
  } else {
    std::fprintf(options_.out, "%s\n", line.c_str());
  }
  std::fflush(options_.out);
}

}  // namespace concord::core
