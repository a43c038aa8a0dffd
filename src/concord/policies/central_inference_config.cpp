#include "concord/policies/central_inference_config.h"

#include <string>

#include "concord/core/config_problems.h"

namespace concord::policies {

void CentralInferenceConfig::validate() const {
  core::ConfigProblems problems;
  problems.check(agents >= 1, "actors", agents, ">= 1");
  problems.check(predictors >= 1, "predictors", predictors, ">= 1");
  problems.check(trainers >= 1, "trainers", trainers, ">= 1");
  problems.check(prediction_batch >= 1, "prediction_batch", prediction_batch, ">= 1");
  problems.check(training_batch >= 0, "training_batch", training_batch, ">= 0 (0: one segment per agent)");
  problems.check(queue_capacity >= 1, "queue_capacity", queue_capacity, ">= 1");
  problems.check(wait_timeout_seconds > 0.0, "wait_timeout_seconds", wait_timeout_seconds, "> 0");
  problems.check(adjust_interval_seconds > 0.0, "adjust_interval_seconds", adjust_interval_seconds, "> 0");
  problems.check(max_policy_lag >= 0, "max_policy_lag", max_policy_lag, ">= 0");
  // Each trainer may hold training_batch - 1 segments while it waits for its batch to fill; with
  // fewer slots than that in all, every agent would wait for a slot that never comes. (Per-agent
  // updates are gathered by one trainer at a time.)
  const int64_t batch = segments_per_update();
  if (!per_agent_updates() && max_policy_lag >= 0 && batch >= 1 && trainers >= 1 &&
      batch * (max_policy_lag + 1) <= static_cast<int64_t>(trainers) * (batch - 1)) {
    problems.add("max_policy_lag=" + std::to_string(max_policy_lag) + " leaves " +
                 std::to_string(batch * (max_policy_lag + 1)) + " segments in flight, too few for " +
                 std::to_string(trainers) + " trainers to fill batches of " + std::to_string(batch) +
                 " (raise max_policy_lag or lower trainers)");
  }
  problems.throw_if_any("policy.central_inference config");
}

const core::ConfigFields<CentralInferenceConfig>& CentralInferenceConfig::fields() {
  using C = CentralInferenceConfig;
  static const core::ConfigFields<C> kFields = {
      {"actors", &C::agents,
       "Actor (GA3C: agent) threads, each stepping its own envs (env.num_envs is split among them)", "agents"},
      {"predictors", &C::predictors, "Predictor threads running batched inference"},
      {"trainers", &C::trainers, "Trainer threads feeding the learner"},
      {"prediction_batch", &C::prediction_batch, "Most observations in one batched forward pass"},
      {"training_batch", &C::training_batch,
       "Actor segments (T steps of num_envs / actors envs) per learner update; 0: one per actor, so an update sees "
       "env.num_envs x T steps as under single"},
      {"queue_capacity", &C::queue_capacity, "Capacity of the prediction queue"},
      {"max_policy_lag", &C::max_policy_lag,
       "Updates a segment may lag the learner: at most training_batch x (max_policy_lag + 1) segments are collected "
       "and not yet trained (0: collection and learning take turns, on-policy; above 0 only for an algorithm that "
       "corrects a lag: PPO, A2C with V-trace)"},
      {"wait_timeout_seconds", &C::wait_timeout_seconds,
       "A blocking wait longer than this while the run is live is an error naming the queue"},
      {"dynamic_adjustment", &C::dynamic_adjustment,
       "GA3C's random walk over the numbers of actors, predictors and trainers, kept when TPS rises"},
      {"adjust_interval_seconds", &C::adjust_interval_seconds,
       "How long each thread configuration is measured by the dynamic adjustment"},
  };
  return kFields;
}

}  // namespace concord::policies
