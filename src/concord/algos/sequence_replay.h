#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "concord/algos/experience.h"
#include "concord/algos/replay_buffer.h"
#include "concord/core/rng.h"

namespace concord::algos {

// The fields of one stored sequence (R2D2's replay, Kapturowski et al. 2019), S = burn_in +
// trace + n_step - 1 steps and S + 1 observations, with leading dimension N in a batch:
namespace sequence_field {
inline constexpr const char* kObservations = "observations";  // [S + 1, *obs] in the env's dtype
inline constexpr const char* kActions = "actions";            // int64 [S]
inline constexpr const char* kRewards = "rewards";            // float [S]
inline constexpr const char* kValid = "valid";                // float [S]: 1 where a step of the episode was taken
inline constexpr const char* kTerminated = "terminated";      // float [S]: 1 at the step that ended it by termination
inline constexpr const char* kStarts = "starts";              // float [S + 1]: 1 at the episode's first observation
inline constexpr const char* kStatePrefix = "state/";         // state/<name> [*]: the state before observation 0
}  // namespace sequence_field

// The prefix of a step's fields that carry the actor's state before it acted at o_t (collected
// by the policy for an actor with memory; policies/runtime/transition_collector.h), one per name of the
// network's state: "state/h", "state/c".
inline constexpr const char* kTransitionStatePrefix = "state/";

// What a SequenceReplay stores.
struct SequenceReplaySpec {
  std::string owner = "SequenceReplay";    // names the caller in errors
  std::vector<int64_t> observation_shape;  // one observation's shape
  int64_t num_actions = 0;                 // actions are indices in [0, num_actions)
  // The network's state: name -> shape of one env's row ({h: [cells], c: [cells]}).
  std::map<std::string, std::vector<int64_t>> state_shapes;
  int64_t burn_in = 0;   // steps unrolled before the learned ones, without learning from them
  int64_t trace = 1;     // steps learned from per sequence; adjacent sequences start `trace` apart
  int64_t n_step = 1;    // steps after the learned ones, for their n-step targets
  int64_t capacity = 1;  // sequences held
  bool prioritized = false;
  double priority_alpha = 0.6;

  int64_t steps() const { return burn_in + trace + n_step - 1; }  // S
};

// R2D2's replay of fixed-length sequences with the recurrent state stored at their start.
//
// The adder cuts every env's episode into windows that tile it: window k learns from episode
// steps [k trace, (k + 1) trace) and holds, before them, the burn_in steps that lead up to them
// (padding before the episode's first step: those positions are not valid, and the state at the
// first observation is the initial one, zeros) and, after them, the n_step - 1 steps their
// n-step targets need. So sequences overlap by burn_in + n_step - 1 steps and never cross an
// episode's end: a window that reaches past it is cut there, with the episode's final observation
// (terminal or truncated) in the position after its last step and the rest masked. Each window
// is stored once its last step or the episode's end arrives. The state stored with a window is
// the actor's state before the window's first observation (zeros where that precedes the
// episode), so the learner re-runs the window from what the actor had.
//
//   add(step, stream): experience.h's transition fields plus state/<name> (the state before the
//                      actor acted at o_t), leading dimension B; per env b of `stream`
//   sample(batch, beta): whole sequences, uniformly or by priority (replay_buffer.h)
//
// New sequences enter at the largest priority so far. Storage lives on the CPU, in a
// ReplayBuffer of sequences. Thread safety: as Replay's (add() calls serialised by the caller;
// sampling may run on another thread). Not saved in checkpoints: a resumed run refills it.
class SequenceReplay {
 public:
  // Throws std::invalid_argument for a bad spec. The sampler's seed comes from LibTorch's
  // generator of the calling thread (core::thread_generator).
  explicit SequenceReplay(SequenceReplaySpec spec);
  ~SequenceReplay();

  // Throws std::invalid_argument naming spec.owner for a missing field (state/<name> included),
  // rows that disagree, a mis-shaped observation or state, an action out of range, or a stream
  // whose batch size changed.
  void add(const TensorMap& step, int stream = 0);
  ReplaySample sample(int64_t batch_size, double beta = 1.0);
  void update_priorities(const at::Tensor& indices, const at::Tensor& priorities);
  // Sequences stored (0 before the first one).
  int64_t size() const;
  const SequenceReplaySpec& spec() const { return spec_; }
  const ReplayBuffer* buffer() const { return buffer_.get(); }
  // Empties the replay and every env's partial episode (a resumed run's envs start afresh).
  void clear();

 private:
  // One env's episode so far: the steps from episode position `base` on, each with the state
  // before it.
  struct Step {
    at::Tensor observation;
    int64_t action = 0;
    float reward = 0.0f;
    std::map<std::string, at::Tensor> state;
  };
  struct Episode {
    std::deque<Step> steps;
    int64_t base = 0;         // the episode position of steps.front()
    int64_t position = 0;     // steps taken in the episode
    int64_t next_window = 0;  // k of the next window to store
  };

  // Window k of `episode`, whose steps end at the episode's last recorded step, followed by
  // `bootstrap` (the observation after it); `terminated` if that step ended the episode by
  // termination.
  TensorMap window(const Episode& episode, int64_t k, const at::Tensor& bootstrap, bool terminated) const;
  ReplayBuffer& buffer_for(at::ScalarType observation_dtype);

  SequenceReplaySpec spec_;
  std::unique_ptr<ReplayBuffer> buffer_;
  std::map<int, std::vector<Episode>> episodes_;  // stream -> one per env
  core::Rng rng_;
};

}  // namespace concord::algos
