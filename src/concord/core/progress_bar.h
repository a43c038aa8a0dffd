#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "concord/core/timer.h"

namespace concord::core {

struct ProgressBarOptions {
  // Printed before the bar, e.g. "CartPole-v1 ppo".
  std::string label;
  // When the output is not a terminal, one plain line is printed this often.
  double plain_interval_seconds = 5.0;
  // Overrides terminal detection (tests, or --progress=plain).
  std::optional<bool> force_terminal;
  std::FILE* out = stdout;
  // Steps done before this process began (a resumed run): they count toward the percentage and
  // the ETA's remainder, but not toward the rate, which only this process's steps measure.
  int64_t start_steps = 0;
};

// A one-line progress display: steps done of the total, steps/s over the last interval, the
// recent mean return and an ETA. On a terminal it redraws in place at most 10 times a second;
// otherwise (a pipe, a CI log) it prints a plain line every plain_interval_seconds. Not
// thread-safe: one thread drives it.
class ProgressBar {
 public:
  ProgressBar(int64_t total_steps, ProgressBarOptions options = {});
  ~ProgressBar();

  // Cheap enough to call every iteration: it only draws when a redraw is due.
  void update(int64_t steps, std::optional<double> recent_return = std::nullopt);
  // Draws the final state (its rate averaged over this process's steps) and ends the line.
  // Called by the destructor if not called before.
  void finish();

  bool is_terminal() const { return terminal_; }

 private:
  void draw(int64_t steps, bool final_draw);

  int64_t total_steps_;
  ProgressBarOptions options_;
  bool terminal_;
  bool finished_ = false;
  Stopwatch since_start_;
  double last_draw_time_ = -1.0;
  int64_t last_rate_steps_ = 0;
  double last_rate_time_ = 0.0;
  double steps_per_second_ = 0.0;
  int64_t latest_steps_ = 0;
  std::optional<double> latest_return_;
};

// The text of one progress line, without terminal control codes, e.g.
// "CartPole-v1 [#######.............] 35%  350,000/1,000,000  2.41M steps/s  return 21.3  ETA 0:00:01".
// A bar is drawn only when `with_bar`; unknown quantities are shown as "-".
std::string format_progress_line(const std::string& label, int64_t steps, int64_t total_steps, double steps_per_second,
                                 std::optional<double> recent_return, bool with_bar);

// 1234567 -> "1,234,567"; 2.5e6 steps/s -> "2.50M".
std::string format_count(int64_t value);
std::string format_rate(double per_second);
// Seconds as H:MM:SS.
std::string format_duration(double seconds);

}  // namespace concord::core
