#include "concord/policies/apex.h"

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "concord/core/config_problems.h"
#include "concord/policies/apex_processes.h"
#include "concord/policies/runtime/actor_threads.h"
#include "concord/policies/runtime/env_shares.h"
#include "concord/policies/runtime/replay_feed.h"

namespace concord::policies {
namespace {

// Ape-X's actor: a network copy of its own, which picks up the newest published parameters every
// refresh_every of its env steps (the first step included).
class OwnCopy final : public runtime::ActingSeat {
 public:
  OwnCopy(algos::ActorReplica& replica, runtime::PublishedParameters& parameters, int64_t refresh_every)
      : replica_(replica), parameters_(parameters), refresh_every_(refresh_every), since_refresh_(refresh_every) {}

  algos::Actor& next_actor(int64_t steps) override {
    if (since_refresh_ >= refresh_every_) {
      since_refresh_ = 0;
      if (parameters_.latest() != version_) {
        version_ = parameters_.read_newest([&](at::Tensor& published) { replica_.assign(published); });
      }
    }
    since_refresh_ += steps;
    return replica_;
  }

  algos::TensorMap priority_inputs(const algos::TensorMap& step) override { return replica_.priority_inputs(step); }

 private:
  algos::ActorReplica& replica_;
  runtime::PublishedParameters& parameters_;
  const int64_t refresh_every_;
  int64_t since_refresh_;
  int64_t version_ = -1;
};

}  // namespace

ApexPolicy::ApexPolicy(ApexConfig config, const envs::VectorEnvConfig& env_config, algos::OffPolicyLearner& learner,
                       torch::Device device)
    : config_(core::validated(config)), learner_(learner), device_(device), seed_(env_config.seed) {
  const int actors = config_.actors;
  envs_ = runtime::thread_env_shares(env_config, actors, "apex", "actor", "actors (policy.apex.actors)");
  replicas_ = runtime::require_replay_feed(learner_, "apex", actors);
}

void ApexPolicy::train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                       const TrainingCallbacks& callbacks) {
  runtime::ReplayFeedPlan plan{"apex",
                               "actors",
                               config_.pacing(),
                               "policy.apex.max_env_steps_per_update",
                               config_.actor_epsilons(config_.actors),
                               {}};
  plan.start_feeders = [this, epsilons = plan.actor_epsilons](runtime::Workers& workers, runtime::ReplayInlet& inlet) {
    std::vector<std::unique_ptr<runtime::ActingSeat>> seats;
    for (auto& replica : replicas_)
      seats.push_back(std::make_unique<OwnCopy>(*replica, inlet.parameters(), config_.refresh_every));
    runtime::start_actor_threads("actor", epsilons, std::move(seats), envs_, device_, seed_, workers, inlet);
  };
  runtime::feed_replay(plan, learner_, episodes_, state, total_steps, checkpoint_interval_steps, callbacks);
}

std::unique_ptr<Policy> make_apex_policy(const PolicyContext& context, const ApexConfig& config) {
  algos::OffPolicyLearner* learner = &context.off_policy_learner();
  if (context.communicator != nullptr && context.communicator->world_size() > 1) {
    return std::make_unique<ApexProcessesPolicy>(config, context.env_config, *learner, context.device,
                                                 *context.communicator);
  }
  return std::make_unique<ApexPolicy>(config, context.env_config, *learner, context.device);
}

}  // namespace concord::policies
