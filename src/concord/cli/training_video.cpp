#include "concord/cli/training_video.h"

#include <mutex>
#include <stdexcept>
#include <string>

#include <ATen/CPUGeneratorImpl.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "concord/cli/episode_video.h"
#include "concord/cli/run_context.h"
#include "concord/cli/trained_agent.h"
#include "concord/cli/training_checkpoint.h"
#include "concord/envs/registry.h"
#include "concord/envs/rendering.h"
#include "concord/policies/runtime/evaluation.h"

namespace concord::cli {

TrainingVideos::TrainingVideos(const core::Config& config) : enabled_(config.get_bool("train.capture_video")) {
  if (!enabled_) return;
  const envs::VectorEnvConfig env_config = vector_env_config(config);
  const std::unique_ptr<envs::Env> env = envs::make_env(env_config.env_id, env_config.options);
  if (!envs::make_env_renderer(*env)) {
    throw std::invalid_argument("train.capture_video: no renderer draws " + env->spec().id + " (videos are made of " +
                                envs::renderable_envs() + ")");
  }
}

void TrainingVideos::film(const std::filesystem::path& run_dir, int64_t global_step) {
  if (!enabled_ || global_step == filmed_step_) return;
  filmed_step_ = global_step;
  const std::filesystem::path file = run_dir / "videos" / ("step_" + std::to_string(global_step) + ".mp4");
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  at::Tensor training_draws;
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    training_draws = generator.get_state();
  }
  try {
    const TrainedCheckpoint trained = read_trained_checkpoint(checkpoint_path(run_dir));
    const EpisodeVideo video = record_episode_video(trained, file, evaluation_seed(trained.config),
                                                    /*stochastic=*/false, policies::runtime::kEvaluationStepLimit);
    spdlog::info("video {}: {} frames of one episode (return {:.2f}) in {:.2f} s", file.string(), video.frames,
                 video.episode_return, video.seconds);
  } catch (const std::exception& error) {
    spdlog::warn("train.capture_video: no video at step {}: {}", global_step, error.what());
  }
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(training_draws);
}

}  // namespace concord::cli
