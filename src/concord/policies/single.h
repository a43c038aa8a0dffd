#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include <torch/types.h>

#include "concord/algos/learner.h"
#include "concord/core/episode_stats.h"
#include "concord/envs/vector_env.h"

namespace concord::policies {

// Where the training loop stands; saved in every checkpoint and restored on resume.
struct TrainingState {
  int64_t global_step = 0;  // environment steps taken, summed over all envs
  int64_t updates = 0;      // learner updates done
};

// What the loop reports to its owner (the CLI): progress, metrics and checkpoint requests.
struct TrainingCallbacks {
  // After every update, with the learner's metrics plus charts/* from the loop.
  std::function<void(const TrainingState&, const algos::Metrics&, const core::EpisodeStats&)> on_update;
  // When a checkpoint is due (every checkpoint_interval_steps) and at the end.
  std::function<void(const TrainingState&)> on_checkpoint;
  // Polled between steps; returning true stops the loop cleanly (e.g. on SIGINT).
  std::function<bool()> should_stop;
  // When an episode ends, with its return and length (benchmarks time the first solved window).
  std::function<void(double episode_return, int64_t episode_length)> on_episode;
};

// The `single` distribution policy: one thread steps a synchronous VectorEnv, the learner's
// network acts as the Actor fragment, and every rollout_length() steps the Rollout goes to
// learner.update(). It is the reference behaviour that other policies must match.
//
//   repeat: for t < T: a_t ~ pi(o_t); o_{t+1}, r_t, term_t, trunc_t = envs.step(a_t)
//           truncation_values_t = V(final o) where truncated;  bootstrap = V(o_T)
//           metrics = learner.update(rollout, progress = global_step / total_steps)
//
// Continuous actions are clipped to the action space's bounds at the environment boundary
// (what Gymnasium's ClipAction wrapper does); the rollout stores the unclipped sample. All
// tensors live on `device`. Besides the learner's metrics, every update reports charts/SPS and
// time/rollout_seconds, time/update_seconds (wall time spent collecting and learning since the
// loop started), so a benchmark can tell which side bounds throughput. Not thread-safe.
class SinglePolicy {
 public:
  SinglePolicy(envs::VectorEnv& env, algos::Learner& learner, torch::Device device);

  // Trains until state.global_step >= total_steps or callbacks.should_stop() says so.
  // Throws std::runtime_error naming the update and step if a loss becomes NaN or infinite.
  void train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
             const TrainingCallbacks& callbacks);

 private:
  torch::Tensor observation_tensor(const float* rows) const;
  torch::Tensor env_actions(const torch::Tensor& actions) const;

  envs::VectorEnv& env_;
  algos::Learner& learner_;
  torch::Device device_;
  core::EpisodeStats episodes_;
};

}  // namespace concord::policies
