#pragma once

#include <cstdint>

namespace concord::policies::runtime {

// How a learner that updates from a replay filled by other threads or processes is paced against
// them (feed_replay, learn_back_to_back): Ape-X's keys (policy.apex.*), and the fixed ratio of
// SEED RL's arrangement under central_inference.
struct ReplayPacing {
  // Learner updates between two publications of its parameters to the actors.
  int64_t publish_every = 1;
  // 0: actors never wait for the learner. N > 0: from learning_starts on, actors start a step only
  // while global_step is below an allowance that grows by N with every update (the replay ratio
  // cannot fall below one update per N env steps).
  int64_t max_env_steps_per_update = 0;
  // 0: the learner updates back to back. N > 0: its u-th update of a run waits until global_step
  // passed max(learning_starts, the run's first step) + (u - 1) x N (the ratio cannot rise above
  // one update per N env steps). At most max_env_steps_per_update when that is set.
  int64_t min_env_steps_per_update = 0;
  double wait_timeout_seconds = 60.0;  // a blocking wait longer than this is an error naming it
};

}  // namespace concord::policies::runtime
