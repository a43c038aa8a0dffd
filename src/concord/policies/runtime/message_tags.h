#pragma once

#include "concord/algos/rollout.h"

namespace concord::policies::runtime {

// Every c10d message tag the policies' links between ranks use, in one place, so that no two
// protocols share a tag (sync/ and supervised/ use tags from 0x45410 up). A tag + index range
// holds one message per field or buffer.
namespace tags {

// An actor rank's rollouts to the learner (actor_processes), and its parameters back.
struct Rollouts {
  static constexpr int kShapes = 1;
  static constexpr int kRollout = 10;  // + the rollout's field index
  static constexpr int kEpisodes = 30;
  static constexpr int kVersion = 31;
  static constexpr int kControl = 40;
  static constexpr int kParameters = 41;
  static constexpr int kBuffers = 50;  // + buffer index (observation statistics)
  static constexpr int kLast = 99;     // buffers run up to here
};

// An actor rank's transition segments to the learner's replay (apex), and its parameters back.
struct Transitions {
  static constexpr int kDescription = 101;
  static constexpr int kSegment = 110;  // + the segment's field index
  static constexpr int kMaxSegmentFields = 20;
  static constexpr int kEpisodes = 130;
  static constexpr int kControl = 140;
  static constexpr int kParameters = 141;
};

// The learner's commands to an actor rank's envs (seed_rl), and their results back.
struct Envs {
  static constexpr int kCommand = 150;
  static constexpr int kBatch = 151;
};

static_assert(Rollouts::kRollout + static_cast<int>(algos::Rollout::kFields) <= Rollouts::kEpisodes,
              "a rollout's fields run into the episodes' tag");
static_assert(Rollouts::kLast < Transitions::kDescription, "the two protocols' tags overlap");
static_assert(Transitions::kSegment + Transitions::kMaxSegmentFields <= Transitions::kEpisodes,
              "a segment's fields run into the episodes' tag");
static_assert(Transitions::kParameters < Envs::kCommand, "the env link's tags overlap the transitions'");

}  // namespace tags
}  // namespace concord::policies::runtime
