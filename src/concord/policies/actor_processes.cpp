#include "concord/policies/actor_processes.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "concord/core/config_problems.h"
#include "concord/core/timer.h"
#include "concord/policies/runtime/concat_envs.h"
#include "concord/policies/runtime/env_shares.h"
#include "concord/policies/runtime/experience_link.h"
#include "concord/policies/runtime/metric_names.h"
#include "concord/policies/runtime/on_policy_update.h"
#include "concord/policies/runtime/rollout_collector.h"

namespace concord::policies {
namespace {

constexpr size_t kFields = algos::Rollout::kFields;

// The names of a recurrent network's state, in the order they travel; none without memory.
std::vector<std::string> state_names(algos::OnPolicyLearner& learner) {
  std::vector<std::string> names;
  if (!learner.acts_with_memory()) return names;
  for (const auto& entry : learner.model()->initial_state(1)) names.push_back(entry.first);
  return names;
}

// The rollout's fields in the order they travel: owned copies, since the collector reuses its
// buffers for the next rollout while these are sent. With memory, the episode starts and the
// state each env's sequence began from follow (the initial state, zeros, before the first act).
std::vector<torch::Tensor> segment_of(const algos::Rollout& rollout, nn::ActorCritic& model,
                                      const std::vector<std::string>& state) {
  std::vector<torch::Tensor> fields;
  for (const torch::Tensor* field : rollout.fields()) fields.push_back(field->to(torch::kCPU).contiguous().clone());
  if (state.empty()) return fields;
  fields.push_back(rollout.episode_starts.to(torch::kCPU).contiguous().clone());
  const algos::TensorMap initial = model->initial_state(rollout.num_envs());
  for (const std::string& name : state) {
    const auto found = rollout.initial_state.find(name);
    fields.push_back((found != rollout.initial_state.end() ? found->second : initial.at(name))
                         .to(torch::kCPU, torch::kFloat32)
                         .contiguous()
                         .clone());
  }
  return fields;
}

// The parameters an actor acts with: the flat parameters, then the model's buffers (observation
// statistics).
std::vector<torch::Tensor> acting_parameters(algos::OnPolicyLearner& learner) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> tensors{learner.flat_parameters().values().detach()};
  for (const auto& buffer : learner.model()->named_buffers()) tensors.push_back(buffer.value());
  return tensors;
}

}  // namespace

ActorProcessesPolicy::ActorProcessesPolicy(const ActorProcessesConfig& config, const envs::VectorEnvConfig& env_config,
                                           algos::OnPolicyLearner& learner, torch::Device device,
                                           comm::Communicator& communicator, explore::Bonus* bonus)
    : config_(core::validated(config)),
      env_config_(env_config),
      learner_(learner),
      device_(device),
      communicator_(communicator),
      bonus_(bonus) {
  const int actors = communicator.world_size() - 1;
  if (actors < 1) {
    throw std::invalid_argument("policy 'actor_processes' needs a learner and at least one actor process, but there " +
                                std::string(communicator.world_size() == 1 ? "is 1 rank" : "are no actor ranks") +
                                "; start it with e.g. `concord launch -n 3 -- concord train --policy actor_processes`");
  }
  runtime::env_share(env_config, 0, actors, "actor_processes", "actor processes");
  if (env_config.batch_size != 0) {
    throw std::invalid_argument("policy 'actor_processes' steps each actor's envs together: set env.batch_size = 0");
  }
  // The learner tells the actors' messages apart by tag and abandons those of a stalled actor;
  // NCCL matches messages in order per pair of ranks, and abandoning one ends the communicator.
  if (communicator.backend() == "nccl") {
    throw std::invalid_argument(
        "policy 'actor_processes' needs tagged messages it can abandon, which NCCL does not offer: set "
        "comm.backend = \"gloo\" (its models may still live on the GPU: run.device)");
  }
  env_config_.num_envs = env_config.num_envs / actors;
}

ActorProcessesPolicy::~ActorProcessesPolicy() = default;

void ActorProcessesPolicy::train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                                 const TrainingCallbacks& callbacks) {
  if (communicator_.rank() == 0) {
    learn(state, total_steps, checkpoint_interval_steps, callbacks);
  } else {
    act();
  }
}

void ActorProcessesPolicy::learn(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                                 const TrainingCallbacks& callbacks) {
  // A stalled actor is named after half the communicator's timeout: the healthy actors wait for
  // their control the whole timeout, so they are served before they give up.
  const auto patience = communicator_.timeout() / 2;
  runtime::ActorRanks::Failures failures{
      config_.on_actor_failure, patience,
      std::to_string(std::chrono::duration<double>(patience).count()) + " s (half of comm.timeout_seconds)",
      [](int rank, const std::string& reason, int64_t left) {
        spdlog::warn("actor rank {} failed and was dropped ({} actor(s) left): {}", rank, left, reason);
      }};
  runtime::ActorRanks actors(communicator_, failures);
  const std::vector<std::string> state_fields = state_names(learner_);
  const size_t memory_fields = state_fields.empty() ? 0 : 1 + state_fields.size();
  actors.receive_descriptions(static_cast<int64_t>(kFields + memory_fields), "rollout", false);
  std::vector<runtime::Segment> segments(static_cast<size_t>(actors.size()));
  std::vector<algos::Rollout> rollouts(segments.size());  // the segments' fields, as rollouts
  // The parameters each actor's next rollout is collected with, by the update they are from: an
  // asynchronous actor collects rollout k + 1 before it takes control k, so it acts with the
  // parameters sent before that.
  std::vector<int64_t> sent(segments.size(), state.updates), sent_before(segments.size(), state.updates);
  UpdateReporter reporter(state, checkpoint_interval_steps);
  double receive_seconds = 0.0;
  double update_seconds = 0.0;

  bool stop = false;
  while (!stop) {
    // --- Receive rollout k from every live actor: all posted at once, one deadline for all ---
    core::Stopwatch receive_clock;
    for (int a = 0; a < actors.size(); ++a) actors.post_segment(a, segments[static_cast<size_t>(a)]);
    const auto deadline = actors.deadline();
    std::vector<const algos::Rollout*> parts;
    double lag_sum = 0.0;
    int64_t steps = 0;
    for (int a = 0; a < actors.size(); ++a) {
      runtime::Segment& segment = segments[static_cast<size_t>(a)];
      if (!actors.receive_segment(a, segment, deadline, "sent no rollout")) continue;
      const auto fields = rollouts[static_cast<size_t>(a)].fields();
      for (size_t field = 0; field < kFields; ++field) *fields[field] = segment.fields[field];
      if (!state_fields.empty()) {
        algos::Rollout& rollout = rollouts[static_cast<size_t>(a)];
        rollout.episode_starts = segment.fields[kFields];
        for (size_t i = 0; i < state_fields.size(); ++i) {
          rollout.initial_state[state_fields[i]] = segment.fields[kFields + 1 + i];
        }
      }
      parts.push_back(&rollouts[static_cast<size_t>(a)]);
      const size_t i = static_cast<size_t>(a);
      lag_sum += static_cast<double>(state.updates - (config_.synchronous ? sent[i] : sent_before[i]));
      steps += segment.fields.front().size(0) * segment.fields.front().size(1);
      for (const auto& [episode_return, episode_length] : segment.finished) {
        record_episode(episodes_, callbacks, episode_return, episode_length);
      }
    }
    if (parts.empty()) throw std::runtime_error("actor_processes: no actor process is left");
    receive_seconds += receive_clock.elapsed_seconds();

    // --- Learn ---
    core::Stopwatch update_clock;
    state.global_step += steps;
    algos::Metrics metrics =
        runtime::run_on_policy_update(learner_, runtime::concat_envs(parts), bonus_, state, total_steps);
    update_seconds += update_clock.elapsed_seconds();

    // --- Control k (and parameters) back to the actors ---
    stop = state.global_step >= total_steps || (callbacks.should_stop && callbacks.should_stop());
    const runtime::Control control{!stop, !stop && state.updates % config_.broadcast_every == 0, state.updates,
                                   state.global_step};
    {
      const std::vector<torch::Tensor> parameters = acting_parameters(learner_);
      for (int a = 0; a < actors.size(); ++a) {
        sent_before[static_cast<size_t>(a)] = sent[static_cast<size_t>(a)];
        if (actors.answer(a, control, parameters) && control.parameters_follow)
          sent[static_cast<size_t>(a)] = control.version;
      }
      // Every send completes before the next update changes the parameters it reads.
      const auto sent_by = actors.deadline();
      for (int a = 0; a < actors.size(); ++a) actors.settle(a, sent_by, "took no control message");
    }

    metrics[runtime::metric::kPolicyLag] = lag_sum / static_cast<double>(parts.size());
    metrics["actors/alive"] = static_cast<double>(actors.alive_count());
    metrics[runtime::metric::kReceiveSeconds] = receive_seconds;
    metrics[runtime::metric::kUpdateSeconds] = update_seconds;
    reporter.report(state, metrics, episodes_, callbacks);
  }
}

void ActorProcessesPolicy::act() {
  envs::VectorEnv env(env_config_);
  runtime::RolloutCollector collector(env, learner_.rollout_length(), device_);
  nn::ActorCritic model = learner_.model();
  runtime::LearnerRank learner(communicator_);
  runtime::FinishedEpisodes finished;
  const auto on_episode = [&](double episode_return, int64_t episode_length) {
    finished.emplace_back(episode_return, episode_length);
  };
  const std::vector<std::string> state = state_names(learner_);
  const auto collect = [&] {
    finished.clear();
    return segment_of(collector.collect(model, on_episode), model, state);
  };
  // Control k; false when it says stop. Parameters that follow it act from now on.
  const auto receive_control = [&] { return learner.receive(acting_parameters(learner_)).go_on; };

  std::vector<torch::Tensor> outgoing = collect();
  while (true) {
    learner.send(std::move(outgoing), finished);
    if (config_.synchronous) {
      if (!receive_control()) break;
      outgoing = collect();
    } else {
      std::vector<torch::Tensor> next = collect();  // overlaps the learner's update on the rollout just sent
      if (!receive_control()) break;
      outgoing = std::move(next);
    }
  }
  learner.flush();
}

std::unique_ptr<Policy> make_actor_processes_policy(const PolicyContext& context, const ActorProcessesConfig& config) {
  return std::make_unique<ActorProcessesPolicy>(config, context.env_config, context.on_policy_learner(), context.device,
                                                *context.communicator, context.bonus);
}

}  // namespace concord::policies
