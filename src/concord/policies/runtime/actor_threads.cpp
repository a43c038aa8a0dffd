#include "concord/policies/runtime/actor_threads.h"

#include <atomic>
#include <utility>
#include <vector>

#include "concord/core/torch_thread.h"
#include "concord/policies/runtime/transition_collector.h"

namespace concord::policies::runtime {
namespace {

// What the actor threads share: their seats and the steps they claimed (>= those stored).
struct Actors {
  Actors(runtime::Workers& /*workers*/, std::vector<std::unique_ptr<ActingSeat>> seats, int64_t claimed)
      : seats(std::move(seats)), claimed(claimed) {}
  std::vector<std::unique_ptr<ActingSeat>> seats;
  std::atomic<int64_t> claimed;
};

}  // namespace

void feed_steps(int stream, algos::ActingContext context, const std::string& name, ActingSeat& seat,
                envs::VectorEnv& env, torch::Device device, std::atomic<int64_t>& claimed, ReplayInlet& inlet) {
  TransitionCollector collector(env, device);
  const int64_t steps = collector.num_envs();
  FinishedEpisodes finished;
  const auto on_episode = [&finished](double episode_return, int64_t episode_length) {
    finished.emplace_back(episode_return, episode_length);
  };
  std::vector<algos::TensorMap> stored(1);  // one step at a time, without copying its map
  while (!inlet.stopping()) {
    // Claim the steps first, so that the actors together take total_steps and no more.
    if (claimed.fetch_add(steps) >= inlet.total_steps()) break;
    inlet.wait_for_learner(name);
    if (inlet.stopping()) break;

    algos::Actor& actor = seat.next_actor(steps);
    context.global_step = inlet.stored();
    context.total_steps = inlet.total_steps();
    algos::TensorMap& step = stored.front();
    step = collector.step(actor, context, on_episode);
    for (auto& [field, input] : seat.priority_inputs(step)) step[field] = std::move(input);
    inlet.store(stored, stream, finished);
    finished.clear();
  }
}

void start_actor_threads(const std::string& noun, const std::vector<double>& actor_epsilons,
                         std::vector<std::unique_ptr<ActingSeat>> seats,
                         std::vector<std::unique_ptr<envs::VectorEnv>>& envs, torch::Device device, uint64_t seed,
                         runtime::Workers& workers, ReplayInlet& inlet) {
  Actors& actors = workers.make<Actors>(std::move(seats), inlet.stored());
  const int count = static_cast<int>(envs.size());
  const bool distinct = !actor_epsilons.empty();
  for (int a = 0; a < count; ++a) {
    std::string name = noun + " " + std::to_string(a);
    if (distinct) name += " of " + std::to_string(count);
    const algos::ActingContext explorer{
        false, 0, 0, distinct ? a : 0, distinct ? count : 1, distinct ? actor_epsilons[static_cast<size_t>(a)] : -1.0};
    ActingSeat& seat = *actors.seats[static_cast<size_t>(a)];
    envs::VectorEnv& env = *envs[static_cast<size_t>(a)];
    workers.start(name, core::thread_seed(seed, static_cast<uint64_t>(a)),
                  [a, explorer, name, &seat, &env, device, &actors, &inlet] {
                    feed_steps(a, explorer, name, seat, env, device, actors.claimed, inlet);
                  });
  }
}

}  // namespace concord::policies::runtime
