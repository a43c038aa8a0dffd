#pragma once

#include <string>
#include <vector>

#include "concord/comm/launch_environment.h"
#include "concord/core/config.h"

namespace CLI {
class App;
class Validator;
}  // namespace CLI

namespace concord::cli {

// Every config key Concord knows, with its default and doc. `concord config` prints it.
core::ConfigSchema concord_schema();

// The flags every run command shares. Flags such as --env are shorthands for `--set env.id=...`
// and are applied last, after --config files and --set overrides.
struct RunFlags {
  std::vector<std::string> config_files;
  std::vector<std::string> overrides;
  std::string env_id;
  int64_t seed = -1;
  int64_t num_envs = 0;
  int64_t num_threads = 0;
  std::string run_root;
  std::string progress;
};

// Adds --config, --set, --env, --seed, --num-envs, --threads, --run-root and --progress.
void add_run_flags(CLI::App& command, RunFlags& flags);

// A validator for a whole-number flag: "--num-envs: expects a whole number from 1 to 1048576, got
// 'abc'" rather than CLI11's own text.
CLI::Validator count_between(int64_t lowest, int64_t highest);

// defaults <- config files (in order) <- --set overrides <- shorthand flags.
core::Config resolve_config(const RunFlags& flags);

// How every command that joins other processes connects: comm.backend, comm.interface and
// comm.store_on_all_interfaces from `config`; the caller sets the timeout and the fingerprint.
comm::ConnectOptions connect_options(const core::Config& config);

}  // namespace concord::cli
