#include "concord/algos/learner_checkpoint.h"

#include "concord/algos/module_checkpoint.h"
#include "concord/core/checkpoint_fields.h"

namespace concord::algos {

void save_learner_state(core::Checkpoint& checkpoint, const std::string& algorithm, const nn::ActorCritic& model,
                        const torch::optim::Optimizer& optimizer, int64_t updates, const RewardScaler* reward_scaler) {
  save_module(checkpoint, "model/", *model);
  save_optimizer(checkpoint, "optimizer", optimizer);
  if (reward_scaler) reward_scaler->save(checkpoint);
  checkpoint.metadata["algorithm"] = algorithm;
  checkpoint.metadata["updates"] = updates;
}

int64_t load_learner_state(const core::Checkpoint& checkpoint, const std::string& algorithm,
                           const nn::ActorCritic& model, torch::optim::Optimizer& optimizer,
                           torch::optim::Optimizer& scratch, RewardScaler* reward_scaler) {
  check_algorithm(checkpoint, algorithm);
  const int64_t updates = core::metadata_int(checkpoint, "updates");
  const auto buffers = model->named_buffers();
  ModuleHints hints;
  hints.missing = [&](const std::string& key) {
    return buffers.contains(key) ? std::string(" (saved without observation normalisation?)") : std::string();
  };
  hints.unexpected = [](const std::string& key) {
    return key.rfind("obs_rms.", 0) == 0 ? std::string(" (saved with observation normalisation?)") : std::string();
  };
  check_module(checkpoint, "model/", *model, hints);
  if (reward_scaler) {
    reward_scaler->check(checkpoint);
  } else if (RewardScaler::in_checkpoint(checkpoint)) {
    core::checkpoint_corrupt(
        "it holds reward-normalisation state (tensors 'reward_scaler/...'), and this learner does not "
        "normalise rewards (algo." +
        algorithm + ".normalize_reward is false)");
  }
  const at::Device device = model->parameters().front().device();
  check_optimizer(checkpoint, "optimizer", scratch, device);

  load_module(checkpoint, "model/", *model.ptr());
  load_optimizer(checkpoint, "optimizer", optimizer, device);
  if (reward_scaler) reward_scaler->load(checkpoint);
  return updates;
}

}  // namespace concord::algos
