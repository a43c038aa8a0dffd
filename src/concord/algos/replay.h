#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "concord/algos/experience.h"
#include "concord/algos/n_step_returns.h"
#include "concord/algos/replay_buffer.h"
#include "concord/core/checkpoint.h"
#include "concord/core/rng.h"

namespace concord::algos {

// The fields of every stored transition, each with leading dimension N. One form for every
// off-policy learner: the target is y = G + discount * V(bootstrap observation), with V the
// algorithm's (max_a Q_target for DQN, the soft value for SAC).
namespace replay_field {
inline constexpr const char* kObservation = "observation";  // o_t
inline constexpr const char* kAction = "action";            // a_t: int64 [] or float [d]
inline constexpr const char* kReturn = "return";            // G_t, float [] (n_step_returns.h)
inline constexpr const char* kDiscount = "discount";        // gamma^m, or 0 after a termination, float []
inline constexpr const char* kBootstrapObservation = "bootstrap_observation";  // o_{t+m} (or a final one)
}  // namespace replay_field

// What an off-policy learner keeps, as it declares it.
struct ReplaySpec {
  std::string owner = "Replay";            // names the caller in errors: "Dqn::observe"
  std::vector<int64_t> observation_shape;  // one observation's shape
  // The stored dtype of observations: the env's, fixed by the first add() (uint8 grids stay
  // uint8), when unset; otherwise observations are converted to it.
  std::optional<at::ScalarType> observation_dtype;
  // > 0: actions are integer indices in [0, num_actions), stored int64 []. 0: continuous actions,
  // stored float [action_shape] ([B] fits an action_shape of {1}).
  int64_t num_actions = 0;
  std::vector<int64_t> action_shape;
  int64_t capacity = 0;      // transitions held
  int64_t n_step = 1;        // n of the n-step return, cut at episode ends
  double gamma = 0.99;       // its discount
  bool prioritized = false;  // proportional prioritised replay (replay_buffer.h)
  double priority_alpha = 0.6;
  double priority_eps = 1e-6;     // Ape-X's initial priority: |TD error of the acting network| + eps
  bool require_truncated = true;  // false: a step may leave out `truncated` (n_step 1 never reads it)
};

// The replay fragment of an off-policy learner: the adder that turns collected steps into stored
// transitions, the buffer that holds them and the sampler that draws the learner's batches. The
// learner declares what it stores (ReplaySpec) and samples from it; the policy places it (beside
// the learner, fed by actor threads or by a rank that receives actor ranks' steps) by where it
// calls add().
//
//   add(step, stream):   every field of experience.h's `transition`, leading dimension B
//     per env b of `stream`: (G, discount, bootstrap o) of each n-step window that completes
//     (NStepQueue, one per env and stream; for n = 1 G = r_t, discount = gamma or 0 after a
//     termination, bootstrap o = next_observations[b]: the same numbers without the queues)
//     prioritised, with the acting network's estimates (kActingQ, kActingNextValue): each enters at
//     |G + discount * next value - Q(o_t, a_t)| + priority_eps (Ape-X), else at the maximum
//   sample(batch, beta):  from the buffer, with the fragment's own generator
//
// Storage lives on the CPU. Thread safety: add() calls are serialised by the caller (they share
// the n-step windows); sample() and update_priorities() run on one thread at a time, which may
// be another than add()'s: the windows are add()'s alone and the buffer is thread-safe. The buffer
// is built on the first add() when the observation dtype is the env's (so the happens-before of
// OffPolicyLearner::observes_while_updating), at construction otherwise.
class Replay {
 public:
  // Throws std::invalid_argument for a bad spec. The sampler's seed is drawn from LibTorch's
  // generator of the calling thread (core::thread_generator), so that torch::manual_seed fixes it.
  explicit Replay(ReplaySpec spec);

  // Stores what `step` completes (above). Throws std::invalid_argument, naming spec.owner, for a
  // missing field, rows that disagree, a mis-shaped observation or action, integer actions out of
  // range or continuous ones where indices are due, or a stream whose batch size changed. n-step
  // windows keep host copies of up to n - 1 steps per env until they complete.
  void add(const TensorMap& step, int stream = 0);

  // `batch_size` transitions (ReplayBuffer::sample) drawn with this fragment's generator.
  // Requires batch_size <= size().
  ReplaySample sample(int64_t batch_size, double beta = 1.0);
  // ReplayBuffer::update_priorities.
  void update_priorities(const at::Tensor& indices, const at::Tensor& priorities);
  // Every stored transition in arrival order, emptying the buffer (ReplayBuffer::take_all); none
  // before the first add().
  TensorMap take_all();

  // Transitions stored (0 before the buffer is built).
  int64_t size() const;
  // nullptr until the buffer is built.
  const ReplayBuffer* buffer() const { return buffer_.get(); }
  const ReplaySpec& spec() const { return spec_; }
  // The sampler's generator, for a learner's own draws that follow the same seed (Dqn's A3C
  // epsilons, drawn before any sampling).
  core::Rng& generator() { return rng_; }

  // Checkpoints: the sampler's state as text bytes under "replay_rng", and with `with_contents`
  // the buffer's state() under "replay/" (when it is built). The n-step windows are not saved: they
  // belong to episodes a resumed run does not continue (its envs start afresh).
  void save(core::Checkpoint& checkpoint, bool with_contents) const;
  // What load() applies, read and checked first so that a learner can check everything before it
  // changes anything.
  struct Saved {
    std::optional<core::Rng> rng;          // absent in checkpoints from before it was saved
    std::unique_ptr<ReplayBuffer> buffer;  // nullptr: no contents saved (or not accepted)
  };
  // Reads the sampler and, with `accept_contents`, the buffer. Throws core::CheckpointError for an
  // unreadable sampler state or a buffer that does not fit this spec; changes nothing.
  Saved read(const core::Checkpoint& checkpoint, bool accept_contents) const;
  // Applies what read() gave. Contents that were not saved leave the buffer as it is with
  // `keep_unsaved_contents`, and empty it otherwise. The n-step windows are emptied.
  void restore(Saved saved, bool keep_unsaved_contents);

 private:
  ReplayBufferConfig buffer_config(at::ScalarType observation_dtype) const;
  ReplayBuffer& buffer_for(at::ScalarType observation_dtype);

  ReplaySpec spec_;
  std::unique_ptr<ReplayBuffer> buffer_;
  std::map<int, std::vector<NStepQueue>> windows_;  // stream -> one window per env (n > 1)
  core::Rng rng_;                                   // sampling
};

}  // namespace concord::algos
