#pragma once

#include <algorithm>
#include <cstdint>

#include "concord/core/config_fields.h"

namespace concord::policies {

// How the `central_inference` policy is laid out (keys policy.central_inference.<field>).
struct CentralInferenceConfig {
  int agents = 8;                        // agent threads; env.num_envs is split among them
  int predictors = 1;                    // predictor threads, each running batched forward passes
  int trainers = 1;                      // trainer threads, each batching segments for the learner
  int prediction_batch = 128;            // most observations one forward pass takes
  int training_batch = 0;                // segments (of T steps x num_envs / agents envs) per update;
                                         //   0: one per agent, so that an update sees
                                         //   env.num_envs x T steps, as under `single`
  int queue_capacity = 16;               // capacity of the prediction queue
  int max_policy_lag = 0;                // updates a segment's first action may be behind the
                                         //   parameters it is trained against (0: agents collect
                                         //   while the learner waits, and the other way round;
                                         //   above 0 only for an algorithm that corrects a lag)
  double wait_timeout_seconds = 60.0;    // a blocking wait longer than this while running is an error
  bool dynamic_adjustment = false;       // GA3C's random walk over the three thread counts
  double adjust_interval_seconds = 2.0;  // how long each configuration is measured

  // Throws std::invalid_argument listing every bad field with its value.
  void validate() const;
  // Segments per update: training_batch, or agents when it is 0.
  int segments_per_update() const { return training_batch > 0 ? training_batch : agents; }
  // Rounds (every agent one segment) per update, rounded up: the bound a resume checks.
  int64_t rounds_per_update() const { return (segments_per_update() + agents - 1) / std::max(agents, 1); }
  // Whether every update is the next segment of each agent, in agent order, each agent holding
  // its own max_policy_lag + 1 slots. Dynamic adjustment parks agents, and a batch of another size
  // does not divide among them, so those runs share one pool of slots and one queue.
  bool per_agent_updates() const { return training_batch == 0 && !dynamic_adjustment; }
  static const core::ConfigFields<CentralInferenceConfig>& fields();
};

}  // namespace concord::policies
