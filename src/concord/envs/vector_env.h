#pragma once

// VectorEnv: N copies of one environment stepped as a batch, EnvPool style.
//
//   sync  (batch_size == num_envs):
//     step(actions [N]) -> parallel_for over chunks of envs, each thread its home range first
//     (caller + helpers) -> batch rows [N]
//   async (batch_size < num_envs):
//     send(actions, ids) -> per-env action rows + one IndexQueue per thread (env i's home is
//     thread i * T / N) -> helpers pop whole chunks of their home envs, the caller steps its
//     own, small remainders and stalled queues while it waits in recv -> slots in a ring of
//     result blocks [batch_size rows each] -> recv() returns the oldest block once it is full
//
// Environments never see threads: each writes its observation straight into its row of a
// preallocated, cache-line-aligned batch buffer. Later layers wrap these buffers with
// torch::from_blob; nothing here allocates per step. Chunks are sized adaptively to about 20 us
// of measured env work, so cheap envs in small batches stay on the calling thread instead of
// paying for a cross-core handoff, while slow envs are spread one by one.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "concord/envs/batched_envs.h"
#include "concord/envs/env.h"
#include "concord/envs/registry.h"
#include "concord/envs/worker_pool.h"

namespace concord::envs {

struct VectorEnvConfig {
  std::string env_id;   // Registry id of the environment, e.g. "CartPole-v1".
  int num_envs = 1;     // N: how many copies are stepped.
  int num_threads = 1;  // Threads that step them, the calling thread included.
  int batch_size = 0;   // 0 or num_envs: synchronous; 1..num_envs-1: asynchronous.
  uint64_t seed = 0;    // Base seed of the first reset; env i uses derive_seed(seed,
                        //   first_env + i).
  // Where this vector's envs start among a run's: a run split over several vectors (agent or
  // worker threads) gives each the envs one vector of them all would have, seeds included.
  int64_t first_env = 0;
  std::chrono::milliseconds recv_timeout{10'000};  // recv() throws after waiting this long.
  int chunk_size = 0;                              // Envs a thread steps per claim (0: adaptive, from timed steps).
  EnvOptions options;                              // Passed to every env's factory (see registry.h).
};

// Slice `part` of `parts` equal slices of a run's envs (config.num_envs divisible by parts): the
// run's envs [part x k, (part + 1) x k), k = num_envs / parts, seeded as one vector of them all
// would seed them. For policies that give each thread its own envs.
VectorEnvConfig env_slice(const VectorEnvConfig& config, int part, int parts);

namespace detail {

// A zero-initialised array of a trivially copyable T that starts on a cache line and is padded
// to whole lines, so that buffers written by different threads never share a line.
template <typename T>
class AlignedArray {
 public:
  AlignedArray() = default;
  explicit AlignedArray(int64_t size) : size_(size) {
    const size_t bytes = (static_cast<size_t>(size) * sizeof(T) + 63) / 64 * 64 + 64;
    data_.reset(static_cast<T*>(::operator new[](bytes, std::align_val_t{64})));
    std::fill_n(reinterpret_cast<unsigned char*>(data_.get()), bytes, 0);
  }
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  T& operator[](int64_t i) { return data_[i]; }
  const T& operator[](int64_t i) const { return data_[i]; }
  int64_t size() const { return size_; }

 private:
  struct Free {
    void operator()(T* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };
  std::unique_ptr<T[], Free> data_;
  int64_t size_ = 0;
};

}  // namespace detail

// Steps N copies of one registered environment as a batch.
//
// Sync mode (batch_size 0 or N): reset() and step() act on all N envs and return a Batch whose
// row i is env i. Async mode (batch_size B < N): async_reset() and send() queue work for some
// envs; recv() returns the first B results to finish, in completion order, with their env ids.
//
// Auto-reset follows Gymnasium 0.29 ("same step"): on the step that ends an episode (terminated
// or truncated) the env is reset at once; its row holds the new episode's first observation,
// final_observations holds the ended episode's last one, has_final is 1, and episode_returns /
// episode_lengths hold the ended episode's totals.
//
// Seeding: reset(seed) seeds env i with core::derive_seed(seed, first_env + i) (not Gymnasium's
// seed + i, so that runs seeded s and s + 1 share no env stream); the first reset without a seed
// uses config.seed; later resets and auto-resets continue each env's own stream. Each env's
// trajectory therefore depends only on the seed and its own actions, not on num_threads.
//
// Thread-safety: all public methods are called by one thread (the owner); the pool's helpers
// step the envs, each env by one thread at a time. After a step throws, reset before reusing.
class VectorEnv final : public BatchedEnvs {
 public:
  // Validates `config` (std::invalid_argument naming the bad values, or the registry's own
  // error for an unknown id), makes the N envs and starts the threads.
  explicit VectorEnv(VectorEnvConfig config, const Registry& registry = Registry::global());
  ~VectorEnv() override;
  VectorEnv(const VectorEnv&) = delete;
  VectorEnv& operator=(const VectorEnv&) = delete;

  const VectorEnvConfig& config() const { return config_; }
  const EnvSpec& spec() const override { return spec_; }
  int64_t num_envs() const override { return config_.num_envs; }
  int64_t batch_size() const override { return batch_size_; }
  bool is_async() const override { return batch_size_ < config_.num_envs; }
  int num_threads() const { return pool_->num_threads(); }
  int64_t obs_dim() const override { return obs_dim_; }
  // Bytes of one observation: obs_dim() elements of the observation space's dtype.
  int64_t obs_bytes() const override { return obs_bytes_; }
  // Floats per action for a Box action space; 1 for Discrete.
  int64_t act_dim() const override { return act_dim_; }

  // --- Sync API (throws std::logic_error in async mode) ---

  // Resets every env (seeding as described above). The Batch is valid until the next call.
  Batch reset(std::optional<uint64_t> seed = std::nullopt) override;
  // Steps every env: actions[i] for env i (Discrete action space) ...
  Batch step(const int64_t* actions) override;
  // ... or actions[i * act_dim, (i + 1) * act_dim) for env i (Box action space). Box actions are
  // passed on unclipped, as Gymnasium does. Throws std::invalid_argument for the wrong action
  // kind and std::out_of_range for a Discrete index outside [0, n), before stepping anything.
  Batch step(const float* actions) override;
  // The results of the last reset() or step().
  Batch last_batch() const;

  // --- Async API (throws std::logic_error in sync mode) ---

  // Queues a reset of every env; throws std::logic_error while any env is in flight.
  void async_reset(std::optional<uint64_t> seed = std::nullopt);
  // Queues one step for each of env_ids[0..count) with actions[k] (or the act_dim floats at
  // actions + k * act_dim) for env_ids[k]. Throws std::invalid_argument / std::out_of_range
  // for bad ids or actions and std::logic_error for an env already in flight; nothing is
  // queued then.
  void send(const int64_t* actions, const int32_t* env_ids, int64_t count);
  void send(const float* actions, const int32_t* env_ids, int64_t count);
  // Waits for the next batch_size results (helping to step while it waits) and returns them.
  // The Batch is valid until the next recv() or async_reset(). Throws std::runtime_error after
  // config.recv_timeout without a full batch, and rethrows an exception a worker's env threw.
  Batch recv();
  // Envs sent (or reset) whose results no recv() has returned yet.
  int64_t num_in_flight() const { return in_flight_count_; }

 private:
  struct Block;
  enum class Op : uint8_t { kStep, kReset };

  template <bool kDiscrete>
  void step_one(int32_t env, const void* actions, Block& out, int64_t row);
  void reset_one(int32_t env, std::optional<uint64_t> seed, Block& out, int64_t row);
  template <bool kDiscrete>
  Batch step_all(const void* actions);
  void check_discrete_actions(const int64_t* actions, int64_t count, const int32_t* env_ids, const char* where) const;
  void check_action_kind(bool discrete, const char* where) const;
  void require_mode(bool async, const char* where) const;
  static VectorEnvConfig validated(VectorEnvConfig config);
  static std::vector<std::unique_ptr<Env>> make_envs(const VectorEnvConfig& config, const Registry& registry);
  Batch view(const Block& block) const;
  std::optional<uint64_t> reset_seed(std::optional<uint64_t> seed, int64_t env) const;
  // Envs per chunk: config.chunk_size, or about kTargetChunkNanoseconds of estimated work.
  int64_t grain() const;
  int64_t sync_chunk_size() const;
  void record_cost(std::chrono::steady_clock::duration elapsed, int64_t steps);

  // Async internals.
  void claim_for_send(const int32_t* env_ids, int64_t count, const char* where);
  void enqueue(const int32_t* env_ids, int64_t count);
  void service_loop(int home);
  // The owner steps one chunk of queued envs (see the rotation rule inside); returns how many.
  int64_t help_once();
  // The thread whose queue an env goes to: contiguous ranges of N / num_threads envs.
  int64_t home_of(int32_t env) const { return int64_t{env} * static_cast<int64_t>(queues_.size()) / config_.num_envs; }
  template <bool kDiscrete>
  void process_chunk(const int32_t* ids, int64_t count);
  void record_error();
  [[noreturn]] void rethrow_error();

  VectorEnvConfig config_;
  std::vector<std::unique_ptr<Env>> envs_;
  EnvSpec spec_;
  int64_t batch_size_ = 0;
  int64_t obs_dim_ = 0;
  int64_t obs_bytes_ = 0;
  int64_t act_dim_ = 0;
  bool discrete_ = false;
  // Adaptive chunking (config.chunk_size == 0): an estimate of one env step's cost in
  // picoseconds, updated from timed chunks, sizes chunks to about kTargetChunkNanoseconds of work.
  // On its own cache line: every thread updates it, and the fields around it are read in the hot loop.
  static constexpr int64_t kTargetChunkNanoseconds = 20'000;
  struct alignas(64) StepCost {
    std::atomic<int64_t> picoseconds{1'000'000};
  };
  StepCost step_cost_;
  int64_t sync_steps_ = 0;
  bool seeded_ = false;
  bool started_ = false;

  detail::AlignedArray<double> running_return_;   // [N] return of the episode in progress.
  detail::AlignedArray<int32_t> running_length_;  // [N] its length so far.
  // Result blocks: one of N rows in sync mode, a ring of batch_size-row blocks in async mode.
  std::vector<std::unique_ptr<Block>> blocks_;

  // Async state. Written by the owner before an id is queued, read by the worker that pops it.
  detail::AlignedArray<int64_t> discrete_actions_;  // [N]
  detail::AlignedArray<float> box_actions_;         // [N, act_dim]
  detail::AlignedArray<Op> pending_op_;             // [N]
  detail::AlignedArray<uint64_t> pending_seed_;     // [N]
  detail::AlignedArray<uint8_t> has_pending_seed_;  // [N]
  // Owner-only bookkeeping.
  detail::AlignedArray<uint8_t> in_flight_;  // [N]
  int64_t in_flight_count_ = 0;
  int64_t recv_count_ = 0;
  std::vector<int32_t> owner_ids_;
  // One queue per thread (the owner's is 0): an env is always queued to its home thread, so it
  // stays in that core's cache; the owner also takes from the others' queues while in recv().
  std::vector<std::unique_ptr<IndexQueue>> queues_;
  std::vector<std::vector<int32_t>> staged_;  // Owner-only: send()'s ids split by home.
  size_t help_cursor_ = 0;                    // Owner-only: where help_once() starts looking.
  // The owner steps a helper's queued envs once nobody has popped from that queue for this long.
  static constexpr std::chrono::microseconds kStealAfter{50};
  alignas(64) std::atomic<int64_t> next_slot_{0};
  alignas(64) std::mutex ready_mutex_;
  std::condition_variable ready_cv_;
  std::atomic<bool> owner_waiting_{false};
  std::atomic<bool> failed_{false};
  std::exception_ptr error_;  // Guarded by ready_mutex_.

  // Declared last: its helpers are joined (by the destructor) before anything above goes away.
  std::unique_ptr<WorkerPool> pool_;
};

}  // namespace concord::envs
