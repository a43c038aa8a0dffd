#include "concord/envs/vector_env.h"

#include <numeric>
#include <sstream>
#include <stdexcept>

#include "concord/core/rng.h"

namespace concord::envs {
namespace {

template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

// Rounds up to a multiple of 16 envs, so that chunk boundaries fall on cache-line boundaries of
// the per-env float and int32 buffers.
int64_t round_up_16(int64_t n) { return (n + 15) / 16 * 16; }

}  // namespace

// One set of result rows: all N envs in sync mode, one batch_size slice of the ring in async
// mode. Every field is its own cache-line-aligned buffer.
struct VectorEnv::Block {
  Block(int64_t num_rows, int64_t obs_bytes)
      : rows(num_rows),
        env_ids(num_rows),
        observations(num_rows * obs_bytes),
        rewards(num_rows),
        terminated(num_rows),
        truncated(num_rows),
        has_final(num_rows),
        final_observations(num_rows * obs_bytes),
        episode_returns(num_rows),
        episode_lengths(num_rows) {}

  int64_t rows;
  detail::AlignedArray<int32_t> env_ids;
  detail::AlignedArray<unsigned char> observations;  // elements of the observation space's dtype
  detail::AlignedArray<float> rewards;
  detail::AlignedArray<uint8_t> terminated;
  detail::AlignedArray<uint8_t> truncated;
  detail::AlignedArray<uint8_t> has_final;
  detail::AlignedArray<unsigned char> final_observations;
  detail::AlignedArray<float> episode_returns;
  detail::AlignedArray<int32_t> episode_lengths;
  // Async mode: rows written so far in the current round of this block.
  alignas(64) std::atomic<int64_t> filled{0};
};

VectorEnvConfig env_slice(const VectorEnvConfig& config, int part, int parts) {
  VectorEnvConfig slice = config;
  slice.num_envs = config.num_envs / parts;
  slice.first_env = config.first_env + static_cast<int64_t>(part) * slice.num_envs;
  return slice;
}

VectorEnvConfig VectorEnv::validated(VectorEnvConfig config) {
  const VectorEnvConfig& c = config;
  if (c.num_envs < 1) {
    throw std::invalid_argument(concat("VectorEnvConfig: num_envs must be >= 1, got ", c.num_envs));
  }
  if (c.num_threads < 1) {
    throw std::invalid_argument(concat("VectorEnvConfig: num_threads must be >= 1, got ", c.num_threads));
  }
  if (c.batch_size < 0 || c.batch_size > c.num_envs) {
    throw std::invalid_argument(
        concat("VectorEnvConfig: batch_size must be in [0, num_envs=", c.num_envs, "], got ", c.batch_size));
  }
  if (c.recv_timeout.count() <= 0) {
    throw std::invalid_argument(
        concat("VectorEnvConfig: recv_timeout must be positive, got ", c.recv_timeout.count(), " ms"));
  }
  if (c.chunk_size < 0) {
    throw std::invalid_argument(concat("VectorEnvConfig: chunk_size must be >= 0 (0: automatic), got ", c.chunk_size));
  }
  if (c.first_env < 0) {
    throw std::invalid_argument(concat("VectorEnvConfig: first_env must be >= 0, got ", c.first_env));
  }
  return config;
}

std::vector<std::unique_ptr<Env>> VectorEnv::make_envs(const VectorEnvConfig& config, const Registry& registry) {
  std::vector<std::unique_ptr<Env>> envs;
  envs.reserve(static_cast<size_t>(config.num_envs));
  // The registry's own error names an unknown id.
  for (int i = 0; i < config.num_envs; ++i) envs.push_back(registry.make(config.env_id, config.options));
  return envs;
}

VectorEnv::VectorEnv(VectorEnvConfig config, const Registry& registry)
    : config_(validated(std::move(config))), envs_(make_envs(config_, registry)), spec_(envs_.front()->spec()) {
  const VectorEnvConfig& c = config_;
  obs_dim_ = spec_.observation_space.flat_size();
  obs_bytes_ = spec_.observation_space.byte_size();
  act_dim_ = spec_.action_space.flat_size();
  discrete_ = spec_.action_space.is_discrete();

  const int64_t n = c.num_envs;
  const int64_t threads = c.num_threads;
  batch_size_ = c.batch_size == 0 ? n : c.batch_size;
  running_return_ = detail::AlignedArray<double>(n);
  running_length_ = detail::AlignedArray<int32_t>(n);

  if (!is_async()) {
    blocks_.push_back(std::make_unique<Block>(n, obs_bytes_));
    std::iota(blocks_[0]->env_ids.data(), blocks_[0]->env_ids.data() + n, 0);
    pool_ = std::make_unique<WorkerPool>(c.num_threads);
    return;
  }

  // Async: a ring of ceil(N / B) + 1 blocks is enough, since at most N results can be
  // outstanding beyond the block the owner is reading.
  const int64_t num_blocks = (n + batch_size_ - 1) / batch_size_ + 1;
  for (int64_t b = 0; b < num_blocks; ++b) {
    blocks_.push_back(std::make_unique<Block>(batch_size_, obs_bytes_));
  }
  if (discrete_) {
    discrete_actions_ = detail::AlignedArray<int64_t>(n);
  } else {
    box_actions_ = detail::AlignedArray<float>(n * act_dim_);
  }
  pending_op_ = detail::AlignedArray<Op>(n);
  pending_seed_ = detail::AlignedArray<uint64_t>(n);
  has_pending_seed_ = detail::AlignedArray<uint8_t>(n);
  in_flight_ = detail::AlignedArray<uint8_t>(n);
  owner_ids_.resize(static_cast<size_t>(n));
  for (int64_t t = 0; t < threads; ++t) {
    queues_.push_back(std::make_unique<IndexQueue>(n));
    staged_.emplace_back();
    staged_.back().reserve(static_cast<size_t>(n));
  }
  pool_ = std::make_unique<WorkerPool>(c.num_threads);
  // Task t serves queue t + 1 until the destructor closes the queues.
  pool_->submit(
      threads - 1,
      [](void* self, int64_t task) { static_cast<VectorEnv*>(self)->service_loop(static_cast<int>(task) + 1); }, this);
}

VectorEnv::~VectorEnv() {
  for (auto& queue : queues_) queue->close();
  try {
    pool_->wait();
  } catch (...) {
    // The service loops catch everything themselves; nothing can be reported from here.
  }
  pool_.reset();
}

// ---------------------------------------------------------------------------------------------
// Per-env work: the hot loop. One virtual call (Env::step_state) per env step, no allocation.

template <bool kDiscrete>
void VectorEnv::step_one(int32_t env, const void* actions, Block& out, int64_t row) {
  Action action;
  if constexpr (kDiscrete) {
    action.index = static_cast<const int64_t*>(actions)[env];
  } else {
    action.values = static_cast<const float*>(actions) + env * act_dim_;
  }
  Env& instance = *envs_[static_cast<size_t>(env)];
  unsigned char* observation = out.observations.data() + row * obs_bytes_;
  const StepResult result = instance.step(action, observation);
  out.rewards[row] = result.reward;
  out.terminated[row] = result.terminated;
  out.truncated[row] = result.truncated;
  const double episode_return = running_return_[env] + result.reward;
  const int32_t episode_length = running_length_[env] + 1;
  if (result.terminated || result.truncated) {
    std::copy_n(observation, obs_bytes_, out.final_observations.data() + row * obs_bytes_);
    out.has_final[row] = 1;
    out.episode_returns[row] = static_cast<float>(episode_return);
    out.episode_lengths[row] = episode_length;
    running_return_[env] = 0.0;
    running_length_[env] = 0;
    instance.reset(std::nullopt, observation);
  } else {
    out.has_final[row] = 0;
    out.episode_returns[row] = 0.0f;
    out.episode_lengths[row] = 0;
    running_return_[env] = episode_return;
    running_length_[env] = episode_length;
  }
}

void VectorEnv::reset_one(int32_t env, std::optional<uint64_t> seed, Block& out, int64_t row) {
  envs_[static_cast<size_t>(env)]->reset(seed, out.observations.data() + row * obs_bytes_);
  out.rewards[row] = 0.0f;
  out.terminated[row] = 0;
  out.truncated[row] = 0;
  out.has_final[row] = 0;
  out.episode_returns[row] = 0.0f;
  out.episode_lengths[row] = 0;
  running_return_[env] = 0.0;
  running_length_[env] = 0;
}

int64_t VectorEnv::grain() const {
  if (config_.chunk_size > 0) return config_.chunk_size;
  const int64_t cost = std::max<int64_t>(1, step_cost_.picoseconds.load(std::memory_order_relaxed));
  return std::max<int64_t>(1, kTargetChunkNanoseconds * 1000 / cost);
}

int64_t VectorEnv::sync_chunk_size() const {
  if (config_.chunk_size > 0) return config_.chunk_size;
  const int64_t n = config_.num_envs;
  const int64_t threads = pool_->num_threads();
  if (threads == 1) return n;
  // At least the grain (cheap envs: few chunks, or one run inline), at most about four chunks
  // per thread (so a helper that starts late leaves work to the others).
  const int64_t chunk = std::max(grain(), (n + 4 * threads - 1) / (4 * threads));
  return chunk >= 16 ? round_up_16(chunk) : chunk;
}

void VectorEnv::record_cost(std::chrono::steady_clock::duration elapsed, int64_t steps) {
  if (steps <= 0) return;
  const int64_t old_cost = step_cost_.picoseconds.load(std::memory_order_relaxed);
  const int64_t sample = std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count() * 1000 / steps;
  // A moving average over about eight samples; a sample from a preempted thread moves it at
  // most eightfold. Concurrent updates may overwrite each other, which only drops samples.
  const int64_t clamped = std::clamp(sample, old_cost / 8, old_cost * 8 + 1);
  step_cost_.picoseconds.store(std::max<int64_t>(1, old_cost + (clamped - old_cost) / 8), std::memory_order_relaxed);
}

std::optional<uint64_t> VectorEnv::reset_seed(std::optional<uint64_t> seed, int64_t env) const {
  const auto index = static_cast<uint64_t>(config_.first_env + env);
  if (seed) return core::derive_seed(*seed, index);
  if (!seeded_) return core::derive_seed(config_.seed, index);
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Checks.

void VectorEnv::require_mode(bool async, const char* where) const {
  if (async == is_async()) return;
  if (async) {
    throw std::logic_error(concat("VectorEnv::", where, " needs async mode (batch_size < num_envs)",
                                  ", but batch_size=", batch_size_, " == num_envs=", config_.num_envs,
                                  "; use reset()/step()"));
  }
  throw std::logic_error(concat("VectorEnv::", where, " needs sync mode, but batch_size=", batch_size_,
                                " < num_envs=", config_.num_envs, "; use async_reset()/send()/recv()"));
}

void VectorEnv::check_action_kind(bool discrete, const char* where) const {
  if (discrete == discrete_) return;
  throw std::invalid_argument(concat("VectorEnv::", where, ": ", config_.env_id, " has action space ",
                                     spec_.action_space.to_string(), ", so actions must be ",
                                     discrete_ ? "int64 indices [count]" : concat("floats [count, ", act_dim_, "]"),
                                     ", got ", discrete ? "int64 indices" : "floats"));
}

void VectorEnv::check_discrete_actions(const int64_t* actions, int64_t count, const int32_t* env_ids,
                                       const char* where) const {
  const int64_t n = spec_.action_space.n();
  for (int64_t k = 0; k < count; ++k) {
    if (actions[k] < 0 || actions[k] >= n) {
      throw std::out_of_range(concat("VectorEnv::", where, ": action ", actions[k], " for env ",
                                     env_ids ? env_ids[k] : k, " is outside ", spec_.action_space.to_string()));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Sync API.

Batch VectorEnv::view(const Block& block) const {
  Batch batch;
  batch.size = block.rows;
  batch.obs_dim = obs_dim_;
  batch.obs_dtype = spec_.observation_space.dtype();
  batch.env_ids = block.env_ids.data();
  batch.observations = block.observations.data();
  batch.rewards = block.rewards.data();
  batch.terminated = block.terminated.data();
  batch.truncated = block.truncated.data();
  batch.has_final = block.has_final.data();
  batch.final_observations = block.final_observations.data();
  batch.episode_returns = block.episode_returns.data();
  batch.episode_lengths = block.episode_lengths.data();
  return batch;
}

Batch VectorEnv::reset(std::optional<uint64_t> seed) {
  require_mode(false, "reset()");
  Block& block = *blocks_[0];
  pool_->parallel_for(config_.num_envs, sync_chunk_size(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      reset_one(static_cast<int32_t>(i), reset_seed(seed, i), block, i);
    }
  });
  seeded_ = true;
  started_ = true;
  return view(block);
}

template <bool kDiscrete>
Batch VectorEnv::step_all(const void* actions) {
  Block& block = *blocks_[0];
  // Every eighth batch is timed, chunk by chunk, to keep the step cost estimate current.
  const bool timed = (sync_steps_++ & 7) == 0;
  pool_->parallel_for(config_.num_envs, sync_chunk_size(), [&](int64_t begin, int64_t end) {
    const auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    for (int64_t i = begin; i < end; ++i) {
      step_one<kDiscrete>(static_cast<int32_t>(i), actions, block, i);
    }
    if (timed) record_cost(std::chrono::steady_clock::now() - start, end - begin);
  });
  return view(block);
}

Batch VectorEnv::step(const int64_t* actions) {
  require_mode(false, "step()");
  check_action_kind(true, "step()");
  if (!started_) throw std::logic_error("VectorEnv::step(): call reset() first");
  if (actions == nullptr) throw std::invalid_argument("VectorEnv::step(): actions is null");
  check_discrete_actions(actions, config_.num_envs, nullptr, "step()");
  return step_all<true>(actions);
}

Batch VectorEnv::step(const float* actions) {
  require_mode(false, "step()");
  check_action_kind(false, "step()");
  if (!started_) throw std::logic_error("VectorEnv::step(): call reset() first");
  if (actions == nullptr) throw std::invalid_argument("VectorEnv::step(): actions is null");
  return step_all<false>(actions);
}

Batch VectorEnv::last_batch() const {
  require_mode(false, "last_batch()");
  return view(*blocks_[0]);
}

// ---------------------------------------------------------------------------------------------
// Async API.

void VectorEnv::async_reset(std::optional<uint64_t> seed) {
  require_mode(true, "async_reset()");
  if (failed_.load()) rethrow_error();
  if (in_flight_count_ > 0) {
    throw std::logic_error(concat("VectorEnv::async_reset(): ", in_flight_count_, " of ", config_.num_envs,
                                  " envs are still in flight; recv() them first"));
  }
  const int64_t n = config_.num_envs;
  for (int64_t i = 0; i < n; ++i) {
    const std::optional<uint64_t> env_seed = reset_seed(seed, i);
    pending_op_[i] = Op::kReset;
    has_pending_seed_[i] = env_seed.has_value();
    pending_seed_[i] = env_seed.value_or(0);
    in_flight_[i] = 1;
    owner_ids_[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  }
  in_flight_count_ = n;
  seeded_ = true;
  started_ = true;
  enqueue(owner_ids_.data(), n);
}

void VectorEnv::claim_for_send(const int32_t* env_ids, int64_t count, const char* where) {
  if (failed_.load()) rethrow_error();
  if (!started_) throw std::logic_error(concat("VectorEnv::", where, ": call async_reset() first"));
  if (env_ids == nullptr && count > 0) {
    throw std::invalid_argument(concat("VectorEnv::", where, ": env_ids is null"));
  }
  if (count < 0) throw std::invalid_argument(concat("VectorEnv::", where, ": count ", count, " < 0"));
  for (int64_t k = 0; k < count; ++k) {
    const int32_t env = env_ids[k];
    const bool in_range = env >= 0 && env < config_.num_envs;
    if (!in_range || in_flight_[env]) {
      for (int64_t j = 0; j < k; ++j) in_flight_[env_ids[j]] = 0;
      if (!in_range) {
        throw std::out_of_range(
            concat("VectorEnv::", where, ": env id ", env, " is outside [0, ", config_.num_envs, ")"));
      }
      throw std::logic_error(
          concat("VectorEnv::", where, ": env ", env, " is already in flight (sent twice without a recv())"));
    }
    in_flight_[env] = 1;
  }
  in_flight_count_ += count;
}

void VectorEnv::send(const int64_t* actions, const int32_t* env_ids, int64_t count) {
  require_mode(true, "send()");
  check_action_kind(true, "send()");
  if (actions == nullptr && count > 0) throw std::invalid_argument("VectorEnv::send(): actions is null");
  claim_for_send(env_ids, count, "send()");
  try {
    check_discrete_actions(actions, count, env_ids, "send()");
  } catch (...) {
    for (int64_t k = 0; k < count; ++k) in_flight_[env_ids[k]] = 0;
    in_flight_count_ -= count;
    throw;
  }
  for (int64_t k = 0; k < count; ++k) {
    discrete_actions_[env_ids[k]] = actions[k];
    pending_op_[env_ids[k]] = Op::kStep;
  }
  enqueue(env_ids, count);
}

void VectorEnv::send(const float* actions, const int32_t* env_ids, int64_t count) {
  require_mode(true, "send()");
  check_action_kind(false, "send()");
  if (actions == nullptr && count > 0) throw std::invalid_argument("VectorEnv::send(): actions is null");
  claim_for_send(env_ids, count, "send()");
  for (int64_t k = 0; k < count; ++k) {
    std::copy_n(actions + k * act_dim_, act_dim_, box_actions_.data() + env_ids[k] * act_dim_);
    pending_op_[env_ids[k]] = Op::kStep;
  }
  enqueue(env_ids, count);
}

template <bool kDiscrete>
void VectorEnv::process_chunk(const int32_t* ids, int64_t count) {
  const auto num_blocks = static_cast<int64_t>(blocks_.size());
  // Claiming slot s means at least s + 1 ids were pushed, so some claim up to s is for an id the
  // owner pushed after it received the previous round of this block: acq_rel on this counter
  // turns that counting argument into happens-before, and the block's rows are free to reuse.
  const int64_t first_slot = next_slot_.fetch_add(count, std::memory_order_acq_rel);
  int64_t block_index = (first_slot / batch_size_) % num_blocks;
  int64_t row = first_slot % batch_size_;
  const void* actions =
      kDiscrete ? static_cast<const void*>(discrete_actions_.data()) : static_cast<const void*>(box_actions_.data());
  auto publish = [&](Block& block, int64_t rows) {
    // The row that completes a block wakes the owner if it sleeps in recv(); pairs with the
    // owner's store to owner_waiting_ before it re-reads `filled` (sequentially consistent).
    if (block.filled.fetch_add(rows) + rows == batch_size_ && owner_waiting_.load()) {
      { std::lock_guard<std::mutex> lock(ready_mutex_); }
      ready_cv_.notify_one();
    }
  };
  const auto start = std::chrono::steady_clock::now();
  int64_t written = 0;
  for (int64_t k = 0; k < count; ++k) {
    Block& block = *blocks_[static_cast<size_t>(block_index)];
    const int32_t env = ids[k];
    block.env_ids[row] = env;
    try {
      if (pending_op_[env] == Op::kReset) {
        reset_one(env, has_pending_seed_[env] ? std::optional<uint64_t>(pending_seed_[env]) : std::nullopt, block, row);
      } else {
        step_one<kDiscrete>(env, actions, block, row);
      }
    } catch (...) {
      record_error();
    }
    ++written;
    if (++row == batch_size_) {
      publish(block, written);
      written = 0;
      row = 0;
      block_index = block_index + 1 == num_blocks ? 0 : block_index + 1;
    }
  }
  if (written > 0) publish(*blocks_[static_cast<size_t>(block_index)], written);
  record_cost(std::chrono::steady_clock::now() - start, count);
}

void VectorEnv::enqueue(const int32_t* env_ids, int64_t count) {
  const auto threads = static_cast<int64_t>(queues_.size());
  if (threads == 1) {
    queues_[0]->push(env_ids, count);
    return;
  }
  for (auto& staged : staged_) staged.clear();
  for (int64_t k = 0; k < count; ++k) staged_[static_cast<size_t>(home_of(env_ids[k]))].push_back(env_ids[k]);
  for (int64_t t = 0; t < threads; ++t) {
    const auto& staged = staged_[static_cast<size_t>(t)];
    if (!staged.empty()) queues_[static_cast<size_t>(t)]->push(staged.data(), static_cast<int64_t>(staged.size()));
  }
}

void VectorEnv::service_loop(int home) {
  IndexQueue& queue = *queues_[static_cast<size_t>(home)];
  std::vector<int32_t> ids(static_cast<size_t>(config_.num_envs));
  for (;;) {
    // A helper takes only whole grains (about kTargetChunkNanoseconds of work) of its home envs;
    // a smaller remainder is cheaper for the owner to step in recv() than to hand across cores.
    // With cheap envs and fewer envs per thread than a grain, the helpers therefore stay idle.
    const int64_t grain_now = grain();
    const int64_t count = queue.pop(ids.data(), grain_now, grain_now);
    if (count == 0) return;
    if (discrete_) {
      process_chunk<true>(ids.data(), count);
    } else {
      process_chunk<false>(ids.data(), count);
    }
  }
}

int64_t VectorEnv::help_once() {
  const size_t threads = queues_.size();
  const int64_t grain_now = grain();
  // First pass: the owner's own queue, remainders too small for their helper to take (the
  // owner's job, or they would wait forever), and queues whose helper has not popped for a while
  // (asleep, descheduled or stuck in a slow env). Second pass: steal from any queue. The start
  // rotates, so that no queue the owner serves can starve behind another.
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < threads; ++i) {
      const size_t t = (help_cursor_ + i) % threads;
      IndexQueue& queue = *queues_[t];
      if (pass == 0 && t != 0 && queue.size() >= grain_now && queue.stalled_for() < kStealAfter) continue;
      const int64_t count = queue.try_pop(owner_ids_.data(), grain_now);
      if (count == 0) continue;
      help_cursor_ = t + 1;
      if (discrete_) {
        process_chunk<true>(owner_ids_.data(), count);
      } else {
        process_chunk<false>(owner_ids_.data(), count);
      }
      return count;
    }
  }
  return 0;
}

Batch VectorEnv::recv() {
  require_mode(true, "recv()");
  const auto num_blocks = static_cast<int64_t>(blocks_.size());
  Block& block = *blocks_[static_cast<size_t>(recv_count_ % num_blocks)];
  auto ready = [&] { return block.filled.load() == batch_size_ || failed_.load(); };
  const auto deadline = std::chrono::steady_clock::now() + config_.recv_timeout;
  for (;;) {
    if (failed_.load()) rethrow_error();
    if (block.filled.load(std::memory_order_acquire) == batch_size_) break;
    // Help: step queued envs on this thread rather than wait.
    if (help_once() > 0) continue;
    // Nothing left to help with (only the owner pushes, so the queues stay empty): wait.
    const bool done = spin_until(ready, WorkerPool::kSpinNanoseconds);
    if (done) continue;
    std::unique_lock<std::mutex> lock(ready_mutex_);
    owner_waiting_.store(true);
    const bool woken = ready_cv_.wait_until(lock, deadline, ready);
    owner_waiting_.store(false);
    if (!woken) {
      throw std::runtime_error(concat("VectorEnv::recv(): timed out after recv_timeout=", config_.recv_timeout.count(),
                                      " ms waiting for a batch of ", batch_size_, " results (", block.filled.load(),
                                      " ready, ", in_flight_count_, " of ", config_.num_envs,
                                      " envs in flight); send() actions for at least batch_size envs before recv()"));
    }
  }
  block.filled.store(0, std::memory_order_relaxed);
  for (int64_t row = 0; row < batch_size_; ++row) in_flight_[block.env_ids[row]] = 0;
  in_flight_count_ -= batch_size_;
  ++recv_count_;
  return view(block);
}

void VectorEnv::record_error() {
  {
    std::lock_guard<std::mutex> lock(ready_mutex_);
    if (!error_) error_ = std::current_exception();
    failed_.store(true);
  }
  ready_cv_.notify_all();
}

void VectorEnv::rethrow_error() {
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(ready_mutex_);
    error = error_;
  }
  std::rethrow_exception(error);
}

}  // namespace concord::envs
