#pragma once

#include <cstdint>
#include <filesystem>

#include "concord/cli/trained_agent.h"

namespace concord::cli {

struct EpisodeVideo {
  std::filesystem::path file;
  int64_t frames = 0;  // the first observation and one after every step
  double episode_return = 0.0;
  bool cut_at_limit = false;  // the episode reached `step_limit` without ending
  double seconds = 0.0;       // acting, drawing and encoding, all together
};

// `concord eval --video`: one episode of the trained agent in a fresh env seeded `seed`, acting as
// `concord eval` does (its mode, or samples when `stochastic`; continuous actions clipped to the
// bounds), drawn by the env's renderer (envs/rendering.h) and written to `file` (VideoWriter).
// Episodes without a time limit are cut at `step_limit` steps. Throws std::invalid_argument for an
// env no renderer draws.
EpisodeVideo record_episode_video(const TrainedCheckpoint& trained, const std::filesystem::path& file, uint64_t seed,
                                  bool stochastic, int step_limit);

}  // namespace concord::cli
