#pragma once

#include <string>
#include <vector>

#include "concord/core/config.h"

namespace concord::cli {

// The bounds of every number a user can type, in one table (config_bounds.cpp), checked on the
// resolved config before anything is built or written:
//   - an int key lies within its row's [lowest, highest]; a key no row names is a count in
//     [0, 2^31 - 1];
//   - a thread count (env.num_threads, run.torch_threads, the workers, actors, agents, predictors
//     and trainers of the policies, fit.workers, gan.pairs) is at most kThreadsPerHardwareThread
//     times std::thread::hardware_concurrency(), unless run.allow_oversubscribe is true;
//   - a float key is finite (nan only where its default is nan, "the task's own"), a timeout
//     (*timeout_seconds) lies in (0, 10^6] and any other *_seconds key in [0, 10^6];
//   - a string key (a name, a path) is at most 4096 bytes, without control characters;
//   - relations: env.num_threads <= env.num_envs, and the chosen algorithm's num_minibatches at
//     most the samples of its rollout (num_steps x env.num_envs) they divide.
// Components still check what only they know (a batch size against a buffer, say).

constexpr int kThreadsPerHardwareThread = 8;

// One row of the table: keys matching `pattern` (fnmatch: '*' matches any characters, dots
// included), the least and greatest value, and what a value means where that helps ("0: off").
struct ConfigBound {
  const char* pattern;
  double lowest;
  double highest;
  bool threads = false;  // highest is the machine's thread limit instead
  const char* note = "";
};

// The rows, first match wins.
const std::vector<ConfigBound>& config_bounds();

// The greatest thread count a key may take on this machine without run.allow_oversubscribe.
int thread_limit();

// One problem per key outside its bound, each naming the key, the value and the bound
// ("policy.hogwild.workers=100000 is too large (at most 16: ...)"); empty if none. Without
// `machine_limits` thread counts are bounded by an int only: a resumed run keeps the threads it
// was started with on another machine, for its config may not change.
std::vector<std::string> config_bound_problems(const core::Config& config, bool machine_limits = true);

// Throws core::ConfigError with every problem of config_bound_problems in one line.
void check_config_bounds(const core::Config& config, bool machine_limits = true);

}  // namespace concord::cli
