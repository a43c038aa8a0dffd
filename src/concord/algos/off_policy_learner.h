#pragma once

#include <cstdint>

#include "concord/algos/experience.h"
#include "concord/algos/learner.h"

namespace concord::algos {

// The off-policy family (DQN, SAC): transitions go into the learner's replay as they happen, and
// updates sample from it on a schedule the algorithm sets. The policy loop, the same for every
// off-policy algorithm:
//
//   repeat: out = actor.act(o_t, {global_step, ...})
//           o_{t+1}, r_t, term_t, trunc_t = envs.step(out.actions)
//           learner.observe({o_t, a_t, r_t, term_t, trunc_t, final or next o})   experience.h
//           global_step += B
//           while global_step > learning_starts() and the next update is due:
//             metrics = learner.update(global_step, progress)
//             the next update is due train_frequency() env steps later
//
// Updates are counted in environment steps summed over every env (and every rank in lockstep),
// so the ratio of gradient steps to env steps does not change with env.num_envs. The policy
// keeps the final observation of every ended episode; the algorithm decides what truncation
// means for its targets.
class OffPolicyLearner : public Learner {
 public:
  // Remembers one step of B environments: every field of experience.h's `transition`
  // namespace, leading dimension B, on any device. `stream` names the collector that sent it
  // (0 for a single collector), so that per-environment state such as an n-step window is kept
  // per collector. Not thread-safe.
  virtual void observe(const TensorMap& step, int stream = 0) = 0;
  // One update from replay: the algorithm's gradient steps, target-network updates and priority
  // updates. `global_step` counts env steps so far; `progress` in [0, 1] is the fraction of
  // training done, for schedules. Returns no metrics, and changes nothing, while the replay
  // holds less than one batch (after a resume whose checkpoint did not keep the replay, until
  // it refills); the policy then counts no update.
  virtual Metrics update(int64_t global_step, double progress) = 0;
  // Env steps before the first update (random or exploratory acting fills the replay).
  virtual int64_t learning_starts() const = 0;
  // Env steps between updates, >= 1.
  virtual int64_t train_frequency() const = 0;
};

}  // namespace concord::algos
