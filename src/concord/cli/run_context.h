#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "concord/core/config.h"
#include "concord/core/metrics_logger.h"
#include "concord/core/progress_bar.h"
#include "concord/core/run_dir_lock.h"
#include "concord/envs/vector_env.h"

namespace concord::cli {

// What every run command sets up the same way, in this order: a run directory
// (run.root/<env>__<command>__<seed>__<time>), logging to stderr and run_dir/log.txt, the
// resolved config written to run_dir/config.toml, and the metric sinks.
struct RunContext {
  core::Config config;
  std::filesystem::path run_dir;
  std::unique_ptr<core::MetricsLogger> metrics;
  // Held for the run's life: one process writes a run directory at a time.
  core::RunDirLock lock;

  // A progress bar over `total_steps` as run.progress asks, or nullptr for "off". A resumed run
  // passes the step it resumed at, so that its rate counts only the steps this process takes.
  std::unique_ptr<core::ProgressBar> make_progress_bar(int64_t total_steps, const std::string& label,
                                                       int64_t start_steps = 0) const;
};

// With `existing_run_dir` (resume), that directory is reused instead of making a new one.
// `subject` names what the run is about in the directory name (default: env.id). The directory is
// locked (core::RunDirLock) before anything is written in it; a caller that took the lock earlier,
// before reading a checkpoint there, hands it over in `lock`.
RunContext start_run(core::Config config, const std::string& command_name,
                     const std::filesystem::path& existing_run_dir = {}, const std::string& subject = "",
                     core::RunDirLock lock = {});

// Where a group restarted by `concord launch --max-restarts` goes on: the run directory rank 0 of
// the failed group declared (launch_control.h); "" outside a restart. `checkpointed` when it holds
// `checkpoint_file` to resume from; without one the run starts afresh in the same directory
// (logged), so that one launched run keeps one directory.
struct RestartedRun {
  std::string run_dir;
  bool checkpointed = false;
};
RestartedRun restarted_run(const std::string& checkpoint_file = "checkpoint.ckpt");

// Throws core::ConfigError unless run.progress is auto, bar, plain or off. start_run checks it
// before it creates anything on disk.
void check_progress_mode(const core::Config& config);

// LibTorch's intra-op threads as run.torch_threads says, and denormal flushing as
// run.flush_denormals says (core::set_flush_denormals). Throws core::ConfigError naming the key
// for a value below 1 or beyond an int (a cast would take 2^32 + 1 for 1).
void set_torch_threads(const core::Config& config);

// The environment engine's settings from the [env] section and run.seed. Throws core::ConfigError
// for an env.num_envs, env.num_threads or env.batch_size beyond what the engine can index.
envs::VectorEnvConfig vector_env_config(const core::Config& config);

// Refuses, in one line, a run that would need more memory than this machine has available
// (MemAvailable), before anything large is allocated: a typo'd size must not grow the process
// into the OOM killer. It counts the envs (their cost per env measured on a small engine of the
// same env), rollouts of `rollout_steps` steps per env with the copies the update and the policy
// keep, the update's activations (`activation_bytes_per_sample` for each sample of a minibatch:
// the whole rollout, or algo.<algo>.num_minibatches-th of it), and an off-policy learner's replay
// (algo.<algo>.buffer_size) where there are no rollouts. `rollout_key` names the setting behind
// `rollout_steps` ("" where nothing is stored per step).
void check_memory_estimate(const core::Config& config, const envs::EnvSpec& spec, int64_t rollout_steps,
                           const std::string& rollout_key, double activation_bytes_per_sample = 0.0);

}  // namespace concord::cli
