#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "concord/algos/actor.h"
#include "concord/algos/rollout.h"
#include "concord/core/episode_stats.h"
#include "concord/policies/policy.h"
#include "concord/policies/runtime/rollout_collector.h"

namespace concord::policies::runtime {

// A rollout that a collector thread hands to the learner (async_learner's collector,
// central_inference's agents): an owned copy, since the collector reuses its buffers, with the
// parameter version that chose its first action and the episodes that ended in it. The learner
// records those episodes when it takes the rollout, so that every callback runs on its side.
struct CollectedRollout {
  algos::Rollout rollout;
  int64_t version = 0;
  std::vector<std::pair<double, int64_t>> episodes;  // (return, length)
  algos::Metrics bonus_metrics;                      // the exploration bonus's, where the collector added it

  // The collector's next rollout, with `actor` choosing the actions.
  static CollectedRollout collect(RolloutCollector& collector, algos::Actor& actor);
  void record_episodes(core::EpisodeStats& stats, const TrainingCallbacks& callbacks) const;
};

}  // namespace concord::policies::runtime
