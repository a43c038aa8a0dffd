#include "concord/policies/actor_processes.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "concord/comm/tensor_description.h"
#include "concord/core/config_problems.h"
#include "concord/core/timer.h"
#include "concord/policies/episode_message.h"
#include "concord/policies/exploration_bonus.h"
#include "concord/policies/rollout_collector.h"
#include "concord/policies/runtime/env_shares.h"
#include "concord/policies/runtime/message_tags.h"

namespace concord::policies {
namespace {

using Tags = runtime::tags::Rollouts;

constexpr int kFields = static_cast<int>(algos::Rollout::kFields);

std::vector<torch::Tensor> field_tensors(algos::Rollout& rollout) {
  std::vector<torch::Tensor> tensors;
  for (torch::Tensor* field : rollout.fields()) tensors.push_back(*field);
  return tensors;
}

// The receive buffers an actor's description asks for (comm::allocate_described checks it).
algos::Rollout allocate(const torch::Tensor& shapes, int rank) {
  std::vector<torch::Tensor> buffers = comm::allocate_described(
      shapes, kFields, "actor rank " + std::to_string(rank) + " described its rollout wrongly");
  algos::Rollout rollout;
  const auto tensors = rollout.fields();
  for (int field = 0; field < kFields; ++field) {
    *tensors[static_cast<size_t>(field)] = std::move(buffers[static_cast<size_t>(field)]);
  }
  return rollout;
}

// Joins the actors' rollouts along the env dimension.
algos::Rollout concatenate(std::vector<algos::Rollout*> parts) {
  algos::Rollout joined;
  const auto joined_fields = joined.fields();
  for (size_t field = 0; field < algos::Rollout::kFields; ++field) {
    std::vector<torch::Tensor> pieces;
    for (algos::Rollout* part : parts) pieces.push_back(*part->fields()[field]);
    *joined_fields[field] = torch::cat(pieces, algos::Rollout::env_dim(field));
  }
  return joined;
}

}  // namespace

// The learner's view of one actor rank.
struct ActorProcessesPolicy::ActorLink {
  int rank = 0;
  bool alive = true;
  algos::Rollout rollout;  // receive buffers
  torch::Tensor episodes;  // float64 [1 + 2 * max episodes]: count, then (return, length) pairs
  torch::Tensor version = torch::zeros({1}, torch::kInt64);
  // The messages in flight to or from this actor. Those of a dropped actor stay here, aborted:
  // the backend may still write their buffers (or read them) if the actor wakes up.
  std::vector<std::unique_ptr<comm::Request>> pending;

  ~ActorLink() {
    // Ends at once what a destructor would otherwise wait for until the timeout.
    for (auto& request : pending) request->abort();
  }

  // Waits for every pending message until `deadline`, then clears them; throws
  // comm::CommAborted when the deadline came first (the messages stay pending), or CommError.
  void wait_pending(comm::Watchdog& watchdog, comm::Watchdog::Clock::time_point deadline) {
    {
      const comm::Watchdog::Armed armed = watchdog.arm(deadline, [this] {
        for (auto& request : pending) request->abort();
      });
      for (auto& request : pending) request->wait();
    }
    pending.clear();
  }
};

void ActorProcessesConfig::validate() const {
  core::ConfigProblems problems;
  // Worded as they were before ConfigProblems collected them, since tests and users match them.
  if (broadcast_every < 1) problems.add("broadcast_every must be >= 1, got " + std::to_string(broadcast_every));
  if (on_actor_failure != "continue" && on_actor_failure != "abort") {
    problems.add("on_actor_failure must be \"continue\" or \"abort\", got \"" + on_actor_failure + "\"");
  }
  problems.throw_if_any("policy.actor_processes config");
}

const core::ConfigFields<ActorProcessesConfig>& ActorProcessesConfig::fields() {
  static const core::ConfigFields<ActorProcessesConfig> kFields = {
      {"synchronous", &ActorProcessesConfig::synchronous,
       "true: actors wait for each update's parameters; false: they collect the next rollout meanwhile"},
      {"broadcast_every", &ActorProcessesConfig::broadcast_every, "Updates between parameter broadcasts to the actors"},
      {"on_actor_failure", &ActorProcessesConfig::on_actor_failure, "continue (drop a dead actor and go on) or abort"},
  };
  return kFields;
}

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

void ActorProcessesPolicy::actor_failed(ActorLink& link, const std::string& error) {
  link.alive = false;
  if (config_.on_actor_failure == "abort") {
    throw std::runtime_error("actor rank " + std::to_string(link.rank) + " failed: " + error);
  }
  int alive = 0;
  for (const auto& actor : actors_) alive += actor->alive ? 1 : 0;
  spdlog::warn("actor rank {} failed and was dropped ({} actor(s) left): {}", link.rank, alive, error);
  if (alive == 0)
    throw std::runtime_error("every actor process failed; the last, rank " + std::to_string(link.rank) + ": " + error);
}

bool ActorProcessesPolicy::settle(ActorLink& link, comm::Watchdog::Clock::time_point deadline,
                                  const std::string& missed) {
  // Gloo marks an aborted request aborted even when its message had already arrived, so a link
  // waited for after another one's deadline passed gets a moment of its own first: what it sent
  // in time is then taken, and only what is still missing after it counts as a stall.
  const auto moment = std::min<std::chrono::milliseconds>(std::chrono::seconds(1), communicator_.timeout() / 4);
  deadline = std::max(deadline, comm::Watchdog::Clock::now() + moment);
  try {
    link.wait_pending(*watchdog_, deadline);
    return true;
  } catch (const comm::CommAborted&) {
    const double seconds = std::chrono::duration<double>(communicator_.timeout()).count() / 2.0;
    actor_failed(link, missed + " within " + std::to_string(seconds) +
                           " s (half of comm.timeout_seconds): stalled, or slower than the timeout allows");
  } catch (const comm::CommError& error) {
    actor_failed(link, error.what());
  }
  return false;
}

void ActorProcessesPolicy::learn(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                                 const TrainingCallbacks& callbacks) {
  // A stalled actor is named after half the communicator's timeout: the healthy actors wait for
  // their control the whole timeout, so they are served before they give up.
  const auto patience = communicator_.timeout() / 2;
  if (!watchdog_) watchdog_ = std::make_unique<comm::Watchdog>();

  // --- Start-up: every actor describes its rollout once ---
  actors_.clear();
  std::vector<torch::Tensor> descriptions;
  for (int rank = 1; rank < communicator_.world_size(); ++rank) {
    auto link = std::make_unique<ActorLink>();
    link->rank = rank;
    descriptions.push_back(torch::empty({kFields, 2 + comm::kMaxDescribedDims}, torch::kInt64));
    link->pending.push_back(communicator_.recv_async(descriptions.back(), rank, Tags::kShapes));
    actors_.push_back(std::move(link));
  }
  const auto described_by = comm::Watchdog::Clock::now() + patience;
  const ActorLink* first_alive = nullptr;
  for (size_t a = 0; a < actors_.size(); ++a) {
    ActorLink& link = *actors_[a];
    if (!settle(link, described_by, "did not describe its rollout")) continue;
    link.rollout = allocate(descriptions[a], link.rank);
    link.episodes = torch::zeros({1 + 2 * link.rollout.num_steps() * link.rollout.num_envs()}, torch::kFloat64);
    if (first_alive == nullptr) first_alive = &link;
  }
  nn::ActorCritic model = learner_.model();
  const int64_t steps_per_actor_rollout = first_alive->rollout.num_steps() * first_alive->rollout.num_envs();
  UpdateReporter reporter(state, checkpoint_interval_steps);
  double receive_seconds = 0.0;
  double update_seconds = 0.0;

  bool stop = false;
  while (!stop) {
    // --- Receive rollout k from every live actor: all posted at once, one deadline for all ---
    core::Stopwatch receive_clock;
    for (auto& link : actors_) {
      if (!link->alive) continue;
      try {
        for (int field = 0; field < kFields; ++field) {
          link->pending.push_back(communicator_.recv_async(*link->rollout.fields()[static_cast<size_t>(field)],
                                                           link->rank, Tags::kRollout + field));
        }
        link->pending.push_back(communicator_.recv_async(link->episodes, link->rank, Tags::kEpisodes));
        link->pending.push_back(communicator_.recv_async(link->version, link->rank, Tags::kVersion));
      } catch (const comm::CommError& error) {
        actor_failed(*link, error.what());
      }
    }
    const auto receive_deadline = comm::Watchdog::Clock::now() + patience;
    std::vector<algos::Rollout*> parts;
    double lag_sum = 0.0;
    for (auto& link : actors_) {
      if (!link->alive || !settle(*link, receive_deadline, "sent no rollout")) continue;
      FinishedEpisodes finished;
      try {
        finished = unpack_episodes(link->episodes, "actor rank " + std::to_string(link->rank));
      } catch (const std::runtime_error& error) {
        actor_failed(*link, error.what());
        continue;
      }
      parts.push_back(&link->rollout);
      lag_sum += static_cast<double>(state.updates - link->version.item<int64_t>());
      for (const auto& [episode_return, episode_length] : finished) {
        record_episode(episodes_, callbacks, episode_return, episode_length);
      }
    }
    if (parts.empty()) throw std::runtime_error("actor_processes: no actor process is left");
    receive_seconds += receive_clock.elapsed_seconds();

    // --- Learn ---
    core::Stopwatch update_clock;
    algos::Metrics bonus_metrics;
    const algos::Rollout collected = concatenate(parts);
    const algos::Rollout rollout = bonus_ ? with_bonus(*bonus_, collected, bonus_metrics) : collected;
    state.global_step += steps_per_actor_rollout * static_cast<int64_t>(parts.size());
    const double progress = std::min(1.0, static_cast<double>(state.global_step) / static_cast<double>(total_steps));
    algos::Metrics metrics = learner_.update(rollout, progress);
    ++state.updates;
    update_seconds += update_clock.elapsed_seconds();
    check_finite(metrics, state);
    metrics.insert(bonus_metrics.begin(), bonus_metrics.end());

    // --- Control k (and parameters) back to the actors ---
    stop = state.global_step >= total_steps || (callbacks.should_stop && callbacks.should_stop());
    const bool send_parameters = !stop && state.updates % config_.broadcast_every == 0;
    torch::Tensor control = torch::tensor({stop ? int64_t{0} : int64_t{1}, send_parameters ? int64_t{1} : int64_t{0}});
    {
      torch::NoGradGuard no_grad;
      const torch::Tensor parameters = learner_.flat_parameters().values().detach();
      for (auto& link : actors_) {
        if (!link->alive) continue;
        try {
          link->pending.push_back(communicator_.send_async(control, link->rank, Tags::kControl));
          if (send_parameters) {
            link->pending.push_back(communicator_.send_async(parameters, link->rank, Tags::kParameters));
            int index = 0;
            for (const auto& buffer : model->named_buffers()) {
              link->pending.push_back(communicator_.send_async(buffer.value(), link->rank, Tags::kBuffers + index++));
            }
          }
        } catch (const comm::CommError& error) {
          actor_failed(*link, error.what());
        }
      }
      // Every send completes before the next update changes the parameters it reads.
      const auto send_deadline = comm::Watchdog::Clock::now() + patience;
      for (auto& link : actors_) {
        if (link->alive) settle(*link, send_deadline, "took no control message");
      }
    }

    int alive = 0;
    for (const auto& link : actors_) alive += link->alive ? 1 : 0;
    metrics["charts/policy_lag"] = lag_sum / static_cast<double>(parts.size());
    metrics["actors/alive"] = alive;
    metrics["time/receive_seconds"] = receive_seconds;
    metrics["time/update_seconds"] = update_seconds;
    reporter.report(state, metrics, episodes_, callbacks);
  }
}

void ActorProcessesPolicy::act() {
  envs::VectorEnv env(env_config_);
  RolloutCollector collector(env, learner_.rollout_length(), device_);
  nn::ActorCritic model = learner_.model();
  const int64_t max_episodes = collector.env_steps_per_rollout();
  FinishedEpisodes finished;
  const auto on_episode = [&](double episode_return, int64_t episode_length) {
    finished.emplace_back(episode_return, episode_length);
  };
  int64_t version = 0;

  // Rollout k with its episodes and the parameter version it was collected with.
  struct Outgoing {
    algos::Rollout rollout;
    torch::Tensor episodes;
    torch::Tensor version;
  };
  const auto collect = [&] {
    finished.clear();
    Outgoing outgoing{collector.collect(model, on_episode), torch::Tensor(), torch::tensor({version})};
    outgoing.episodes = pack_episodes(finished, max_episodes);
    // Owned copies: the collector reuses its buffers for the next rollout while these are sent.
    for (torch::Tensor* field : outgoing.rollout.fields()) *field = field->to(torch::kCPU).contiguous().clone();
    return outgoing;
  };
  std::vector<std::unique_ptr<comm::Request>> sending;
  std::optional<Outgoing> in_flight;  // alive until its sends complete
  const auto send = [&](Outgoing outgoing) {
    for (auto& request : sending) request->wait();
    sending.clear();
    in_flight = std::move(outgoing);
    auto rollout_fields = in_flight->rollout.fields();
    for (int field = 0; field < kFields; ++field) {
      sending.push_back(
          communicator_.send_async(*rollout_fields[static_cast<size_t>(field)], 0, Tags::kRollout + field));
    }
    sending.push_back(communicator_.send_async(in_flight->episodes, 0, Tags::kEpisodes));
    sending.push_back(communicator_.send_async(in_flight->version, 0, Tags::kVersion));
  };
  // Waits for control k; returns false when the learner says stop.
  const auto receive_control = [&](int64_t update) {
    torch::Tensor control = torch::zeros({2}, torch::kInt64);
    communicator_.recv(control, 0, Tags::kControl);
    if (control[0].item<int64_t>() == 0) return false;
    if (control[1].item<int64_t>() == 1) {
      torch::NoGradGuard no_grad;
      communicator_.recv(learner_.flat_parameters().values().detach(), 0, Tags::kParameters);
      int index = 0;
      for (const auto& buffer : model->named_buffers()) communicator_.recv(buffer.value(), 0, Tags::kBuffers + index++);
      version = update;
    }
    return true;
  };

  Outgoing outgoing = collect();
  communicator_.send(comm::describe_tensors(field_tensors(outgoing.rollout)), 0, Tags::kShapes);
  for (int64_t update = 1;; ++update) {
    send(std::move(outgoing));
    if (config_.synchronous) {
      if (!receive_control(update)) break;
      outgoing = collect();
    } else {
      Outgoing next = collect();  // overlaps the learner's update on the rollout just sent
      if (!receive_control(update)) break;
      outgoing = std::move(next);
    }
  }
  for (auto& request : sending) request->wait();
}

std::unique_ptr<Policy> make_actor_processes_policy(const PolicyContext& context, const ActorProcessesConfig& config) {
  return std::make_unique<ActorProcessesPolicy>(config, context.env_config, context.on_policy_learner(), context.device,
                                                *context.communicator, context.bonus);
}

}  // namespace concord::policies
