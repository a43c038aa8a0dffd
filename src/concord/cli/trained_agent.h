#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>

#include "concord/algos/learner.h"
#include "concord/core/checkpoint.h"
#include "concord/core/config.h"
#include "concord/envs/env.h"
#include "concord/policies/runtime/evaluation.h"

namespace concord::cli {

// A checkpoint written by `concord train` and the training config saved inside it: everything
// needed to rebuild the agent, with no other file. `concord eval` and the Python module's
// concord.load() / concord.evaluate() read agents this way.
struct TrainedCheckpoint {
  std::filesystem::path file;
  core::Checkpoint checkpoint;
  core::Config config;
  int64_t global_step = 0;
};

// A checkpoint file, or a run directory holding one. Throws core::CheckpointError for a missing or
// corrupt file or one without a training config.
TrainedCheckpoint read_trained_checkpoint(const std::filesystem::path& run_dir_or_file);

// The run's environment spec and its learner (train.algo over [algo]) restored from the
// checkpoint, on the CPU. Builds the network, so it draws from LibTorch's global generator:
// seed it first when what follows must be reproducible.
struct TrainedAgent {
  envs::EnvSpec spec;
  std::unique_ptr<algos::Learner> learner;
};
TrainedAgent restore_trained_agent(const TrainedCheckpoint& trained);

struct EvaluationReport {
  std::string algo;
  std::string env_id;
  int64_t global_step = 0;
  int64_t episodes = 0;
  uint64_t seed = 0;
  bool stochastic = false;
  std::vector<double> returns;  // one per episode, in environment order
  policies::runtime::ReturnSummary summary;
  int64_t cut_at_limit = 0;  // episodes truncated at step_limit (policies::Evaluation)
  int step_limit = 0;        // the limit evaluation imposed; 0 where the env has its own
};

// The seed `concord eval` gives its environments unless told one: run.seed + kEvalSeedOffset of
// the run's `config`, so that evaluation never replays a training env's stream.
inline uint64_t evaluation_seed(const core::Config& config) {
  return static_cast<uint64_t>(config.get_int("run.seed") + policies::runtime::kEvalSeedOffset);
}

// `concord eval`: the agent's mode (or samples, when `stochastic`) for `episodes` episodes
// (default eval.episodes) in environments seeded `seed` (default run.seed + kEvalSeedOffset),
// which also seeds LibTorch before the network is built. An env without a time limit is truncated
// at `step_limit` steps (policies::kEvaluationStepLimit).
EvaluationReport evaluate_trained_checkpoint(const std::filesystem::path& run_dir_or_file,
                                             std::optional<int64_t> episodes = std::nullopt,
                                             std::optional<uint64_t> seed = std::nullopt, bool stochastic = false,
                                             int step_limit = policies::runtime::kEvaluationStepLimit);

}  // namespace concord::cli
