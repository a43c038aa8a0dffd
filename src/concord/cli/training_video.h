#pragma once

#include <cstdint>
#include <filesystem>

#include "concord/core/config.h"

namespace concord::cli {

// train.capture_video (`concord train --capture-video`, CleanRL's flag): at each checkpoint and at
// the end, one episode of the agent as that checkpoint holds it is filmed into
// RUN/videos/step_<global step>.mp4, as `concord eval RUN --video` films it (greedy, the eval
// seed), so a run's videos show what it learned along the way and the board shows the newest.
class TrainingVideos {
 public:
  // Off unless `config` asks. Throws std::invalid_argument naming train.capture_video when no
  // renderer draws the env, and what the renderer throws when it cannot draw here (MuJoCo without
  // EGL), before a run begins.
  explicit TrainingVideos(const core::Config& config);

  // Films the checkpoint just written to `run_dir` for `global_step`. The filming seeds LibTorch's
  // generator, whose state is put back after, so the run trains as it would without videos. A
  // video that fails is a warning in the log: the run goes on. A step already filmed (the last
  // update's checkpoint, then the final one) is not filmed again.
  void film(const std::filesystem::path& run_dir, int64_t global_step);

 private:
  bool enabled_ = false;
  int64_t filmed_step_ = -1;
};

}  // namespace concord::cli
