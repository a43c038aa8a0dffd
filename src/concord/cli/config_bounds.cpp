#include "concord/cli/config_bounds.h"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <thread>

namespace concord::cli {
namespace {

constexpr double kInt = 2147483647.0;          // what an int member holds
constexpr double kSteps = 1125899906842624.0;  // 2^50, as --total-timesteps
constexpr double kUnbounded = std::numeric_limits<double>::infinity();
constexpr double kLongestSeconds = 1e6;  // 11.6 days: any longer wait is a typo
constexpr const char* kOversubscribe = "run.allow_oversubscribe";
constexpr size_t kLongestText = 4096;  // PATH_MAX: the longest path a string key holds

// A number as a user would write it: whole numbers without a fraction.
std::string number(double value) {
  char text[48];
  if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 1e18) {
    std::snprintf(text, sizeof(text), "%.0f", value);
  } else {
    std::snprintf(text, sizeof(text), "%g", value);
  }
  return text;
}

const ConfigBound* bound_for(const std::string& key) {
  for (const ConfigBound& bound : config_bounds()) {
    if (::fnmatch(bound.pattern, key.c_str(), 0) == 0) return &bound;
  }
  return nullptr;
}

std::string with_note(const std::string& problem, const char* note) {
  return *note == '\0' ? problem : problem + " (" + note + ")";
}

}  // namespace

const std::vector<ConfigBound>& config_bounds() {
  static const std::vector<ConfigBound> kBounds = {
      // Threads: each one a user asks for is started, so a typo must not start 100,000 of them.
      {"env.num_threads", 1, 0, true},
      {"run.torch_threads", 1, 0, true},
      {"fit.workers", 1, 0, true},
      {"gan.pairs", 1, 0, true},
      {"policy.*.workers", 1, 0, true},
      {"policy.*.actors", 1, 0, true},
      {"policy.*.agents", 1, 0, true},
      {"policy.*.predictors", 1, 0, true},
      {"policy.*.trainers", 1, 0, true},
      // Sizes that cost memory: the memory estimate weighs them against the machine
      // (check_memory_estimate), and the engine against an int.
      {"env.num_envs", 1, kUnbounded},
      {"algo.*.num_steps", 1, kUnbounded},
      {"algo.*.buffer_size", 1, kUnbounded},
      {"env.batch_size", 0, kInt, false, "0: synchronous"},
      {"env.max_episode_steps", 0, kInt, false, "0: the environment's own limit"},
      {"env.frame_skip", 0, 1e6, false, "0: the task's own"},
      // Lengths in env steps, as the command-line flags bound them.
      {"train.total_timesteps", 1, kSteps},
      {"train.checkpoint_interval_steps", 1, kSteps},
      {"train.keep_checkpoints", 1, 1e6},
      {"log.interval_steps", 0, kSteps, false, "0: every update"},
      {"rollout.steps", 1, kSteps},
      {"algo.*.learning_starts", 0, kSteps},
      {"algo.*.exploration_steps", 0, kSteps, false, "0: exploration_fraction of the total"},
      {"algo.*.target_network_frequency", 1, kInt},
      {"algo.*.train_frequency", 1, kInt},
      {"algo.*.policy_frequency", 1, kInt},
      {"algo.sac.sde_sample_freq", -1, kInt, false, "-1: once per rollout"},
      // Iterations within one update: each costs a pass, and a typo would never finish.
      {"algo.*.update_epochs", 1, 10000},
      {"algo.*.gradient_steps", 1, 100000},
      {"algo.*.num_minibatches", 1, kInt},
      {"algo.*.n_step", 1, 10000},
      {"explore.ae.updates_per_batch", 1, 10000},
      {"fit.abs.power_iterations", 1, 1e6},
      {"fit.fedavg.local_epochs", 1, 10000},
      // Lengths of the other commands, as their flags bound them.
      {"fit.steps", 1, 1099511627776.0},
      {"fit.fedavg.rounds", 1, 1099511627776.0},
      {"fit.epochs", 0, 1073741824.0, false, "0: --steps decides"},
      {"gan.steps", 1, 1099511627776.0},
      {"eval.episodes", 1, 10000},
      {"run.seed", 0, 4611686018427387904.0},
      // Waits: a timeout of 0 fails every wait, inf overflows the clock.
      {"train.checkpoint_interval_seconds", 0, kLongestSeconds, false, "0: off"},
      {"env.step_timeout_seconds", 0, kLongestSeconds, false, "0: no bound, each call on the engine's own thread"},
      {"*timeout_seconds", 0, kLongestSeconds},
      {"*_seconds", 0, kLongestSeconds},
  };
  return kBounds;
}

int thread_limit() {
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  return kThreadsPerHardwareThread * static_cast<int>(hardware);
}

std::vector<std::string> config_bound_problems(const core::Config& config, bool machine_limits) {
  std::vector<std::string> problems;
  const bool oversubscribe =
      !machine_limits || (config.schema().contains(kOversubscribe) && config.get_bool(kOversubscribe));
  for (const auto& [key, entry] : config.schema().entries()) {
    const core::ConfigValue& value = config.get(key);
    const ConfigBound* bound = bound_for(key);
    if (const auto* whole = std::get_if<int64_t>(&value)) {
      const double lowest = bound != nullptr ? bound->lowest : 0.0;
      double highest = bound != nullptr ? bound->highest : kInt;
      const char* note = bound != nullptr ? bound->note : "";
      if (bound != nullptr && bound->threads) {
        if (oversubscribe) {
          highest = kInt;
        } else {
          highest = thread_limit();
        }
      }
      const auto exact = static_cast<long double>(*whole);
      if (exact < static_cast<long double>(lowest)) {
        problems.push_back(
            with_note(key + " must be at least " + number(lowest) + ", got " + std::to_string(*whole), note));
      } else if (exact > static_cast<long double>(highest)) {
        std::string limit = number(highest);
        if (bound != nullptr && bound->threads && !oversubscribe) {
          limit += ": " + std::to_string(kThreadsPerHardwareThread) + " threads for each of this machine's " +
                   std::to_string(thread_limit() / kThreadsPerHardwareThread) +
                   " hardware threads; set run.allow_oversubscribe=true to start more";
        }
        problems.push_back(
            with_note(key + "=" + std::to_string(*whole) + " is too large (at most " + limit + ")", note));
      }
    } else if (const auto* text = std::get_if<std::string>(&value)) {
      // A name or a path: a pasted file or a stray newline would reach messages and directory names.
      if (text->size() > kLongestText) {
        problems.push_back(key + " is " + std::to_string(text->size()) + " bytes long (at most " +
                           std::to_string(kLongestText) + ")");
        continue;
      }
      const auto control = std::find_if(text->begin(), text->end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) == 0x7f;
      });
      if (control != text->end()) {
        char code[8];
        std::snprintf(code, sizeof(code), "0x%02x", static_cast<unsigned char>(*control));
        problems.push_back(key + " holds a control character (" + code + " at byte " +
                           std::to_string(control - text->begin()) + ")");
      }
    } else if (const auto* real = std::get_if<double>(&value)) {
      const bool may_be_nan =
          std::holds_alternative<double>(entry.default_value) && std::isnan(std::get<double>(entry.default_value));
      if (std::isnan(*real) && may_be_nan) continue;
      if (!std::isfinite(*real)) {
        problems.push_back(key + " must be a finite number, got " + number(*real));
        continue;
      }
      if (bound == nullptr) continue;
      // A timeout of 0 fails every wait, unless its own row gives 0 a meaning.
      const bool timeout = std::strcmp(bound->pattern, "*timeout_seconds") == 0;
      if (timeout ? !(*real > bound->lowest) : *real < bound->lowest) {
        problems.push_back(with_note(
            key + " must be " + (timeout ? "above " : "at least ") + number(bound->lowest) + ", got " + number(*real),
            bound->note));
      } else if (*real > bound->highest) {
        problems.push_back(with_note(
            key + "=" + number(*real) + " is too large (at most " + number(bound->highest) + ")", bound->note));
      }
    }
  }
  // An empty run.root would put runs in the working directory's ./runs... or wherever "" leads.
  if (config.schema().contains("run.root") && config.get_string("run.root").empty()) {
    problems.push_back("run.root is empty: name the directory runs go under (default runs)");
  }
  // Relations between keys.
  const int64_t num_envs = config.get_int("env.num_envs");
  if (const int64_t threads = config.get_int("env.num_threads"); num_envs >= 1 && threads > num_envs) {
    problems.push_back("env.num_threads=" + std::to_string(threads) + " is more than env.num_envs=" +
                       std::to_string(num_envs) + ": each thread steps at least one env");
  }
  const std::string algo = "algo." + config.get_string("train.algo") + ".";
  if (config.schema().contains(algo + "num_minibatches") && config.schema().contains(algo + "num_steps")) {
    const int64_t minibatches = config.get_int(algo + "num_minibatches");
    const int64_t steps = config.get_int(algo + "num_steps");
    if (steps >= 1 && num_envs >= 1 && steps <= (int64_t{1} << 40) / num_envs && minibatches > steps * num_envs) {
      problems.push_back(algo + "num_minibatches=" + std::to_string(minibatches) + " is more than the " +
                         std::to_string(steps * num_envs) + " samples of a rollout (" + algo +
                         "num_steps x env.num_envs) it divides");
    }
  }
  return problems;
}

void check_config_bounds(const core::Config& config, bool machine_limits) {
  const std::vector<std::string> problems = config_bound_problems(config, machine_limits);
  if (problems.empty()) return;
  std::string line;
  for (const std::string& problem : problems) line += (line.empty() ? "" : "; ") + problem;
  throw core::ConfigError(line);
}

}  // namespace concord::cli
