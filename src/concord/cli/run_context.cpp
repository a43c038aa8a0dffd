#include "concord/cli/run_context.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>

#include <spdlog/spdlog.h>

#include <ATen/Parallel.h>

#include "concord/core/allocator.h"
#include "concord/core/atomic_file.h"
#include "concord/core/blas.h"
#include "concord/core/config_fields.h"
#include "concord/core/logging.h"
#include "concord/core/run_dir.h"
#include "concord/core/torch_thread.h"
#include "concord/envs/mujoco/task_options.h"
#include "concord/launch/launch_control.h"

namespace concord::cli {

RunContext start_run(core::Config config, const std::string& command_name,
                     const std::filesystem::path& existing_run_dir, const std::string& subject, core::RunDirLock lock) {
  // Reject a bad level or progress mode before anything is created on disk.
  core::init_logging(config.get_string("run.log_level"));
  check_progress_mode(config);
  const std::string name = (subject.empty() ? config.get_string("env.id") : subject) + "__" + command_name + "__" +
                           std::to_string(config.get_int("run.seed"));
  RunContext context{std::move(config), {}, nullptr, std::move(lock)};
  context.run_dir =
      existing_run_dir.empty() ? core::create_run_dir(context.config.get_string("run.root"), name) : existing_run_dir;
  if (!context.lock.held()) context.lock = core::RunDirLock(context.run_dir);
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
    // Only where the program could not re-execute itself (Python): concord did (core/blas.h).
    spdlog::warn(
        "OpenBLAS does not know this CPU and chose its {} kernels, slower in matrix products than the ones it "
        "can run; set OPENBLAS_CORETYPE={} before starting",
        core::blas_kernel(), faster);
  } else if (const std::string chosen = core::blas_kernel_chosen_by_concord(); !chosen.empty()) {
    spdlog::debug("OpenBLAS did not know this CPU: concord chose its {} kernels (OPENBLAS_CORETYPE)", chosen);
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

// An [env] count the engine holds in an int, checked here so that the error names the key.
int engine_count(const core::Config& config, const std::string& key, int64_t lowest) {
  const int64_t value = config.get_int(key);
  if (value < lowest) {
    throw core::ConfigError(key + " must be at least " + std::to_string(lowest) + ", got " + std::to_string(value));
  }
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

namespace {

// What one env of the engine really costs (the env object, its generator, the engine's per-env
// buffers), measured on a small engine of the same env: sizes differ by env and by build, and an
// estimate from the observation alone missed most of it (a million CartPoles took 23 GB).
double engine_bytes_per_env(const envs::VectorEnvConfig& config) {
  envs::VectorEnvConfig small = config;
  small.num_envs = static_cast<int>(std::min<int64_t>(config.num_envs, 64));
  small.num_threads = 1;
  small.batch_size = 0;
  const double before = core::heap_bytes_in_use();
  double measured = 0.0;
  {
    envs::VectorEnv engine(small);
    engine.reset();
    measured = core::heap_bytes_in_use() - before;
  }
  return std::max(measured, 0.0) / static_cast<double>(small.num_envs);
}

}  // namespace

void check_memory_estimate(const core::Config& config, const envs::EnvSpec& spec, int64_t rollout_steps,
                           const std::string& rollout_key, double activation_bytes_per_sample) {
  const double available = available_memory_bytes();
  if (available <= 0.0) return;
  const auto num_envs = static_cast<double>(config.get_int("env.num_envs"));
  const double observation = static_cast<double>(spec.observation_space.flat_size()) * 4.0;
  const double action = static_cast<double>(spec.action_space.flat_size()) * 4.0;
  // The engine's envs, measured; the observations the policy holds beside them (two per env).
  const double engines = num_envs * (engine_bytes_per_env(vector_env_config(config)) + 2.0 * observation);
  // A rollout stores observations and actions as float32 plus about eight per-step scalars
  // (reward, value, log-prob, done flags, advantage, return); the update holds a second copy as it
  // flattens and gathers minibatches, and a policy that collects while it learns keeps up to
  // max_policy_lag + 1 more rollouts in flight.
  double rollout_copies = 2.0;
  const std::string lag_key = "policy." + config.get_string("train.policy") + ".max_policy_lag";
  if (config.schema().contains(lag_key)) {
    rollout_copies += static_cast<double>(std::max<int64_t>(config.get_int(lag_key), 0) + 1);
  }
  const double rollouts = rollout_key.empty() ? 0.0
                                              : rollout_copies * num_envs * static_cast<double>(rollout_steps) *
                                                    (observation + action + 64.0);
  // The update's forward and backward passes over one minibatch keep every layer's activations.
  const std::string minibatches_key = "algo." + config.get_string("train.algo") + ".num_minibatches";
  const double minibatches = config.schema().contains(minibatches_key)
                                 ? static_cast<double>(std::max<int64_t>(config.get_int(minibatches_key), 1))
                                 : 1.0;
  const double activations =
      rollout_key.empty() ? 0.0
                          : activation_bytes_per_sample * num_envs * static_cast<double>(rollout_steps) / minibatches;
  // An off-policy learner's replay: both observations of a transition, its action and scalars.
  const std::string replay_key = "algo." + config.get_string("train.algo") + ".buffer_size";
  const double replay = rollout_key.empty() && config.schema().contains(replay_key)
                            ? static_cast<double>(config.get_int(replay_key)) * (2.0 * observation + action + 16.0)
                            : 0.0;
  const double needed = engines + rollouts + activations + replay;
  if (needed > available) {
    std::string parts = "envs " + gigabytes(engines);
    if (rollouts > 0.0) parts += ", rollouts " + gigabytes(rollouts);
    if (activations > 0.0) parts += ", update " + gigabytes(activations);
    if (replay > 0.0) parts += ", replay " + gigabytes(replay);
    const std::string rollout = rollout_key.empty() ? "" : " with " + rollout_key + "=" + std::to_string(rollout_steps);
    std::string lower = "env.num_envs";
    if (!rollout_key.empty()) lower += " or " + rollout_key;
    if (replay > 0.0) lower += " or " + replay_key;
    throw core::ConfigError("env.num_envs=" + std::to_string(config.get_int("env.num_envs")) + rollout +
                            " needs about " + gigabytes(needed) + " (" + parts + "), more than the " +
                            gigabytes(available) + " of memory available; lower " + lower);
  }
}

envs::VectorEnvConfig vector_env_config(const core::Config& config) {
  envs::VectorEnvConfig result;
  result.env_id = config.get_string("env.id");
  result.num_envs = engine_count(config, "env.num_envs", 1);
  result.num_threads = engine_count(config, "env.num_threads", 1);
  result.batch_size = engine_count(config, "env.batch_size", 0);
  result.seed = static_cast<uint64_t>(config.get_int("run.seed"));
  result.recv_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(config.get_double("env.recv_timeout_seconds") * 1000.0));
  // Only settings that differ from their defaults reach the envs, and an env refuses a setting it
  // does not have; a run's saved config.toml, which spells out every default, still resumes.
  const auto& defaults = config.schema();
  if (config.get("env.sticky_action_probability") != defaults.at("env.sticky_action_probability").default_value) {
    result.options.sticky_action_probability = config.get_double("env.sticky_action_probability");
  }
  if (const int64_t steps = config.get_int("env.max_episode_steps"); steps != 0) {
    if (steps < 0 || steps > std::numeric_limits<int>::max()) {
      throw std::invalid_argument("env.max_episode_steps = " + std::to_string(steps) +
                                  " must lie in [1, 2147483647] (0: the environment's own limit)");
    }
    result.options.max_episode_steps = static_cast<int>(steps);
  }
  if (config.get("env.step_timeout_seconds") != defaults.at("env.step_timeout_seconds").default_value) {
    result.options.step_timeout_seconds = config.get_double("env.step_timeout_seconds");
  }
  if (config.get("env.difficulty_ramping") != defaults.at("env.difficulty_ramping").default_value) {
    result.options.difficulty_ramping = config.get_bool("env.difficulty_ramping");
  }
  // MuJoCo tasks: nan, "" and 0 are the task's own values; the booleans reach the task when they
  // differ from Gymnasium's defaults, which every task shares.
  envs::EnvOptions& options = result.options;
  if (std::string file = config.get_string("env.model_file"); !file.empty()) options.model_file = file;
  if (const int64_t skip = config.get_int("env.frame_skip"); skip != 0) {
    if (skip < 1 || skip > 1'000'000) {
      throw std::invalid_argument("env.frame_skip = " + std::to_string(skip) +
                                  " must lie in [1, 1000000] (0: the task's own)");
    }
    options.frame_skip = static_cast<int>(skip);
  }
  const auto number = [&config](const char* key, std::optional<double>& field) {
    if (const double value = config.get_double(key); !std::isnan(value)) field = value;
  };
  number("env.forward_reward_weight", options.forward_reward_weight);
  number("env.ctrl_cost_weight", options.ctrl_cost_weight);
  number("env.healthy_reward", options.healthy_reward);
  number("env.reset_noise_scale", options.reset_noise_scale);
  number("env.contact_cost_weight", options.contact_cost_weight);
  number("env.reward_dist_weight", options.reward_dist_weight);
  number("env.reward_control_weight", options.reward_control_weight);
  if (std::string body = config.get_string("env.forward_body"); !body.empty()) options.forward_body = body;
  if (std::string text = config.get_string("env.contact_force_range"); !text.empty()) {
    options.contact_force_range = envs::mujoco::parse_range(text, "env.contact_force_range");
  }
  if (std::string text = config.get_string("env.contact_cost_range"); !text.empty()) {
    options.contact_cost_range = envs::mujoco::parse_range(text, "env.contact_cost_range");
  }
  if (!config.get_bool("env.include_cfrc_ext_in_observation")) options.include_cfrc_ext_in_observation = false;
  if (!config.get_bool("env.include_cinert_in_observation")) options.include_cinert_in_observation = false;
  if (!config.get_bool("env.include_cvel_in_observation")) options.include_cvel_in_observation = false;
  if (!config.get_bool("env.include_qfrc_actuator_in_observation")) {
    options.include_qfrc_actuator_in_observation = false;
  }
  number("env.uph_cost_weight", options.uph_cost_weight);
  number("env.impact_cost_weight", options.impact_cost_weight);
  if (std::string text = config.get_string("env.impact_cost_range"); !text.empty()) {
    options.impact_cost_range = envs::mujoco::parse_range(text, "env.impact_cost_range");
  }
  if (config.get_bool("env.observe_sensors")) options.observe_sensors = true;
  if (std::string text = config.get_string("env.healthy_z_range"); !text.empty()) {
    options.healthy_z_range = envs::mujoco::parse_range(text, "env.healthy_z_range");
  }
  if (std::string text = config.get_string("env.healthy_angle_range"); !text.empty()) {
    options.healthy_angle_range = envs::mujoco::parse_range(text, "env.healthy_angle_range");
  }
  if (!config.get_bool("env.exclude_current_positions_from_observation")) {
    options.exclude_current_positions_from_observation = false;
  }
  if (!config.get_bool("env.terminate_when_unhealthy")) options.terminate_when_unhealthy = false;
  return result;
}

}  // namespace concord::cli
