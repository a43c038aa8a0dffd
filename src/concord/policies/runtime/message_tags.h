#pragma once

namespace concord::policies::runtime {

// Every c10d message tag the policies' links between ranks use, in one place, so that no two
// protocols share a tag (sync/ and supervised/ use tags from 0x45410 up). A tag + index range
// holds one message per field or buffer.
namespace tags {

// An actor rank's segments to the learner (actor_processes: rollouts; apex: transitions), and
// the learner's controls and parameters back (experience_link.h).
struct Experience {
  static constexpr int kDescription = 1;
  static constexpr int kSegment = 10;  // + the segment's field index
  static constexpr int kMaxSegmentFields = 20;
  static constexpr int kEpisodes = 30;
  static constexpr int kControl = 40;
  static constexpr int kParameters = 41;  // + index: the flat parameters, then model buffers
  static constexpr int kLast = 99;        // parameters and buffers run up to here
};

// The learner's commands to an actor rank's envs (seed_rl), and their results back.
struct Envs {
  static constexpr int kCommand = 150;
  static constexpr int kBatch = 151;
};

static_assert(Experience::kSegment + Experience::kMaxSegmentFields <= Experience::kEpisodes,
              "a segment's fields run into the episodes' tag");
static_assert(Experience::kLast < Envs::kCommand, "the env link's tags overlap the experience link's");

}  // namespace tags
}  // namespace concord::policies::runtime
