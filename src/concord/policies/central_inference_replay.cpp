#include "concord/policies/central_inference_replay.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "concord/core/config_problems.h"
#include "concord/core/torch_thread.h"
#include "concord/policies/runtime/actor_threads.h"
#include "concord/policies/runtime/batched_acting.h"
#include "concord/policies/runtime/env_shares.h"
#include "concord/policies/runtime/exploration_bonus.h"
#include "concord/policies/runtime/replay_feed.h"

namespace concord::policies {
namespace {

// An agent acts through the predictors.
class Predicted final : public runtime::ActingSeat {
 public:
  explicit Predicted(runtime::BatchedActing::Client& client) : client_(client) {}
  algos::Actor& next_actor(int64_t /*steps*/) override { return client_; }

 private:
  runtime::BatchedActing::Client& client_;
};

// `config`, unless it sets the on-policy layout (refused in one line, before the fields that only
// that layout checks).
const CentralInferenceConfig& off_policy_layout(const CentralInferenceConfig& config) {
  const CentralInferenceConfig defaults;
  std::string set;
  const auto add = [&set](bool differs, const std::string& setting) {
    if (differs) set += (set.empty() ? "" : ", ") + setting;
  };
  add(config.trainers != defaults.trainers, "trainers = " + std::to_string(config.trainers));
  add(config.training_batch != defaults.training_batch, "training_batch = " + std::to_string(config.training_batch));
  add(config.max_policy_lag != defaults.max_policy_lag, "max_policy_lag = " + std::to_string(config.max_policy_lag));
  add(config.dynamic_adjustment != defaults.dynamic_adjustment, "dynamic_adjustment = true");
  if (!set.empty()) {
    throw std::invalid_argument(
        "policy 'central_inference' with an off-policy learner learns from its replay on one thread; "
        "policy.central_inference.trainers, training_batch, max_policy_lag and dynamic_adjustment lay out on-policy "
        "training only (got " +
        set + ")");
  }
  return config;
}

}  // namespace

CentralInferenceReplayPolicy::CentralInferenceReplayPolicy(const CentralInferenceConfig& config,
                                                           const envs::VectorEnvConfig& env_config,
                                                           algos::OffPolicyLearner& learner, torch::Device device,
                                                           const explore::Bonus* bonus)
    : config_(core::validated(off_policy_layout(config))), learner_(learner), device_(device), seed_(env_config.seed) {
  runtime::refuse_bonus_off_policy(bonus, learner);
  envs_ = runtime::thread_env_shares(env_config, config_.agents, "central_inference", "agent",
                                     "actors (policy.central_inference.actors)");
  replicas_ = runtime::require_replay_feed(learner_, "central_inference", config_.predictors);
}

void CentralInferenceReplayPolicy::train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                                         const TrainingCallbacks& callbacks) {
  // SEED RL's fixed replay ratio: one update per train_frequency env steps, pinned from both sides.
  const runtime::ReplayPacing pace{1, learner_.train_frequency(), learner_.train_frequency(),
                                   config_.wait_timeout_seconds};
  runtime::ReplayFeedPlan plan{"central_inference", "actors", pace, "one update per train_frequency", {}, {}};
  plan.start_feeders = [this](runtime::Workers& workers, runtime::ReplayInlet& inlet) {
    auto& service =
        workers.make<runtime::BatchedActing>(replicas_, inlet.parameters(), config_.agents, envs_.front()->num_envs(),
                                             config_.prediction_batch, config_.queue_capacity);
    for (int p = 0; p < config_.predictors; ++p) {
      // Seeds after the agents' (start_actor_threads seeds agent a with thread_seed(seed, a)).
      workers.start("predictor " + std::to_string(p),
                    core::thread_seed(seed_, static_cast<uint64_t>(config_.agents + p)), [&service, p] {
                      while (service.serve_batch(p)) {
                      }
                    });
    }
    std::vector<std::unique_ptr<runtime::ActingSeat>> seats;
    for (int a = 0; a < config_.agents; ++a) seats.push_back(std::make_unique<Predicted>(service.client(a)));
    runtime::start_actor_threads("agent", {}, std::move(seats), envs_, device_, seed_, workers, inlet);
  };
  runtime::feed_replay(plan, learner_, episodes_, state, total_steps, checkpoint_interval_steps, callbacks);
}

std::unique_ptr<Policy> make_central_inference_replay_policy(const PolicyContext& context,
                                                             const CentralInferenceConfig& config) {
  return std::make_unique<CentralInferenceReplayPolicy>(config, context.env_config, context.off_policy_learner(),
                                                        context.device, context.bonus);
}

}  // namespace concord::policies
