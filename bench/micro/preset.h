#pragma once

// The learners of the micro benchmarks, built as `concord train` builds them from a shipped
// preset: configs/<file> merged into the CLI's schema, its env and its algo.* keys, through the
// algorithm registry. A benchmark that names a preset then measures what the preset runs, and
// cannot drift from it.

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "concord/algos/algorithm_registry.h"
#include "concord/cli/run_config.h"
#include "concord/cli/run_context.h"
#include "concord/core/config.h"
#include "concord/envs/vector_env.h"

namespace concord::bench {

struct Preset {
  std::string file;  // under configs/
  core::Config config;
  envs::VectorEnvConfig env;  // the preset's, seeded 1
};

// configs/<file> with `overrides` ("algo.dqn.n_step=3") on top.
inline Preset read_preset(const std::string& file, const std::vector<std::string>& overrides = {}) {
  core::Config config(cli::concord_schema());
  config.merge_file(std::string(CONCORD_SOURCE_DIR) + "/configs/" + file);
  for (const std::string& assignment : overrides) config.apply_override(assignment);
  envs::VectorEnvConfig env = cli::vector_env_config(config);
  env.seed = 1;
  return Preset{file, std::move(config), std::move(env)};
}

// The preset's learner (train.algo) as LearnerT, its network shaped by the preset's env, with the
// calling thread's LibTorch settings (run.torch_threads, run.flush_denormals) as training sets them.
template <typename LearnerT>
std::unique_ptr<LearnerT> make_learner(const Preset& preset) {
  cli::set_torch_threads(preset.config);
  const envs::VectorEnv probe(preset.env);
  std::unique_ptr<algos::Learner> learner = algos::make_learner(
      preset.config.get_string("train.algo"), preset.config, probe.spec().observation_space, probe.spec().action_space);
  auto* typed = dynamic_cast<LearnerT*>(learner.get());
  if (typed == nullptr) throw std::logic_error("configs/" + preset.file + " does not build the learner asked for");
  learner.release();
  return std::unique_ptr<LearnerT>(typed);
}

}  // namespace concord::bench
