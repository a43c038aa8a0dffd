#include "concord/policies/runtime/collected_rollout.h"

namespace concord::policies::runtime {

CollectedRollout CollectedRollout::collect(RolloutCollector& collector, algos::Actor& actor) {
  CollectedRollout collected;
  collected.rollout = collector
                          .collect(actor,
                                   [&](double episode_return, int64_t episode_length) {
                                     collected.episodes.emplace_back(episode_return, episode_length);
                                   })
                          .clone();
  return collected;
}

void CollectedRollout::record_episodes(core::EpisodeStats& stats, const TrainingCallbacks& callbacks) const {
  for (const auto& [episode_return, episode_length] : episodes) {
    record_episode(stats, callbacks, episode_return, episode_length);
  }
}

}  // namespace concord::policies::runtime
