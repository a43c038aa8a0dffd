#include "concord/cli/episode_video.h"

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "concord/cli/run_context.h"
#include "concord/cli/video_writer.h"
#include "concord/core/timer.h"
#include "concord/envs/registry.h"
#include "concord/envs/rendering.h"

namespace concord::cli {

EpisodeVideo record_episode_video(const TrainedCheckpoint& trained, const std::filesystem::path& file, uint64_t seed,
                                  bool stochastic, int step_limit) {
  core::Stopwatch clock;
  const envs::VectorEnvConfig env_config = vector_env_config(trained.config);
  std::unique_ptr<envs::Env> env = envs::make_env(env_config.env_id, env_config.options);
  const envs::EnvSpec spec = env->spec();
  std::unique_ptr<envs::EnvRenderer> renderer = envs::make_env_renderer(*env);
  if (!renderer) {
    throw std::invalid_argument("--video: no renderer draws " + spec.id + " (videos are made of " +
                                envs::renderable_envs() + ")");
  }
  if (!VideoWriter::supports(file)) {
    throw std::invalid_argument("--video: '" + file.string() + "' must end in .mp4 or .gif");
  }
  torch::manual_seed(seed);
  set_torch_threads(trained.config);
  const TrainedAgent agent = restore_trained_agent(trained);
  const envs::Space& observations = spec.observation_space;
  const envs::Space& actions = spec.action_space;
  std::vector<int64_t> shape{1};
  for (int64_t dim : observations.tensor_shape()) shape.push_back(dim);
  const bool bytes = observations.dtype() == envs::Dtype::kUInt8;
  torch::Tensor observation = torch::zeros(shape, bytes ? torch::kUInt8 : torch::kFloat32);
  std::vector<float> action_values(static_cast<size_t>(actions.is_discrete() ? 0 : actions.flat_size()));

  VideoWriter writer(file, renderer->width(), renderer->height(), renderer->frames_per_second());
  envs::RgbFrame frame;
  std::vector<uint8_t> snapshot;
  const auto film = [&] {
    renderer->capture(*env, observation.data_ptr(), snapshot);
    renderer->render(snapshot.data(), frame);
    writer.add(frame);
  };
  EpisodeVideo video{file, 0, 0.0, false, 0.0};
  env->reset(seed, observation.data_ptr());
  const int limit = spec.max_episode_steps > 0 ? 0 : step_limit;
  torch::NoGradGuard no_grad;
  algos::ActingContext context;
  decltype(algos::ActorOutput::state) state;
  context.deterministic = !stochastic;
  for (int step = 0;; ++step) {
    film();
    if (limit > 0 && step >= limit) {
      video.cut_at_limit = true;
      break;
    }
    // A recurrent actor's state comes back with the next observation (empty for a feed-forward one).
    algos::ActorOutput acted = agent.learner->actor().act(algos::ActorInput(observation, state, {}), context);
    state = std::move(acted.state);
    const torch::Tensor chosen = acted.actions.to(torch::kCPU);
    envs::Action action;
    if (actions.is_discrete()) {
      action.index = chosen.reshape({-1})[0].item<int64_t>();
    } else {
      const torch::Tensor values = chosen.reshape({-1}).to(torch::kFloat32).contiguous();
      for (size_t i = 0; i < action_values.size(); ++i) {
        action_values[i] =
            std::clamp(values[static_cast<int64_t>(i)].item<float>(), actions.low()[i], actions.high()[i]);
      }
      action.values = action_values.data();
    }
    const envs::StepResult result = env->step(action, observation.data_ptr());
    video.episode_return += result.reward;
    if (result.terminated || result.truncated) {
      film();
      break;
    }
  }
  writer.finish();
  video.frames = writer.frames();
  video.seconds = clock.elapsed_seconds();
  return video;
}

}  // namespace concord::cli
