#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "concord/core/config.h"
#include "concord/core/metrics_logger.h"
#include "concord/core/progress_bar.h"
#include "concord/envs/vector_env.h"

namespace concord::cli {

// What every run command sets up the same way, in this order: a run directory
// (run.root/<env>__<command>__<seed>__<time>), logging to stderr and run_dir/log.txt, the
// resolved config written to run_dir/config.toml, and the metric sinks.
struct RunContext {
  core::Config config;
  std::filesystem::path run_dir;
  std::unique_ptr<core::MetricsLogger> metrics;

  // A progress bar over `total_steps` as run.progress asks, or nullptr for "off".
  std::unique_ptr<core::ProgressBar> make_progress_bar(int64_t total_steps, const std::string& label) const;
};

// With `existing_run_dir` (resume), that directory is reused instead of making a new one.
// `subject` names what the run is about in the directory name (default: env.id).
RunContext start_run(core::Config config, const std::string& command_name,
                     const std::filesystem::path& existing_run_dir = {}, const std::string& subject = "");

// The environment engine's settings from the [env] section and run.seed.
envs::VectorEnvConfig vector_env_config(const core::Config& config);

}  // namespace concord::cli
