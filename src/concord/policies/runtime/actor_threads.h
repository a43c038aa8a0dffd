#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "concord/algos/actor.h"
#include "concord/envs/vector_env.h"
#include "concord/policies/runtime/replay_feed.h"
#include "concord/policies/runtime/workers.h"

namespace concord::policies::runtime {

// How one actor thread chooses its actions: with a network copy of its own (apex) or through
// predictors that batch every actor's observations (central_inference). Owned by its thread; not
// thread-safe.
class ActingSeat {
 public:
  virtual ~ActingSeat() = default;
  // The Actor for the next step of `steps` env steps (a copy may first pick up newer parameters).
  virtual algos::Actor& next_actor(int64_t steps) = 0;
  // What travels with a step this seat acted to observe(): Ape-X's priority inputs
  // (ActorReplica::priority_inputs). None by default.
  virtual algos::TensorMap priority_inputs(const algos::TensorMap& /*step*/) { return {}; }
};

// Actor threads as a replay's feeders (ReplayFeedPlan::start_feeders), Ape-X's actors on threads
// of the learner's process: actor i steps envs[i] from seats[i] and stores its transitions as
// stream i, seeded thread_seed(seed, i).
//
//   actor i:  claim its envs' steps (the actors together take total_steps, no more)
//             wait while past the learner's allowance (inlet.wait_for_learner)
//             a = seat.next_actor(steps).act(o, context);  o', r, ... = envs[i].step(a)
//             inlet.store(step, i)
//
// Actor i explores as the Actor's i of envs.size() with actor_epsilons[i] when given (Ape-X's),
// else as 0 of 1 on the algorithm's schedule. `noun` names a thread: "actor" ("actor 0 of 2" when
// exploring distinctly), "agent" ("agent 0"). The threads, their seats and their claims live on `workers`.
void start_actor_threads(const std::string& noun, const std::vector<double>& actor_epsilons,
                         std::vector<std::unique_ptr<ActingSeat>> seats,
                         std::vector<std::unique_ptr<envs::VectorEnv>>& envs, torch::Device device, uint64_t seed,
                         runtime::Workers& workers, ReplayInlet& inlet);

// What each of those threads runs: actor `stream` steps `env` from `seat`, exploring as
// `explorer` says, and stores its transitions into `inlet` as stream `stream`, until the run stops
// or the feeders' claims, counted in `claimed` (from inlet.stored()), reach total_steps. `name`
// names it where it waits for the learner.
void feed_steps(int stream, algos::ActingContext explorer, const std::string& name, ActingSeat& seat,
                envs::VectorEnv& env, torch::Device device, std::atomic<int64_t>& claimed, ReplayInlet& inlet);

}  // namespace concord::policies::runtime
