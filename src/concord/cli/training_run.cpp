#include "concord/cli/training_run.h"

#include <torch/torch.h>

#include "concord/algos/algorithm_registry.h"
#include "concord/cli/run_context.h"
#include "concord/core/device.h"
#include "concord/envs/registry.h"
#include "concord/explore/bonus_registry.h"
#include "concord/policies/policy_registry.h"

namespace concord::cli {
namespace {

int64_t positive_steps(const core::Config& config, const std::string& key) {
  const int64_t steps = config.get_int(key);
  if (steps < 1) throw core::ConfigError(key + " must be at least 1, got " + std::to_string(steps));
  return steps;
}

}  // namespace

TrainingRun::TrainingRun(const core::Config& config, const core::Checkpoint* resume_from)
    : total_steps_(positive_steps(config, "train.total_timesteps")),
      checkpoint_interval_(positive_steps(config, "train.checkpoint_interval_steps")),
      device_(core::resolve_device(config.get_string("run.device"))),
      algo_(config.get_string("train.algo")),
      policy_name_(config.get_string("train.policy")),
      env_config_(vector_env_config(config)),
      env_spec_(envs::make_env(env_config_.env_id)->spec()) {
  torch::manual_seed(static_cast<uint64_t>(config.get_int("run.seed")));
  torch::set_num_threads(static_cast<int>(config.get_int("run.torch_threads")));
  learner_ = algos::make_learner(algo_, config, env_spec_.observation_space, env_spec_.action_space, device_);
  bonus_ = explore::make_bonus(config, env_spec_.observation_space);
  if (resume_from != nullptr) {
    learner_->load(*resume_from);
    if (bonus_) bonus_->load(*resume_from);
  }
  policy_ = policies::make_policy(policy_name_,
                                  policies::PolicyContext{config, env_config_, *learner_, device_, bonus_.get()});
}

void TrainingRun::train(policies::TrainingState& state, const policies::TrainingCallbacks& callbacks) {
  policy_->train(state, total_steps_, checkpoint_interval_, callbacks);
}

}  // namespace concord::cli
