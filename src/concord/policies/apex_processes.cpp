#include "concord/policies/apex_processes.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <c10/core/GradMode.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "concord/core/config_problems.h"
#include "concord/core/timer.h"
#include "concord/core/torch_thread.h"
#include "concord/policies/runtime/env_shares.h"
#include "concord/policies/runtime/experience_link.h"
#include "concord/policies/runtime/replay_feed.h"
#include "concord/policies/runtime/transition_collector.h"

namespace concord::policies {
namespace {

// A segment's fields, in the order they travel: each [S, B, ...], S steps of an actor's B envs;
// the inputs of the actors' initial priorities last, where their replicas give them (the same on
// every rank: the same algorithm config).
std::vector<std::string> segment_fields(const algos::ActorReplica& replica) {
  std::vector<std::string> fields = {algos::transition::kObservations, algos::transition::kActions,
                                     algos::transition::kRewards,      algos::transition::kTerminated,
                                     algos::transition::kTruncated,    algos::transition::kNextObservations};
  // An actor with memory sends the state each step was acted from (R2D2's sequences need it).
  for (const std::string& name : replica.state_fields()) fields.push_back(name);
  for (const std::string& name : replica.priority_input_fields()) fields.push_back(name);
  return fields;
}

// How long the learner waits for an actor's messages: wait_timeout_seconds, and under
// on_actor_failure = "continue" at most half of the communicator's timeout, for which the other
// actors wait for their answers: they must not give up while it waits for a stalled one.
runtime::ActorRanks::Failures failures(const ApexConfig& config, const comm::Communicator& communicator) {
  runtime::ActorRanks::Failures failures{
      config.on_actor_failure, core::steady_duration(config.wait_timeout_seconds),
      std::to_string(config.wait_timeout_seconds) + " s (policy.apex.wait_timeout_seconds)",
      [](int rank, const std::string& reason, int64_t left) {
        spdlog::warn("policy 'apex': actor rank {} failed: {}; it was dropped ({} actor(s) left)", rank, reason, left);
      }};
  const auto half = std::chrono::duration_cast<std::chrono::steady_clock::duration>(communicator.timeout()) / 2;
  if (config.on_actor_failure == "continue" && half < failures.patience) {
    failures.patience = half;
    failures.patience_text =
        std::to_string(std::chrono::duration<double>(half).count()) + " s (half of comm.timeout_seconds)";
  }
  return failures;
}

// Rank 0's communication thread, the replay's feeder: control 0 and the parameters to every
// actor, then each actor's segments in turn, stored in the replay and answered with the next
// control once stored, so that a fast actor is held back by the replay, not queued in memory.
void serve(const ApexConfig& config, comm::Communicator& communicator, const std::vector<std::string>& names,
           runtime::ReplayInlet& inlet) {
  runtime::ActorRanks actors(communicator, failures(config, communicator));
  std::vector<runtime::Segment> segments(static_cast<size_t>(actors.size()));
  std::vector<int64_t> sent_version(static_cast<size_t>(actors.size()), -1);
  torch::Tensor parameters;  // the newest published, copied once per version for the sends
  int64_t version = -1;
  // Control k to actor `a`, with the newest parameters if it has older ones. False when the actor
  // was dropped.
  const auto answer = [&](int a) {
    runtime::Control control{!inlet.stopping(), false, sent_version[static_cast<size_t>(a)], inlet.stored()};
    if (control.go_on && inlet.parameters().latest() != control.version) {
      if (inlet.parameters().latest() != version) {
        version = inlet.parameters().read_newest([&](at::Tensor& published) {
          c10::NoGradGuard no_grad;
          parameters = published.to(torch::kCPU).clone();
        });
      }
      control.parameters_follow = version != control.version;
      control.version = sent_version[static_cast<size_t>(a)] = version;
    }
    return actors.answer(a, control, {parameters});
  };

  for (int a = 0; a < actors.size(); ++a) answer(a);
  actors.receive_descriptions(static_cast<int64_t>(names.size()), "transitions", true);
  for (int a = 0; a < actors.size(); ++a) actors.post_segment(a, segments[static_cast<size_t>(a)]);
  while (actors.any_active()) {
    for (int a = 0; a < actors.size(); ++a) {
      runtime::Segment& segment = segments[static_cast<size_t>(a)];
      if (!actors.active(a) || !actors.receive_segment(a, segment, actors.deadline(), "sent no transitions")) continue;
      std::vector<algos::TensorMap> steps(static_cast<size_t>(segment.fields.front().size(0)));
      for (size_t t = 0; t < steps.size(); ++t) {
        for (size_t field = 0; field < names.size(); ++field) {
          steps[t].emplace(names[field], segment.fields[field][static_cast<int64_t>(t)]);
        }
      }
      inlet.store(steps, a, segment.finished);
      inlet.wait_for_learner("actor rank " + std::to_string(actors.rank(a)));
      if (answer(a)) actors.post_segment(a, segment);
    }
  }
  // The last controls reach the actors before train() returns.
  for (int a = 0; a < actors.size(); ++a) actors.settle(a, actors.deadline(), "took no control message");
}

}  // namespace

ApexProcessesPolicy::ApexProcessesPolicy(ApexConfig config, const envs::VectorEnvConfig& env_config,
                                         algos::OffPolicyLearner& learner, torch::Device device,
                                         comm::Communicator& communicator)
    : config_(core::validated(config)),
      env_config_(env_config),
      learner_(learner),
      device_(device),
      communicator_(communicator) {
  const int ranks = communicator.world_size();
  if (config_.actors != ranks - 1) {
    throw std::invalid_argument(
        "policy 'apex' under a launcher runs one actor on each rank after the learner (rank 0): " +
        std::to_string(ranks) + " ranks make " + std::to_string(ranks - 1) +
        " actors, but policy.apex.actors = " + std::to_string(config_.actors) + "; set it to " +
        std::to_string(ranks - 1) + " or launch " + std::to_string(config_.actors + 1) + " ranks");
  }
  runtime::env_share(env_config, 0, config_.actors, "apex", "actors (policy.apex.actors)");
  if (env_config.batch_size != 0) {
    throw std::invalid_argument("policy 'apex' steps each actor's envs together: set env.batch_size = 0");
  }
  // Tagged messages from several actors in turn, and an actor's abandoned wait: NCCL offers neither.
  if (communicator.backend() == "nccl") {
    throw std::invalid_argument(
        "policy 'apex' across processes needs tagged messages it can abandon, which NCCL does not offer: set "
        "comm.backend = \"gloo\" (its models may still live on the GPU: run.device)");
  }
  // Rank 0's communication thread stores each segment as it arrives, while its calling thread
  // updates: the replay's insertions never wait for the learner (Ape-X's replay takes them apart
  // from learning), and never starve it.
  replica_ = std::move(runtime::require_replay_feed(learner_, "apex", 1).front());  // the actor's; rank 0 only checks
}

ApexProcessesPolicy::~ApexProcessesPolicy() = default;

void ApexProcessesPolicy::train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                                const TrainingCallbacks& callbacks) {
  // Every rank takes part, even when the learner's state is already past total_steps: it then
  // stops the actors at their first control.
  if (communicator_.rank() != 0) {
    act(total_steps);
    return;
  }
  runtime::ReplayFeedPlan plan{"apex",
                               "actors",
                               config_.pacing(),
                               "policy.apex.max_env_steps_per_update",
                               config_.actor_epsilons(config_.actors),
                               {}};
  plan.start_feeders = [this](runtime::Workers& workers, runtime::ReplayInlet& inlet) {
    // The communication thread's errors name the rank that failed.
    workers.start("", core::thread_seed(env_config_.seed, 0),
                  [this, &inlet] { serve(config_, communicator_, segment_fields(*replica_), inlet); });
  };
  runtime::feed_replay(plan, learner_, episodes_, state, total_steps, checkpoint_interval_steps, callbacks);
}

void ApexProcessesPolicy::act(int64_t total_steps) {
  const int actors = communicator_.world_size() - 1;
  const int a = communicator_.rank() - 1;
  envs::VectorEnv env(envs::env_slice(env_config_, a, actors));
  runtime::TransitionCollector collector(env, device_);
  algos::ActorReplica& replica = *replica_;
  runtime::LearnerRank learner(communicator_);
  torch::Tensor parameters;
  {
    c10::NoGradGuard no_grad;
    parameters = torch::empty_like(learner_.flat_parameters().values().detach(), torch::device(torch::kCPU));
  }
  // A segment: refresh_every env steps, rounded up to whole steps of its envs.
  const int64_t steps = (config_.refresh_every + collector.num_envs() - 1) / collector.num_envs();
  const std::vector<std::string> names = segment_fields(replica);
  const size_t collected = names.size() - replica.priority_input_fields().size();
  int64_t learner_step = 0;                                 // at the last control
  int64_t own_steps = 0;                                    // since the last control
  int64_t acting_step = 0;                                  // the global_step it acts at: never going back
  const double epsilon = config_.actor_epsilon(a, actors);  // Ape-X's, fixed for the run

  // Control k; false when it says stop. Parameters that follow it are the replica's from now on.
  const auto receive_control = [&] {
    const runtime::Control control = learner.receive({parameters});
    if (!control.go_on) return false;
    if (control.parameters_follow) replica.assign(parameters.to(device_));
    learner_step = control.step;
    own_steps = 0;
    return true;
  };

  // The next segment: its fields (CPU, contiguous), and in `finished` the episodes it ended.
  runtime::FinishedEpisodes finished;
  const auto on_episode = [&finished](double episode_return, int64_t episode_length) {
    finished.emplace_back(episode_return, episode_length);
  };
  const auto collect = [&] {
    std::vector<std::vector<torch::Tensor>> columns(collected);
    finished.clear();
    for (int64_t t = 0; t < steps; ++t) {
      acting_step = std::max(acting_step, learner_step + own_steps);
      const algos::ActingContext context{false, acting_step, total_steps, a, actors, epsilon};
      const algos::TensorMap step = collector.step(replica, context, on_episode);
      own_steps += collector.num_envs();
      for (size_t field = 0; field < collected; ++field) columns[field].push_back(step.at(names[field]));
    }
    std::vector<torch::Tensor> fields;
    for (auto& column : columns) fields.push_back(torch::stack(column).to(torch::kCPU).contiguous());
    if (collected < names.size()) {
      // The inputs of Ape-X's initial priorities, for the whole segment at once (as Ape-X's actors
      // batch them).
      algos::TensorMap rows;
      for (size_t field = 0; field < collected; ++field) rows.emplace(names[field], fields[field].flatten(0, 1));
      const algos::TensorMap inputs = replica.priority_inputs(rows);
      for (size_t field = collected; field < names.size(); ++field) {
        fields.push_back(inputs.at(names[field]).reshape({steps, collector.num_envs()}).contiguous());
      }
    }
    return fields;
  };

  if (receive_control()) {
    std::vector<torch::Tensor> outgoing = collect();
    while (true) {
      learner.send(std::move(outgoing), finished);
      outgoing = collect();  // overlaps the learner's answer to the segment just sent
      if (!receive_control()) break;
    }
  }
  learner.flush();
}

}  // namespace concord::policies
