#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "concord/algos/experience.h"
#include "concord/core/rng.h"

namespace concord::algos {

class SumTree;

// One field of a transition as the algorithm declares it: the shape of one transition's entry
// ({} for a scalar) and its dtype. The buffer stores exactly this dtype, so uint8 image
// observations stay uint8 (4x smaller than a float copy).
struct ReplayField {
  std::vector<int64_t> shape;
  c10::ScalarType dtype = c10::ScalarType::Float;
};

struct ReplayBufferConfig {
  int64_t capacity = 0;  // transitions held; the oldest is overwritten when full
  // Field name -> layout, e.g. a DQN on CartPole: observation {4} Float, action {} Long,
  // reward {} Float, terminated {} Bool, next_observation {4} Float. At least one field.
  std::map<std::string, ReplayField> fields;
  // Proportional prioritised replay (Schaul et al., 2016) instead of uniform sampling.
  bool prioritized = false;
  // Priority exponent: P(i) = p_i^alpha / sum_j p_j^alpha. 0 samples uniformly (and then
  // p^0 = 1 even for p = 0); 1 samples in proportion to the priorities. Only with prioritized.
  double alpha = 0.6;

  // Throws std::invalid_argument listing every bad value.
  void validate() const;
};

// The importance-sampling exponent beta, annealed linearly from beta0 at step 0 to 1 at
// `steps` and held at 1 after (Schaul et al. anneal it over training because the correction
// matters most near convergence). Counts whatever unit the policy chooses: learner updates,
// environment steps or samples drawn. steps = 0 means beta = 1 from the start.
struct BetaSchedule {
  double beta0 = 0.4;
  int64_t steps = 0;

  // beta0 + (1 - beta0) * min(1, step / steps). Throws std::invalid_argument if beta0 is
  // outside [0, 1], steps < 0 or step < 0.
  double at(int64_t step) const;
};

// What ReplayBuffer::sample returns, for a batch of size B.
struct ReplaySample {
  // [B] int64: each drawn transition's insertion index, its position in the stream of every
  // transition ever added (0 for the first), which is what update_priorities expects back. The
  // transition lives in slot index % capacity.
  at::Tensor indices;
  // Field name -> [B, *shape] in the declared dtype: copies, not views of the storage.
  TensorMap fields;
  // [B] float32 importance weights w_i = (N P(i))^-beta / max_j w_j, in (0, 1]; all 1 for a
  // uniform buffer.
  at::Tensor weights;
};

// A circular replay buffer of transitions for off-policy algorithms (DQN, SAC, Ape-X), with
// uniform or proportional prioritised sampling.
//
// Storage: one CPU tensor [capacity, *shape] per declared field, in the declared dtype.
// Transitions are written in arrival order to slots 0, 1, ..., capacity - 1, 0, ...; once the
// buffer is full each new transition overwrites the oldest.
//
// Indices: the buffer numbers transitions in arrival order, from 0 (the insertion index; with
// concurrent writers, the order in which their add() calls take the lock). The
// transition with insertion index i is stored while i >= num_added() - capacity(), in slot
// i % capacity(). sample() returns insertion indices, not slots, so that a later
// update_priorities() can tell a transition that is still there from the one that has since
// taken its slot.
//
// Prioritised sampling (Schaul et al., 2016, proportional variant):
//   P(i) = p_i^alpha / sum_j p_j^alpha over the stored transitions;
//   a batch of B is drawn stratified, as in the paper: [0, sum_j p_j^alpha) is cut into B
//   equal ranges and one mass is drawn uniformly from each, then mapped to its transition by
//   the sum tree. Each draw is a transition i with overall frequency P(i) (the expected count of
//   i in a batch is exactly B P(i)), with less variance than B independent draws.
//   w_i = (N P(i))^-beta / max_j w_j with N = size(), the max over stored transitions that can
//   be drawn (p_j^alpha > 0); computed as (p_i^alpha / min_j p_j^alpha)^-beta, which is the same
//   number without the N and the sum.
// A transition added without a priority gets the largest priority seen so far (initially 1, then
// the max of every priority given to add() or applied by update_priorities()), so that it is
// likely to be replayed at least once. A priority of 0 means never drawn (with alpha > 0);
// callers pass |td error| + epsilon to keep every transition reachable.
//
// Thread safety: every member function may be called from any thread; one mutex serialises
// them all, so several actors may add() while a learner samples and updates priorities (the
// Ape-X pattern). add() validates and moves its batch to the CPU before taking the lock, and
// holds it only to copy rows into storage; sample() holds it while it gathers its rows, so a
// sample never sees a half-written transition. Simple and correct rather than lock-free: the
// critical sections are memory copies of one batch.
//
// Errors: bad arguments throw std::invalid_argument with one line that names the problem, and
// leave the buffer unchanged.
class ReplayBuffer {
 public:
  // Validates the config and allocates the storage (uninitialised: no slot is read before it
  // is written). Throws std::invalid_argument.
  explicit ReplayBuffer(ReplayBufferConfig config);
  ~ReplayBuffer();
  ReplayBuffer(const ReplayBuffer&) = delete;
  ReplayBuffer& operator=(const ReplayBuffer&) = delete;

  // Appends N transitions: `batch` maps every declared field, and nothing else, to a tensor
  // [N, *shape] of the declared dtype, on any device. `priorities`, if given, is a [N] floating
  // tensor of finite values >= 0 (only for a prioritized buffer); otherwise each new transition
  // gets max_priority(). N may be 0; N > capacity keeps the last capacity transitions (the
  // earlier ones still count in num_added(), as added and overwritten).
  void add(const TensorMap& batch, const std::optional<at::Tensor>& priorities = std::nullopt);

  // Draws batch_size transitions with replacement: uniformly over the stored ones, or by
  // priority (see above) for a prioritized buffer, with importance exponent `beta` in [0, 1]
  // (ignored by a uniform buffer; see BetaSchedule). `rng` is the caller's (one per sampling
  // thread). Throws std::invalid_argument if the buffer is empty, batch_size < 1 or
  // batch_size > size(), beta is outside [0, 1], or every stored priority is 0.
  ReplaySample sample(int64_t batch_size, core::Rng& rng, double beta = 1.0) const;

  // Sets the priorities of the transitions with insertion indices `indices` ([M] int64, as
  // sample() returned them) to `priorities` ([M] floating, finite, >= 0), typically
  // |td error| + epsilon after a learning step. The stale-index rule: an index whose transition
  // has been overwritten since it was sampled (index < num_added() - capacity()) is skipped
  // silently, since its slot now holds a newer transition whose priority the old TD error says
  // nothing about. A repeated index (sampling is with replacement) takes its last priority.
  // Returns how many priorities were applied. Throws std::invalid_argument for a uniform buffer,
  // mismatched shapes, a negative or non-finite priority, or an index that was never issued
  // (< 0 or >= num_added()), applying none.
  int64_t update_priorities(const at::Tensor& indices, const at::Tensor& priorities);

  // Every stored transition in arrival order (copies), then empties the buffer (num_added()
  // back to 0): a buffer used as a queue, each transition learned from once (hogwild's
  // asynchronous Q-learning). Throws std::invalid_argument for a prioritized buffer, or if
  // transitions were overwritten since the last take (they would be lost without a word).
  TensorMap take_all();

  // Transitions stored: min(num_added(), capacity()).
  int64_t size() const;
  int64_t capacity() const { return config_.capacity; }
  // Transitions ever added, overwritten ones included: the next insertion index.
  int64_t num_added() const;
  // The priority new transitions get: the largest seen so far, at least 1. Prioritized only.
  double max_priority() const;
  // The priority (before the alpha exponent) of the stored transition with insertion index
  // `index`. Prioritized only; throws std::invalid_argument if it is not stored.
  double priority(int64_t index) const;
  const ReplayBufferConfig& config() const { return config_; }

  // The buffer's state as tensors on the CPU (copies), for a checkpoint (prefix the names if it
  // holds other state):
  //   "capacity"         int64 scalar
  //   "num_added"        int64 scalar (the write position is num_added % capacity, the size
  //                      min(num_added, capacity))
  //   "fields/<name>"    [size, *shape] in the field's dtype: slot s in row s
  //   "priorities"       float64 [size], before the alpha exponent   (prioritized only)
  //   "max_priority"     float64 scalar                              (prioritized only)
  TensorMap state() const;
  // Replaces the contents with a state() of a buffer with the same capacity and fields (alpha
  // may differ: the tree is rebuilt from the raw priorities). A uniform buffer ignores
  // "priorities" and "max_priority"; a prioritized one requires them. Throws
  // std::invalid_argument naming the first problem (a capacity or field that differs, a missing,
  // unexpected or mis-shaped tensor, a bad value), leaving the buffer unchanged.
  void load_state(const TensorMap& state);

 private:
  int64_t size_locked() const;
  // The insertion index of the transition in stored slot `slot`.
  int64_t index_of_slot(int64_t slot) const;
  double leaf_priority(double priority) const;

  const ReplayBufferConfig config_;
  mutable std::mutex mutex_;
  TensorMap storage_;               // name -> [capacity, *shape]
  int64_t num_added_ = 0;           // guarded by mutex_
  std::unique_ptr<SumTree> tree_;   // p^alpha per slot; prioritized only; guarded by mutex_
  std::vector<double> priorities_;  // raw p per slot; prioritized only; guarded by mutex_
  double max_priority_ = 1.0;       // guarded by mutex_
};

}  // namespace concord::algos
