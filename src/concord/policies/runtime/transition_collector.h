#pragma once

#include <cstdint>
#include <functional>

#include <torch/types.h>

#include "concord/algos/actor.h"
#include "concord/algos/experience.h"
#include "concord/envs/vector_env.h"
#include "concord/policies/runtime/collector.h"
#include "concord/policies/runtime/experience_sink.h"

namespace concord::policies::runtime {

// Collects experience one step of every environment at a time, for off-policy algorithms: the
// runtime::Collector's acting loop, one step at a time, into a transition (the sink this class
// is); the collection half of the off-policy loops of `single`, `sync_vector`, `multi_learner`,
// `hogwild` and the actor threads.
//
//   out = actor.act(o_t, context);  o_{t+1}, r_t, term_t, trunc_t = envs.step(out.actions)
//   returns {o_t, a_t, r_t, term_t, trunc_t, next o}   (algos/experience.h, `transition` names)
//
// where "next o" is the final observation of the episode wherever step t ended one (the envs
// have already auto-reset, so o_{t+1} there starts the next episode). Continuous actions are
// clipped to the action space's bounds at the environment boundary; the transition keeps what
// the actor chose. The returned tensors are fresh each step (the learner may keep them); all
// live on `device`. Not thread-safe; one collector per thread.
class TransitionCollector final : private runtime::ExperienceSink {
 public:
  using EpisodeCallback = runtime::Collector::EpisodeCallback;

  // Resets the envs (their first observations are o_0). Throws std::invalid_argument if the env
  // is asynchronous.
  TransitionCollector(envs::BatchedEnvs& env, torch::Device device);

  // One step of every env with `actor` choosing; on_episode is called for every episode that ends.
  algos::TensorMap step(algos::Actor& actor, const algos::ActingContext& context, const EpisodeCallback& on_episode);

  int64_t num_envs() const { return collector_.num_envs(); }
  envs::BatchedEnvs& env() { return collector_.env(); }

 private:
  void record(const runtime::CollectedStep& step) override;

  runtime::Collector collector_;
  torch::Device device_;
  algos::TensorMap transition_;  // what record() made of the last step
};

}  // namespace concord::policies::runtime
