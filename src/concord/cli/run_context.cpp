#include "concord/cli/run_context.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>

#include <spdlog/spdlog.h>

#include <ATen/Parallel.h>

#include "concord/core/atomic_file.h"
#include "concord/core/blas.h"
#include "concord/core/config_fields.h"
#include "concord/core/logging.h"
#include "concord/core/run_dir.h"
#include "concord/core/torch_thread.h"
#include "concord/launch/launch_control.h"

namespace concord::cli {

RunContext start_run(core::Config config, const std::string& command_name,
                     const std::filesystem::path& existing_run_dir, const std::string& subject) {
  // Reject a bad level or progress mode before anything is created on disk.
  core::init_logging(config.get_string("run.log_level"));
  check_progress_mode(config);
  const std::string name = (subject.empty() ? config.get_string("env.id") : subject) + "__" + command_name + "__" +
                           std::to_string(config.get_int("run.seed"));
  RunContext context{std::move(config), {}, nullptr};
  context.run_dir =
      existing_run_dir.empty() ? core::create_run_dir(context.config.get_string("run.root"), name) : existing_run_dir;
  core::init_logging(context.config.get_string("run.log_level"), (context.run_dir / "log.txt").string());
  if (!existing_run_dir.empty()) {
    const int removed = core::remove_stale_temporaries(context.run_dir);
    if (removed > 0)
      spdlog::info("removed {} temporary file(s) a killed run left in {}", removed, context.run_dir.string());
  }
  core::write_file_atomically(context.run_dir / "config.toml", context.config.to_toml());
  context.metrics = std::make_unique<core::MetricsLogger>(context.run_dir, context.config.get_bool("log.csv"),
                                                          context.config.get_bool("log.tensorboard"),
                                                          /*append=*/!existing_run_dir.empty());
  spdlog::info("run directory {}", context.run_dir.string());
  if (const std::string faster = core::faster_blas_kernel(); !faster.empty()) {
    spdlog::warn(
        "OpenBLAS does not know this CPU and chose its generic Prescott kernels, several times slower in "
        "matrix products; set OPENBLAS_CORETYPE={} to use the ones this CPU can run",
        faster);
  }
  launch::declare_run_dir(context.run_dir);  // for `concord launch --max-restarts`
  return context;
}

RestartedRun restarted_run(const std::string& checkpoint_file) {
  RestartedRun restarted{launch::restart_run_dir(), false};
  if (restarted.run_dir.empty()) return restarted;
  restarted.checkpointed = std::filesystem::exists(std::filesystem::path(restarted.run_dir) / checkpoint_file);
  if (restarted.checkpointed) {
    spdlog::warn("restarted: continuing {} from its last checkpoint", restarted.run_dir);
  } else {
    spdlog::warn("restarted, but {} holds no {} yet: starting afresh in it", restarted.run_dir, checkpoint_file);
  }
  return restarted;
}

void set_torch_threads(const core::Config& config) {
  const int threads = core::get_int_in_range(config, "run.torch_threads");
  if (threads < 1) throw core::ConfigError("run.torch_threads must be >= 1, got " + std::to_string(threads));
  at::set_num_threads(threads);
  core::set_flush_denormals(config.get_bool("run.flush_denormals"));
}

void check_progress_mode(const core::Config& config) {
  const std::string mode = config.get_string("run.progress");
  if (mode != "auto" && mode != "bar" && mode != "plain" && mode != "off") {
    throw core::ConfigError("run.progress must be auto, bar, plain or off, got '" + mode + "'");
  }
}

std::unique_ptr<core::ProgressBar> RunContext::make_progress_bar(int64_t total_steps, const std::string& label,
                                                                 int64_t start_steps) const {
  check_progress_mode(config);
  const std::string mode = config.get_string("run.progress");
  core::ProgressBarOptions options;
  options.label = label;
  options.start_steps = start_steps;
  options.plain_interval_seconds = config.get_double("run.progress_interval_seconds");
  if (mode == "off") return nullptr;
  if (mode == "bar") options.force_terminal = true;
  if (mode == "plain") options.force_terminal = false;
  return std::make_unique<core::ProgressBar>(total_steps, options);
}

namespace {

// An [env] count the engine holds in an int; the engine itself checks the lower bounds.
int engine_count(const core::Config& config, const std::string& key) {
  const int64_t value = config.get_int(key);
  if (value > std::numeric_limits<int>::max()) {
    throw core::ConfigError(key + "=" + std::to_string(value) + " is too large (at most " +
                            std::to_string(std::numeric_limits<int>::max()) + ")");
  }
  return static_cast<int>(std::max<int64_t>(value, std::numeric_limits<int>::min()));
}

// /proc/meminfo's MemAvailable in bytes, or 0 where it cannot be read.
double available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string name;
  double kib = 0.0;
  std::string unit;
  while (meminfo >> name >> kib >> unit) {
    if (name == "MemAvailable:") return kib * 1024.0;
  }
  return 0.0;
}

std::string gigabytes(double bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3g GB", bytes / 1e9);
  return text;
}

}  // namespace

void check_memory_estimate(const core::Config& config, const envs::EnvSpec& spec, int64_t rollout_steps,
                           const std::string& rollout_key) {
  const double available = available_memory_bytes();
  if (available <= 0.0) return;
  const auto num_envs = static_cast<double>(config.get_int("env.num_envs"));
  // Rollouts store observations and actions as float32, plus about eight per-step scalars (reward,
  // value, log-prob, done flags, advantage, return); the engine keeps two observations per env.
  const double observation = static_cast<double>(spec.observation_space.flat_size()) * 4.0;
  const double action = static_cast<double>(spec.action_space.flat_size()) * 4.0;
  const double per_env = static_cast<double>(rollout_steps) * (observation + action + 64.0) + 2.0 * observation;
  const double needed = num_envs * per_env;
  if (needed > available) {
    const std::string rollout = rollout_key.empty() ? "" : " with " + rollout_key + "=" + std::to_string(rollout_steps);
    throw core::ConfigError("env.num_envs=" + std::to_string(config.get_int("env.num_envs")) + rollout +
                            " needs at least " + gigabytes(needed) + " for its buffers, more than the " +
                            gigabytes(available) + " of memory available; lower env.num_envs" +
                            (rollout_key.empty() ? "" : " or " + rollout_key));
  }
}

envs::VectorEnvConfig vector_env_config(const core::Config& config) {
  envs::VectorEnvConfig result;
  result.env_id = config.get_string("env.id");
  result.num_envs = engine_count(config, "env.num_envs");
  result.num_threads = engine_count(config, "env.num_threads");
  result.batch_size = engine_count(config, "env.batch_size");
  result.seed = static_cast<uint64_t>(config.get_int("run.seed"));
  result.recv_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(config.get_double("env.recv_timeout_seconds") * 1000.0));
  // Only settings that differ from their defaults reach the envs, and an env refuses a setting it
  // does not have; a run's saved config.toml, which spells out every default, still resumes.
  const auto& defaults = config.schema();
  if (config.get("env.sticky_action_probability") != defaults.at("env.sticky_action_probability").default_value) {
    result.options.sticky_action_probability = config.get_double("env.sticky_action_probability");
  }
  if (config.get("env.difficulty_ramping") != defaults.at("env.difficulty_ramping").default_value) {
    result.options.difficulty_ramping = config.get_bool("env.difficulty_ramping");
  }
  return result;
}

}  // namespace concord::cli
