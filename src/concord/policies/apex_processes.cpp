#include "concord/policies/apex_processes.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <c10/core/GradMode.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "concord/comm/tensor_description.h"
#include "concord/comm/watchdog.h"
#include "concord/core/config_problems.h"
#include "concord/core/timer.h"
#include "concord/core/torch_thread.h"
#include "concord/policies/apex_learner.h"
#include "concord/policies/episode_message.h"
#include "concord/policies/replay_feed.h"
#include "concord/policies/runtime/env_shares.h"
#include "concord/policies/runtime/message_tags.h"
#include "concord/policies/runtime/workers.h"
#include "concord/policies/transition_collector.h"

namespace concord::policies {
namespace {

using Tags = runtime::tags::Transitions;

// A segment's fields, in the order they travel: each [S, B, ...], S steps of an actor's B envs;
// the inputs of the actors' initial priorities last, where their replicas give them (the same on
// every rank: the same algorithm config).
std::vector<std::string> segment_fields(const algos::ActorReplica& replica) {
  std::vector<std::string> fields = {algos::transition::kObservations, algos::transition::kActions,
                                     algos::transition::kRewards,      algos::transition::kTerminated,
                                     algos::transition::kTruncated,    algos::transition::kNextObservations};
  for (const std::string& name : replica.priority_input_fields()) fields.push_back(name);
  if (static_cast<int>(fields.size()) > Tags::kMaxSegmentFields) {
    throw std::logic_error("policy 'apex': a segment of " + std::to_string(fields.size()) + " fields has tags for " +
                           std::to_string(Tags::kMaxSegmentFields) + " only");
  }
  return fields;
}

// Control k, from the learner to an actor: go on (1) or stop (0); parameters follow (1) or not
// (0); the learner updates they are from; the learner's global_step.
constexpr int64_t kControlSize = 4;

std::string rank_name(int rank) { return "actor rank " + std::to_string(rank); }

// How long the learner waits for an actor's messages: wait_timeout_seconds, and under
// on_actor_failure = "continue" at most half of the communicator's timeout, for which the other
// actors wait for their answers: they must not give up while it waits for a stalled one.
std::chrono::steady_clock::duration actor_patience(const ApexConfig& config, const comm::Communicator& communicator) {
  const auto patience = core::steady_duration(config.wait_timeout_seconds);
  if (config.on_actor_failure != "continue") return patience;
  return std::min<std::chrono::steady_clock::duration>(
      patience, std::chrono::duration_cast<std::chrono::steady_clock::duration>(communicator.timeout()) / 2);
}

// Env steps an actor's segment holds: refresh_every rounded up to whole steps of its envs.
int64_t segment_steps(int64_t refresh_every, int64_t envs_per_actor) {
  return (refresh_every + envs_per_actor - 1) / envs_per_actor;
}

// One segment on the learner: `fields` [S, B, ...] in segment_fields(replica) order, and the episodes
// the actor finished in it.
struct Segment {
  int actor = 0;
  std::vector<torch::Tensor> fields;
  torch::Tensor episodes;     // as received (episode_message.h)
  FinishedEpisodes finished;  // as checked
};

}  // namespace

// One train() call on rank 0: the communication thread (serve) and the calling thread (learn).
class ApexProcessesPolicy::Learning final : public ApexStepSource {
 public:
  Learning(ApexProcessesPolicy& policy, TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
           const TrainingCallbacks& callbacks)
      : policy_(policy),
        config_(policy.config_),
        learner_(policy.learner_),
        communicator_(policy.communicator_),
        actors_(communicator_.world_size() - 1),
        state_(state),
        total_steps_(total_steps),
        checkpoint_interval_steps_(checkpoint_interval_steps),
        callbacks_(callbacks),
        patience_(core::steady_duration(config_.wait_timeout_seconds)),
        patience_text_(std::to_string(config_.wait_timeout_seconds) + " s (policy.apex.wait_timeout_seconds)"),
        actor_patience_(actor_patience(config_, communicator_)),
        actor_patience_text_(actor_patience_ < patience_
                                 ? std::to_string(std::chrono::duration<double>(actor_patience_).count()) +
                                       " s (half of comm.timeout_seconds)"
                                 : patience_text_),
        received_(state.global_step),
        stored_(state.global_step),
        allowed_step_(initial_allowance(config_, learner_, state)),
        sent_version_(static_cast<size_t>(actors_), -1),
        fields_(segment_fields(*policy.replica_)) {}

  void run() {
    publish(state_.updates);
    workers_.on_stop([this] {
      { std::lock_guard<std::mutex> lock(progress_mutex_); }
      updated_.notify_all();
      stored_.wake_all();
    });
    // The communication thread's errors name the rank that failed.
    workers_.start("", core::thread_seed(policy_.env_config_.seed, 0), [this] { serve(); });
    workers_.run([this] { learn(); });
    // Everything the communication thread stored is in: the final count, and the episodes not yet
    // reported.
    state_.global_step = stored_.count();
    after_update();
  }

 private:
  // ---- the communication thread ----

  void serve() {
    comm::Watchdog watchdog;
    const std::vector<std::string>& names = fields_;
    const auto count = static_cast<int64_t>(names.size());
    // Control 0 and the parameters to every actor (stop, if the run is already over), then each
    // actor's description of its segments.
    std::vector<bool> stopped(static_cast<size_t>(actors_), false);  // told to stop, or dropped
    const auto running = [&] { return std::find(stopped.begin(), stopped.end(), false) != stopped.end(); };
    // An actor that failed: dropped (it takes no more answers), or the run fails.
    const auto drop = [&](int a, const std::string& error) {
      stopped[static_cast<size_t>(a)] = true;
      drop_actor(a, error);
    };
    // Posts messages to or from actor `a`: a connection that is already closed (a dead actor)
    // fails the post itself, and drops the actor as a failed wait does. False then.
    const auto reach = [&](int a, const std::function<void()>& post_messages) {
      try {
        post_messages();
        return true;
      } catch (const comm::CommError& error) {
        drop(a, rank_name(a + 1) + " failed: " + error.what());
        return false;
      }
    };
    // Sends control k (with parameters) to actor `a`, and posts the receives of its next segment
    // unless the control says stop.
    const auto answer_and_post = [&](int a, const std::function<void()>& post_next) {
      bool go_on = false;
      if (!reach(a, [&] {
            go_on = answer(a);
            if (go_on) post_next();
          })) {
        return;
      }
      if (!go_on) stopped[static_cast<size_t>(a)] = true;
    };
    std::vector<torch::Tensor> descriptions(static_cast<size_t>(actors_));
    std::vector<std::vector<torch::Tensor>> layouts(static_cast<size_t>(actors_));
    for (int a = 0; a < actors_; ++a) {
      answer_and_post(a, [&] {
        descriptions[static_cast<size_t>(a)] = torch::empty({count, 2 + comm::kMaxDescribedDims}, torch::kInt64);
        pending_[static_cast<size_t>(a)].push_back(
            communicator_.recv_async(descriptions[static_cast<size_t>(a)], a + 1, Tags::kDescription));
      });
    }
    for (int a = 0; a < actors_; ++a) {
      if (stopped[static_cast<size_t>(a)]) continue;
      if (const std::string error = settle(watchdog, a, "sent no description of its transitions"); !error.empty()) {
        drop(a, error);
        continue;
      }
      const std::string wrongly = rank_name(a + 1) + " described its transitions wrongly";
      std::vector<torch::Tensor>& layout = layouts[static_cast<size_t>(a)];
      layout = comm::allocate_described(descriptions[static_cast<size_t>(a)], count, wrongly);
      for (size_t field = 0; field < layout.size(); ++field) {
        if (layout[field].dim() < 2 || layout[field].size(0) != layout.front().size(0) ||
            layout[field].size(1) != layout.front().size(1) || layout.front().size(0) == 0 ||
            layout.front().size(1) == 0) {
          throw comm::CommError(wrongly + ": field " + std::to_string(field) +
                                " is not [steps, envs, ...] with the steps and envs of field 0, both above 0");
        }
      }
    }
    // Every segment of an actor has its first one's layout; fresh buffers for each, since
    // observe() may keep what it was given by reference.
    std::vector<Segment> incoming(static_cast<size_t>(actors_));
    const auto post = [&](int a) {
      Segment& segment = incoming[static_cast<size_t>(a)];
      segment.actor = a;
      segment.fields.clear();
      for (const torch::Tensor& layout : layouts[static_cast<size_t>(a)]) {
        segment.fields.push_back(torch::empty_like(layout));
      }
      const int64_t max_episodes = segment.fields.front().size(0) * segment.fields.front().size(1);
      segment.episodes = torch::zeros({1 + 2 * max_episodes}, torch::kFloat64);
      auto& pending = pending_[static_cast<size_t>(a)];
      for (int64_t field = 0; field < count; ++field) {
        pending.push_back(communicator_.recv_async(segment.fields[static_cast<size_t>(field)], a + 1,
                                                   Tags::kSegment + static_cast<int>(field)));
      }
      pending.push_back(communicator_.recv_async(segment.episodes, a + 1, Tags::kEpisodes));
    };
    for (int a = 0; a < actors_; ++a) {
      if (!stopped[static_cast<size_t>(a)]) reach(a, [&] { post(a); });
    }

    // Rounds: each actor's next segment in turn, answered with control k once it is stored.
    while (running()) {
      for (int a = 0; a < actors_; ++a) {
        if (stopped[static_cast<size_t>(a)]) continue;
        if (const std::string error = settle(watchdog, a, "sent no transitions"); !error.empty()) {
          drop(a, error);
          continue;
        }
        Segment& segment = incoming[static_cast<size_t>(a)];
        const int64_t steps = segment.fields.front().size(0) * segment.fields.front().size(1);
        segment.finished = unpack_episodes(segment.episodes, rank_name(a + 1));
        received_.fetch_add(steps);
        observe(segment);
        wait_for_allowance(a);
        answer_and_post(a, [&] { post(a); });
      }
    }
    // The last controls reach the actors before train() returns (a dropped actor's messages stay
    // aborted).
    for (int a = 0; a < actors_; ++a) {
      if (dropped_[static_cast<size_t>(a)]) continue;
      if (const std::string error = settle(watchdog, a, "took no control message"); !error.empty()) {
        drop_actor(a, error);
      }
    }
  }

  // Actor `a` failed with `error` (which names it): under on_actor_failure = "continue" it is
  // dropped with a warning, its messages aborted, and the others go on; otherwise, or when it
  // was the last, the run fails.
  void drop_actor(int a, const std::string& error) {
    dropped_[static_cast<size_t>(a)] = true;
    for (auto& request : pending_[static_cast<size_t>(a)]) request->abort();
    if (config_.on_actor_failure == "abort") throw std::runtime_error(error);
    const auto left = std::count(dropped_.begin(), dropped_.end(), false);
    if (left == 0) throw std::runtime_error("every actor rank failed; the last: " + error);
    spdlog::warn("policy 'apex': {}; it was dropped ({} actor(s) left)", error, left);
  }

  // Stores a segment in the learner's replay, step by step on the actor's stream, with its
  // episodes for the learner's thread to report, until global_step reaches total_steps (what
  // arrives after that is dropped). Answering the actor only after this holds it back while the
  // replay's insertions lag, so no segment waits in memory on rank 0.
  void observe(const Segment& segment) {
    const std::vector<std::string>& names = fields_;
    const int64_t steps = segment.fields.front().size(0);
    std::lock_guard<std::mutex> lock(stored_.mutex());
    if (stored_.count() >= total_steps_) return;
    for (int64_t t = 0; t < steps; ++t) {
      algos::TensorMap step;
      for (size_t field = 0; field < names.size(); ++field) step.emplace(names[field], segment.fields[field][t]);
      learner_.observe(step, segment.actor);
    }
    stored_.add(steps * segment.fields.front().size(1), segment.finished);
    stored_.notify();
  }

  // Sends control k to actor `a`, with the published parameters if they are newer than those it
  // has. Returns false when the control says stop.
  bool answer(int a) {
    const bool go_on = !workers_.stopping();
    torch::Tensor parameters;
    int64_t version = 0;
    {
      std::lock_guard<std::mutex> lock(publishing_);
      version = version_;
      if (go_on && version_ != sent_version_[static_cast<size_t>(a)]) parameters = published_;
    }
    const bool send_parameters = parameters.defined();
    const torch::Tensor control = torch::tensor(
        {int64_t{go_on ? 1 : 0}, int64_t{send_parameters ? 1 : 0}, version, stored_.count()}, torch::kInt64);
    auto& pending = pending_[static_cast<size_t>(a)];
    pending.push_back(communicator_.send_async(control, a + 1, Tags::kControl));
    if (send_parameters) {
      // published_ is replaced, never written, by the next publication: the request keeps this one.
      pending.push_back(communicator_.send_async(parameters, a + 1, Tags::kParameters));
      sent_version_[static_cast<size_t>(a)] = version;
    }
    return go_on;
  }

  // Waits for actor `a`'s messages in flight (actor_patience_ at most). Returns "" when they
  // completed, else what went wrong, naming the actor and what it did not do.
  std::string settle(comm::Watchdog& watchdog, int a, const std::string& missed) {
    auto& pending = pending_[static_cast<size_t>(a)];
    try {
      {
        const comm::Watchdog::Armed armed = watchdog.arm(comm::Watchdog::Clock::now() + actor_patience_, [&pending] {
          for (auto& request : pending) request->abort();
        });
        for (auto& request : pending) request->wait();
      }
      pending.clear();
      return "";
    } catch (const comm::CommAborted&) {
      return rank_name(a + 1) + " " + missed + " within " + actor_patience_text_ + ": stalled, or slower than that";
    } catch (const comm::CommError& error) {
      return rank_name(a + 1) + " failed: " + error.what();
    }
  }

  // max_env_steps_per_update: holds actor `a`'s answer while the steps received are not below the
  // learner's allowance (as the threads wait before a step).
  void wait_for_allowance(int a) {
    if (config_.max_env_steps_per_update == 0) return;
    const auto allowed = [&] { return workers_.stopping() || received_.load() < allowed_step_.load(); };
    std::unique_lock<std::mutex> lock(progress_mutex_);
    if (!updated_.wait_for(lock, patience_, allowed)) {
      throw std::runtime_error(
          "waited " + patience_text_ + " for a learner update to answer " + rank_name(a + 1) +
          " (policy.apex.max_env_steps_per_update = " + std::to_string(config_.max_env_steps_per_update) + ")");
    }
  }

  // ---- the calling thread ----

  void learn() {
    // Updates start once some step of this run is observed: the happens-before that
    // OffPolicyLearner::observes_while_updating asks for.
    learn_back_to_back(config_, learner_, *this, state_, total_steps_, checkpoint_interval_steps_,
                       stored_.pausing(callbacks_, state_), policy_.episodes_, actors_);
  }

  // ---- ApexStepSource, on the calling thread ----

  int64_t take_steps() override { return stored_.count(); }
  int64_t steps_taken() const override { return received_.load(); }
  bool failed() const override { return workers_.failed(); }

  // Reports the episodes the segments stored since the last call finished.
  void after_update() override {
    for (const auto& [episode_return, episode_length] : stored_.take_finished()) {
      record_episode(policy_.episodes_, callbacks_, episode_return, episode_length);
    }
  }

  void wait_for_steps(int64_t beyond) override {
    stored_.wait_beyond(
        beyond, total_steps_, [this] { return workers_.failed(); }, callbacks_, patience_,
        "policy 'apex': the actors sent no transitions within " + patience_text_);
  }

  void allow_steps(int64_t step) override {
    {
      std::lock_guard<std::mutex> lock(progress_mutex_);
      allowed_step_.store(step);
    }
    updated_.notify_all();
  }

  // A new tensor each time: the sends of the last one may still read it.
  void publish(int64_t updates) override {
    c10::NoGradGuard no_grad;
    torch::Tensor values = learner_.flat_parameters().values().detach().to(torch::kCPU).clone();
    std::lock_guard<std::mutex> lock(publishing_);
    published_ = std::move(values);
    version_ = updates;
  }

  ApexProcessesPolicy& policy_;
  const ApexConfig& config_;
  algos::OffPolicyLearner& learner_;
  comm::Communicator& communicator_;  // the communication thread's only
  const int actors_;
  TrainingState& state_;  // the calling thread's only
  const int64_t total_steps_;
  const int64_t checkpoint_interval_steps_;
  const TrainingCallbacks& callbacks_;
  const std::chrono::steady_clock::duration patience_;
  const std::string patience_text_;
  const std::chrono::steady_clock::duration actor_patience_;  // for an actor's messages
  const std::string actor_patience_text_;
  std::vector<bool> dropped_ = std::vector<bool>(static_cast<size_t>(actors_), false);  // communication thread's

  std::atomic<int64_t> received_;  // env steps received from the actors
  StoredSteps stored_;             // env steps in the replay and the episodes they finished

  // max_env_steps_per_update's allowance; changes under progress_mutex_.
  std::mutex progress_mutex_;
  std::condition_variable updated_;
  std::atomic<int64_t> allowed_step_;

  // The published parameters and the updates they are from.
  std::mutex publishing_;
  torch::Tensor published_;
  int64_t version_ = 0;
  std::vector<int64_t> sent_version_;      // per actor: the version it was last sent (communication thread)
  const std::vector<std::string> fields_;  // the segments' fields, in the order they travel
  std::vector<std::vector<std::unique_ptr<comm::Request>>> pending_ =
      std::vector<std::vector<std::unique_ptr<comm::Request>>>(static_cast<size_t>(actors_));

  // Declared last: its thread is stopped and joined before anything above goes.
  runtime::Workers workers_{"apex", config_.wait_timeout_seconds, "policy.apex.wait_timeout_seconds"};
};

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
  replica_ = std::move(require_replay_feed(learner_, "apex", 1).front());  // the actor's; rank 0 only checks
}

ApexProcessesPolicy::~ApexProcessesPolicy() = default;

void ApexProcessesPolicy::train(TrainingState& state, int64_t total_steps, int64_t checkpoint_interval_steps,
                                const TrainingCallbacks& callbacks) {
  // Every rank takes part, even when the learner's state is already past total_steps: it then
  // stops the actors at their first segment.
  if (communicator_.rank() == 0) {
    Learning learning(*this, state, total_steps, checkpoint_interval_steps, callbacks);
    learning.run();
  } else {
    act(total_steps);
  }
}

void ApexProcessesPolicy::act(int64_t total_steps) {
  const int actors = communicator_.world_size() - 1;
  const int a = communicator_.rank() - 1;
  envs::VectorEnv env(envs::env_slice(env_config_, a, actors));
  TransitionCollector collector(env, device_);
  algos::ActorReplica& replica = *replica_;
  torch::Tensor parameters;
  {
    c10::NoGradGuard no_grad;
    parameters = torch::empty_like(learner_.flat_parameters().values().detach(), torch::device(torch::kCPU));
  }
  const int64_t steps = segment_steps(config_.refresh_every, collector.num_envs());
  const std::vector<std::string> names = segment_fields(replica);
  const size_t collected = names.size() - replica.priority_input_fields().size();
  int64_t learner_step = 0;  // at the last control
  int64_t own_steps = 0;     // since the last control
  int64_t acting_step = 0;   // the global_step it acts at: never going back

  // Control k; false when it says stop. Parameters that follow it are the replica's from now on.
  const auto receive_control = [&] {
    torch::Tensor control = torch::zeros({kControlSize}, torch::kInt64);
    communicator_.recv(control, 0, Tags::kControl);
    const int64_t* values = control.data_ptr<int64_t>();
    if (values[0] == 0) return false;
    if (values[1] == 1) {
      communicator_.recv(parameters, 0, Tags::kParameters);
      replica.assign(parameters.to(device_));
    }
    learner_step = values[3];
    own_steps = 0;
    return true;
  };

  // The next segment: its fields (CPU, contiguous) and its finished episodes.
  struct Outgoing {
    std::vector<torch::Tensor> fields;
    torch::Tensor episodes;
  };
  FinishedEpisodes finished;
  const auto on_episode = [&finished](double episode_return, int64_t episode_length) {
    finished.emplace_back(episode_return, episode_length);
  };
  const auto collect = [&] {
    std::vector<std::vector<torch::Tensor>> columns(collected);
    finished.clear();
    for (int64_t t = 0; t < steps; ++t) {
      acting_step = std::max(acting_step, learner_step + own_steps);
      const algos::ActingContext context{false, acting_step, total_steps, a, actors};
      const algos::TensorMap step = collector.step(replica, context, on_episode);
      own_steps += collector.num_envs();
      for (size_t field = 0; field < collected; ++field) columns[field].push_back(step.at(names[field]));
    }
    Outgoing outgoing;
    for (auto& column : columns) outgoing.fields.push_back(torch::stack(column).to(torch::kCPU).contiguous());
    if (collected < names.size()) {
      // The inputs of Ape-X's initial priorities, for the whole segment at once (as Ape-X's actors
      // batch them).
      algos::TensorMap rows;
      for (size_t field = 0; field < collected; ++field) {
        rows.emplace(names[field], outgoing.fields[field].flatten(0, 1));
      }
      const algos::TensorMap inputs = replica.priority_inputs(rows);
      for (size_t field = collected; field < names.size(); ++field) {
        outgoing.fields.push_back(inputs.at(names[field]).reshape({steps, collector.num_envs()}).contiguous());
      }
    }
    outgoing.episodes = pack_episodes(finished, steps * collector.num_envs());
    return outgoing;
  };
  std::vector<std::unique_ptr<comm::Request>> sending;
  Outgoing in_flight;  // alive until its sends complete
  const auto send = [&](Outgoing outgoing) {
    for (auto& request : sending) request->wait();
    sending.clear();
    in_flight = std::move(outgoing);
    for (size_t field = 0; field < names.size(); ++field) {
      sending.push_back(communicator_.send_async(in_flight.fields[field], 0, Tags::kSegment + static_cast<int>(field)));
    }
    sending.push_back(communicator_.send_async(in_flight.episodes, 0, Tags::kEpisodes));
  };

  if (receive_control()) {
    Outgoing outgoing = collect();
    communicator_.send(comm::describe_tensors(outgoing.fields), 0, Tags::kDescription);
    while (true) {
      send(std::move(outgoing));
      outgoing = collect();  // overlaps the learner's answer to the segment just sent
      if (!receive_control()) break;
    }
  }
  for (auto& request : sending) request->wait();
}

}  // namespace concord::policies
