#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "concord/comm/communicator.h"
#include "concord/comm/watchdog.h"
#include "concord/policies/runtime/episode_message.h"

namespace concord::policies::runtime {

// The link between a learner (rank 0) and its actor ranks 1..A, over c10d send/recv, for every
// policy whose actors run in processes (actor_processes: rollouts; apex: transition segments):
//
//   actor rank:                                  learner (ActorRanks):
//     send the description of its segments once   receive each actor's description
//     send segment k (fields, then its episodes)   receive segment k (all fields, one deadline)
//     receive control k [and parameters]           answer with control k [and parameters]
//
// A segment is any list of tensors of fixed shapes, the first [steps, envs, ...] (the description
// says which), sent one message per field, then its finished episodes (episode_message.h). A control says go on or
// stop, whether parameters follow, which learner update they are from and the learner's global_step. Only
// point-to-point messages are used, with tags from message_tags.h, so that an actor that dies or
// stalls is dropped without stalling the others: every wait on an actor is bounded by the
// link's patience, and its messages are then abandoned (comm::Request::abort, which keeps the
// connections; a Gloo timeout would close them all). NCCL offers neither tags nor abandoning:
// the policies refuse it.

// Control k, from the learner to an actor.
struct Control {
  bool go_on = false;
  bool parameters_follow = false;
  int64_t version = 0;  // the learner updates the parameters it sends (or last sent) are from
  int64_t step = 0;     // the learner's global_step
};

// One segment as the learner receives it.
struct Segment {
  std::vector<torch::Tensor> fields;  // as the actor described them
  torch::Tensor episodes;             // as received
  FinishedEpisodes finished;          // as checked
};

// The learner's end: its actor ranks, the messages in flight to and from each, and what happens
// when one fails. Used by one thread.
class ActorRanks {
 public:
  using Clock = comm::Watchdog::Clock;
  struct Failures {
    // "continue": a failed actor is dropped (`dropped` reports it) and the others go on, until
    // none is left; "abort": the run fails naming it.
    std::string on_failure = "continue";
    Clock::duration patience;   // the longest wait on an actor's messages
    std::string patience_text;  // says it in errors: "5 s (policy.apex.wait_timeout_seconds)"
    std::function<void(int rank, const std::string& reason, int64_t left)> dropped;
  };

  ActorRanks(comm::Communicator& communicator, Failures failures);
  ~ActorRanks();  // abandons the messages in flight
  ActorRanks(const ActorRanks&) = delete;
  ActorRanks& operator=(const ActorRanks&) = delete;

  int size() const { return static_cast<int>(actors_.size()); }
  int rank(int a) const { return a + 1; }
  bool alive(int a) const { return actors_[static_cast<size_t>(a)].alive; }
  int64_t alive_count() const;
  // Alive and not told to stop: segments still come from it.
  bool active(int a) const { return alive(a) && !actors_[static_cast<size_t>(a)].released; }
  bool any_active() const;
  Clock::time_point deadline() const { return Clock::now() + failures_.patience; }

  // Receives every active actor's description of its segments, of `fields` tensors each, and lays
  // out their buffers. An actor that sends none in time is dropped. A description that is not
  // `fields` tensors of the dtypes and sizes allocate_described accepts, the first [steps, envs,
  // ...] with both above 0 (and, when `uniform`, every field so with the first's steps and envs),
  // fails the run: "actor rank 1 described its rollout wrongly: ...", `noun` being "rollout".
  void receive_descriptions(int64_t fields, const std::string& noun, bool uniform);
  // The buffers actor `a` described, as freshly allocated empty tensors.
  const std::vector<torch::Tensor>& layout(int a) const { return actors_[static_cast<size_t>(a)].layout; }

  // Posts the receives of actor `a`'s next segment into `segment`, in fresh buffers of its layout
  // (the learner may keep the last ones). False when the actor was dropped.
  bool post_segment(int a, Segment& segment);
  // Waits for actor `a`'s segment until `deadline` and checks its episodes. False when it was
  // dropped (`missed` says what it did not do in time: "sent no rollout").
  bool receive_segment(int a, Segment& segment, Clock::time_point deadline, const std::string& missed);
  // Posts control `control` to actor `a`, and `parameters` after it when it says they follow.
  // The tensors must stay unchanged until settle(). A control that says stop releases the actor.
  // False when the actor was dropped.
  bool answer(int a, const Control& control, const std::vector<torch::Tensor>& parameters);
  // Waits for actor `a`'s messages in flight until `deadline` (or a moment of its own, if that
  // passed: Gloo marks an aborted request aborted even when its message had arrived). False when
  // the actor was dropped.
  bool settle(int a, Clock::time_point deadline, const std::string& missed);
  // Drops actor `a` after `reason`: throws "actor rank N failed: reason" under "abort", or when
  // it was the last; otherwise reports it and abandons its messages.
  void drop(int a, const std::string& reason);

 private:
  struct Actor {
    bool alive = true;
    bool released = false;  // told to stop
    torch::Tensor description;
    std::vector<torch::Tensor> layout;
    // The messages in flight. Those of a dropped actor stay here, aborted: the backend may still
    // write their buffers (or read them) if the actor wakes up.
    std::vector<std::unique_ptr<comm::Request>> pending;
  };
  // Runs post(), dropping the actor on a comm::CommError (a closed connection fails the post).
  bool reach(int a, const std::function<void(std::vector<std::unique_ptr<comm::Request>>&)>& post);

  comm::Communicator& communicator_;
  Failures failures_;
  std::vector<Actor> actors_;
  comm::Watchdog watchdog_;
};

// An actor rank's end: its segments to the learner and the learner's controls back. Each wait is
// bounded by the communicator's timeout.
class LearnerRank {
 public:
  explicit LearnerRank(comm::Communicator& communicator) : communicator_(communicator) {}
  ~LearnerRank();  // waits for the sends in flight

  // Receives control k, and the parameters into `parameters` (in order) when they follow.
  Control receive(const std::vector<torch::Tensor>& parameters);
  // Sends a segment (CPU tensors, the first [steps, envs, ...]; the first segment is described
  // first) and the episodes it finished, after the previous segment's sends completed; the tensors
  // are kept until their own sends complete.
  void send(std::vector<torch::Tensor> fields, const FinishedEpisodes& finished);
  // Waits for the sends in flight.
  void flush();

 private:
  comm::Communicator& communicator_;
  bool described_ = false;
  std::vector<torch::Tensor> in_flight_;
  std::vector<std::unique_ptr<comm::Request>> sending_;
};

}  // namespace concord::policies::runtime
