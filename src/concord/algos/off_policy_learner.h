#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "concord/algos/actor.h"
#include "concord/algos/experience.h"
#include "concord/algos/learner.h"

namespace concord::algos {

// An Actor over a network of its own, a copy of the learner's acting network, for threads that
// act while the learner updates (Ape-X's actors): acting from the learner's own network would read
// parameters the optimiser is changing in place. The copy changes only in assign(), which its owner
// calls between its own act() calls, so the replica needs no lock. Not thread-safe: one thread
// owns it.
class ActorReplica : public Actor {
 public:
  // Copies the learner's parameters into the replica's network: `flat_values` is a buffer laid
  // out as the learner's flat_parameters().values() (a copy the policy published, on the
  // learner's device). Throws std::invalid_argument if its size differs.
  virtual void assign(const at::Tensor& flat_values) = 0;

  // The fields priority_inputs() gives (experience.h: kActingQ, kActingNextValue), in a fixed
  // order; none by default. Ape-X's actors estimate with their copy of the network what a new
  // transition's TD error needs, so that it enters a prioritised replay at its own priority
  // instead of the maximum; the learner completes the error, for its own one-step or n-step
  // target, as it stores the transition.
  virtual std::vector<std::string> priority_input_fields() const { return {}; }
  // For N transitions this replica acted in (experience.h's fields, each [N, ...]): one [N]
  // float CPU tensor per name of priority_input_fields(), to travel with them to observe().
  virtual TensorMap priority_inputs(const TensorMap& /*transitions*/) { return {}; }
  // For an actor with memory: the fields of a collected step that carry the state it acted from
  // (sequence_replay.h's "state/<name>"), which must travel with each step to the learner, in a
  // fixed order; none by default.
  virtual std::vector<std::string> state_fields() const { return {}; }
};

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
  Family family() const final { return Family::kOffPolicy; }

  // Remembers one step of B environments: every field of experience.h's `transition`
  // namespace, leading dimension B, on any device. `stream` names the collector that sent it
  // (0 for a single collector), so that per-environment state such as an n-step window is kept
  // per collector. Not thread-safe (but see observes_while_updating()).
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

  // Optional capabilities, for policies that act on other threads than the one that learns
  // (policies/apex.h). A learner that does not provide both is refused by those policies.
  //
  // A new actor over its own copy of the acting network, made from the current parameters; call
  // it on the thread that built the learner, before other threads use the learner (making the
  // copy may draw from LibTorch's global generator). nullptr: this learner cannot act from a copy.
  virtual std::unique_ptr<ActorReplica> make_actor_replica() { return nullptr; }
  // A replica for threads that each act and learn (policies/hogwild.h): its parameters, target
  // and optimiser statistics are this learner's (shared storage), its gradients its own, and it
  // learns from the transitions its own thread observes rather than from this learner's replay.
  // Call it on the thread that built the learner. nullptr: this learner cannot share itself.
  virtual std::unique_ptr<OffPolicyLearner> make_shared_replica() { return nullptr; }
  // True when observe() may run on one thread while update() runs on another. The policy's side
  // of that contract:
  //   - observe() calls are serialised among themselves (one mutex), and so are update() calls;
  //   - the first update() happens after the first observe() has returned (happens-before, e.g.
  //     through the mutex, condition variable or atomic step counter the policy waits on), so a
  //     learner may build state lazily in its first observe() (Dqn builds its replay there);
  //   - save() and load() run with neither in progress (a checkpoint pauses the observers).
  // The learner's side: observe() touches only what update() does not, plus a replay that is
  // itself thread-safe (ReplayBuffer). False (the default): the policy must call them one at a
  // time.
  virtual bool observes_while_updating() const { return false; }
};

}  // namespace concord::algos
