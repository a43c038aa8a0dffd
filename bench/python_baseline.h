#pragma once

// Runs a CleanRL-style Python script (ppo.py, dqn.py) as a child of a benchmark, so that the
// baseline is measured in the same run, on the same machine, under the same load as Concord.
// Header-only, for bench/ programs; bench/README.md says how to fetch CleanRL and its Python.
//
// What is read from the child's output (stdout and stderr together; other lines are ignored):
//   global_step=<N>, episodic_return=<R>     R bare or in brackets ("[500.]", as numpy prints it)
//   SPS: <S>                                 S = global_step / seconds since the script's start
// The script's own start time is not printed; it is recovered from its last SPS line (the time
// that line arrived, less global_step / S), so that its steps/s and time to solved count from
// where its training starts, as Concord's do, and the interpreter's start-up and imports are
// reported apart. PYTHONUNBUFFERED=1 makes each line arrive when it is printed.

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "concord/core/episode_stats.h"
#include "concord/core/timer.h"

extern char** environ;

namespace concord::bench {

struct BaselineLine {
  enum class Kind { kOther, kEpisode, kRate };
  Kind kind = Kind::kOther;
  int64_t global_step = 0;  // kEpisode
  double value = 0.0;       // kEpisode: the return; kRate: steps/s
};

namespace detail {

// strtod/strtoll on a string_view that need not be terminated; nullopt unless a number starts
// at the front.
inline std::optional<double> leading_double(std::string_view text) {
  const std::string copy(text);
  char* end = nullptr;
  const double value = std::strtod(copy.c_str(), &end);
  if (end == copy.c_str()) return std::nullopt;
  return value;
}

inline std::optional<int64_t> leading_int(std::string_view text) {
  const std::string copy(text);
  char* end = nullptr;
  const long long value = std::strtoll(copy.c_str(), &end, 10);
  if (end == copy.c_str()) return std::nullopt;
  return static_cast<int64_t>(value);
}

}  // namespace detail

inline BaselineLine parse_baseline_line(std::string_view line) {
  BaselineLine parsed;
  constexpr std::string_view kStep = "global_step=";
  constexpr std::string_view kReturn = "episodic_return=";
  constexpr std::string_view kRate = "SPS:";
  if (line.substr(0, kRate.size()) == kRate) {
    if (const auto rate = detail::leading_double(line.substr(kRate.size()))) {
      parsed.kind = BaselineLine::Kind::kRate;
      parsed.value = *rate;
    }
    return parsed;
  }
  if (line.substr(0, kStep.size()) != kStep) return parsed;
  const auto step = detail::leading_int(line.substr(kStep.size()));
  const size_t at = line.find(kReturn);
  if (!step || at == std::string_view::npos) return parsed;
  std::string_view rest = line.substr(at + kReturn.size());
  if (!rest.empty() && rest.front() == '[') rest.remove_prefix(1);
  if (const auto episode_return = detail::leading_double(rest)) {
    parsed.kind = BaselineLine::Kind::kEpisode;
    parsed.global_step = *step;
    parsed.value = *episode_return;
  }
  return parsed;
}

// What one run of the script showed. Times are from the bench's clock.
struct BaselineOutcome {
  int exit_status = 0;         // exit code, or -signal
  double wall_seconds = 0.0;   // start of the process to its exit
  double start_seconds = 0.0;  // start of the process to the script's own start time (estimated)
  double train_seconds = 0.0;  // the script's own start to its last SPS line (wall, if none)
  double peak_rss_mib = 0.0;   // the child's, from wait4
  int64_t steps = 0;  // the largest global step of an episode printed by its last SPS line (or at all, if none)
  double steps_per_second = 0.0;  // its last SPS (steps / wall time, if it printed none)
  bool printed_rate = false;
  int64_t episodes = 0;
  double final_return = 0.0;             // mean of the last `window` episodes
  std::optional<double> solved_seconds;  // since the script's own start
  std::optional<int64_t> solved_steps;
  std::deque<std::string> output_tail;  // its last lines, to show when it fails
};

// Folds the lines of one run into a BaselineOutcome: "solved" is the first time the mean of the
// last `window` episode returns reaches `solved_return`, as the benchmarks define it for Concord.
class BaselineParser {
 public:
  BaselineParser(double solved_return, int window) : solved_return_(solved_return), window_(window), recent_(window) {}

  // `seconds`: when the line arrived, from the start of the process.
  void add_line(std::string_view line, double seconds) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    outcome_.output_tail.emplace_back(line);
    if (outcome_.output_tail.size() > kTailLines) outcome_.output_tail.pop_front();
    const BaselineLine parsed = parse_baseline_line(line);
    if (parsed.kind == BaselineLine::Kind::kEpisode) {
      ++outcome_.episodes;
      recent_.add(parsed.value, 0);
      outcome_.steps = std::max(outcome_.steps, parsed.global_step);
      if (!solved_at_ && recent_.count() >= window_ && *recent_.recent_mean_return() >= solved_return_) {
        solved_at_ = seconds;
        outcome_.solved_steps = parsed.global_step;
      }
    } else if (parsed.kind == BaselineLine::Kind::kRate && parsed.value > 0.0) {
      last_rate_ = parsed.value;
      last_rate_seconds_ = seconds;
      last_rate_steps_ = outcome_.steps;
    }
  }

  // The outcome once the process has ended after `wall_seconds`.
  BaselineOutcome finish(double wall_seconds) {
    outcome_.wall_seconds = wall_seconds;
    outcome_.final_return = recent_.recent_mean_return().value_or(0.0);
    if (last_rate_ && last_rate_steps_ > 0) {
      // SPS is printed after the episode lines of its iteration, so the largest step printed by
      // then is at most the step it was computed at; the gap (under one rollout) only moves the
      // estimated start by that many steps' time.
      outcome_.printed_rate = true;
      outcome_.steps_per_second = *last_rate_;
      outcome_.steps = last_rate_steps_;
      outcome_.train_seconds = static_cast<double>(last_rate_steps_) / *last_rate_;
      outcome_.start_seconds = std::max(0.0, last_rate_seconds_ - outcome_.train_seconds);
    } else {
      outcome_.train_seconds = wall_seconds;
      outcome_.steps_per_second = wall_seconds > 0.0 ? static_cast<double>(outcome_.steps) / wall_seconds : 0.0;
    }
    if (solved_at_) outcome_.solved_seconds = std::max(0.0, *solved_at_ - outcome_.start_seconds);
    return outcome_;
  }

 private:
  static constexpr size_t kTailLines = 6;
  double solved_return_;
  int window_;
  core::EpisodeStats recent_;
  BaselineOutcome outcome_;
  std::optional<double> solved_at_;
  std::optional<double> last_rate_;
  double last_rate_seconds_ = 0.0;
  int64_t last_rate_steps_ = 0;
};

// Runs `python script arguments...` in a fresh temporary directory (the script may write runs/
// there; it is removed afterwards), reads its output line by line and waits for it. Throws when
// the process cannot be started; a script that fails returns its exit status and output tail.
inline BaselineOutcome run_python_baseline(const std::string& python, const std::string& script,
                                           const std::vector<std::string>& arguments, double solved_return,
                                           int window) {
  namespace fs = std::filesystem;
  const fs::path script_path = fs::absolute(script);
  if (!fs::is_regular_file(script_path)) throw std::runtime_error("no such script: " + script);
  const fs::path dir = fs::temp_directory_path() / ("concord_bench_baseline_" + std::to_string(::getpid()));
  fs::create_directories(dir);

  std::vector<std::string> argument_copies{python, script_path.string()};
  argument_copies.insert(argument_copies.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (std::string& argument : argument_copies) argv.push_back(argument.data());
  argv.push_back(nullptr);
  std::vector<std::string> environment{"PYTHONUNBUFFERED=1"};
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, "PYTHONUNBUFFERED=", 17) != 0) environment.emplace_back(*entry);
  }
  std::vector<char*> envp;
  for (std::string& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  core::Stopwatch clock;
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // Only async-signal-safe calls between fork and exec (this process may have threads).
    ::dup2(pipe_fds[1], 1);
    ::dup2(pipe_fds[1], 2);
    if (::chdir(dir.c_str()) != 0) ::_exit(126);
    ::execvpe(argv[0], argv.data(), envp.data());
    static constexpr char kMessage[] = "cannot execute the Python interpreter\n";
    [[maybe_unused]] const ssize_t written = ::write(2, kMessage, sizeof kMessage - 1);
    ::_exit(127);
  }
  ::close(pipe_fds[1]);

  BaselineParser parser(solved_return, window);
  std::string pending;
  char buffer[4096];
  while (true) {
    const ssize_t count = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) break;
    const double now = clock.elapsed_seconds();
    pending.append(buffer, static_cast<size_t>(count));
    size_t begin = 0;
    for (size_t end = pending.find('\n'); end != std::string::npos; end = pending.find('\n', begin)) {
      parser.add_line(std::string_view(pending).substr(begin, end - begin), now);
      begin = end + 1;
    }
    pending.erase(0, begin);
  }
  if (!pending.empty()) parser.add_line(pending, clock.elapsed_seconds());
  ::close(pipe_fds[0]);

  int status = 0;
  rusage usage{};
  while (::wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  BaselineOutcome outcome = parser.finish(clock.elapsed_seconds());
  outcome.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  outcome.peak_rss_mib = static_cast<double>(usage.ru_maxrss) / 1024.0;
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  return outcome;
}

// Empty for a run that exited cleanly and printed episodes; otherwise what went wrong and the
// last lines it printed.
inline std::string describe_failure(const std::string& script, const BaselineOutcome& outcome) {
  std::string text;
  if (outcome.exit_status != 0) {
    text = script + " exited with status " + std::to_string(outcome.exit_status) + "; its last lines:";
  } else if (outcome.episodes == 0) {
    text = script +
           " printed no \"global_step=..., episodic_return=...\" line (another Gymnasium or CleanRL "
           "version?); its last lines:";
  } else {
    return text;
  }
  if (outcome.output_tail.empty()) text += " none";
  for (const std::string& line : outcome.output_tail) text += "\n  " + line;
  return text;
}

// CleanRL's script `script` for one seed and `steps` steps (its own defaults otherwise, on the
// CPU), as ppo_speed and dqn_speed run it beside Concord's runs. Empty, after one line on stderr
// naming `program` and what went wrong, when it cannot start or fails.
inline std::optional<BaselineOutcome> run_cleanrl(const char* program, const std::string& python,
                                                  const std::string& script, int seed, int64_t steps,
                                                  double solved_return, int window) {
  BaselineOutcome outcome;
  try {
    outcome = run_python_baseline(
        python, script, {"--seed", std::to_string(seed), "--total-timesteps", std::to_string(steps), "--no-cuda"},
        solved_return, window);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s: --cleanrl %s: %s\n", program, script.c_str(), error.what());
    return std::nullopt;
  }
  if (const std::string failure = describe_failure(script, outcome); !failure.empty()) {
    std::fprintf(stderr, "%s: --cleanrl: %s\n", program, failure.c_str());
    return std::nullopt;
  }
  return outcome;
}

}  // namespace concord::bench
