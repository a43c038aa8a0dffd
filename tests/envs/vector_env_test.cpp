#include "concord/envs/vector_env.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "concord/core/rng.h"
#include "concord/envs/random_actions.h"
#include "envs/fake_env.h"
#include "hang_guard.h"

namespace concord::envs {
namespace {

using testing::FakeEnv;
using testing::FakeEnvOptions;
using testing::register_fake_env;

VectorEnvConfig config_for(const std::string& id, int num_envs, int num_threads, int batch_size = 0, uint64_t seed = 0,
                           int chunk_size = 0) {
  VectorEnvConfig config;
  config.env_id = id;
  config.num_envs = num_envs;
  config.num_threads = num_threads;
  config.batch_size = batch_size;
  config.seed = seed;
  config.chunk_size = chunk_size;
  return config;
}

// A fresh fake id per VectorEnv, so that env i is FakeEnv instance i.
std::unique_ptr<VectorEnv> make_fake(const FakeEnvOptions& options, int num_envs, int threads, int batch_size = 0,
                                     uint64_t seed = 0, int chunk_size = 0) {
  return std::make_unique<VectorEnv>(
      config_for(register_fake_env(options), num_envs, threads, batch_size, seed, chunk_size));
}

template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "<no exception>";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Predicts every row a FakeEnv of a VectorEnv produces, from the seed and its actions.
class FakeModel {
 public:
  FakeModel(int index, uint64_t seed, const FakeEnvOptions& options)
      : index_(index),
        length_(options.terminate_after + index % 3),
        time_limit_(options.max_episode_steps),
        rng_(core::derive_seed(seed, static_cast<uint64_t>(index))) {
    draw_ = FakeEnv::seed_draw(rng_);
  }

  // Checks `row` of `batch` against a reset of this env.
  void expect_reset(const Batch& batch, int64_t row) const {
    ASSERT_EQ(batch.env_ids[row], index_);
    expect_obs(batch.observations_as<float>() + row * 4, episode_, 0);
    EXPECT_EQ(batch.rewards[row], 0.0f);
    EXPECT_EQ(batch.terminated[row], 0);
    EXPECT_EQ(batch.truncated[row], 0);
    EXPECT_EQ(batch.has_final[row], 0);
    EXPECT_EQ(batch.episode_returns[row], 0.0f);
    EXPECT_EQ(batch.episode_lengths[row], 0);
  }

  // Advances the model by one step with Discrete `action` and checks `row` of `batch`.
  void expect_step(const Batch& batch, int64_t row, int64_t action) {
    ASSERT_EQ(batch.env_ids[row], index_);
    const float reward = 1.0f + static_cast<float>(action);
    ++step_;
    return_ += reward;
    EXPECT_EQ(batch.rewards[row], reward) << "env " << index_;
    const bool terminated = step_ >= length_;
    const bool truncated = time_limit_ > 0 && step_ >= time_limit_;
    EXPECT_EQ(batch.terminated[row], terminated) << "env " << index_ << " step " << step_;
    EXPECT_EQ(batch.truncated[row], truncated) << "env " << index_ << " step " << step_;
    if (terminated || truncated) {
      EXPECT_EQ(batch.has_final[row], 1);
      expect_obs(batch.final_observations_as<float>() + row * 4, episode_, step_);
      EXPECT_EQ(batch.episode_returns[row], static_cast<float>(return_));
      EXPECT_EQ(batch.episode_lengths[row], step_);
      ++episode_;
      step_ = 0;
      return_ = 0.0;
      draw_ = FakeEnv::seed_draw(rng_);
      ++episodes_done_;
    } else {
      EXPECT_EQ(batch.has_final[row], 0);
      EXPECT_EQ(batch.episode_returns[row], 0.0f);
      EXPECT_EQ(batch.episode_lengths[row], 0);
    }
    expect_obs(batch.observations_as<float>() + row * 4, episode_, step_);
  }

  int episodes_done() const { return episodes_done_; }

 private:
  void expect_obs(const float* obs, int episode, int step) const {
    EXPECT_EQ(obs[0], static_cast<float>(index_));
    EXPECT_EQ(obs[1], static_cast<float>(episode)) << "env " << index_;
    EXPECT_EQ(obs[2], static_cast<float>(step)) << "env " << index_;
    EXPECT_EQ(obs[3], draw_) << "env " << index_;
  }

  int index_;
  int length_;
  int time_limit_;
  core::Rng rng_;
  float draw_ = 0.0f;
  int episode_ = 0;
  int step_ = 0;
  double return_ = 0.0;
  int episodes_done_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Configuration.

TEST(VectorEnvConfigTest, RejectsBadValuesWithTheValues) {
  const std::string id = register_fake_env();
  auto make = [&](VectorEnvConfig config) { return error_of([&] { VectorEnv env(config); }); };
  EXPECT_TRUE(contains(make(config_for(id, 0, 1)), "num_envs must be >= 1, got 0"));
  EXPECT_TRUE(contains(make(config_for(id, 4, 0)), "num_threads must be >= 1, got 0"));
  EXPECT_TRUE(contains(make(config_for(id, 8, 2, 9)), "batch_size must be in [0, num_envs=8], got 9"));
  EXPECT_TRUE(contains(make(config_for(id, 8, 2, -1)), "got -1"));
  EXPECT_TRUE(contains(make(config_for(id, 8, 2, 0, 0, -3)), "chunk_size must be >= 0"));
  VectorEnvConfig no_timeout = config_for(id, 8, 2, 4);
  no_timeout.recv_timeout = std::chrono::milliseconds(0);
  EXPECT_TRUE(contains(make(no_timeout), "recv_timeout must be positive, got 0 ms"));
  EXPECT_THROW(VectorEnv(config_for(id, 0, 1)), std::invalid_argument);
  // An unknown id fails with the registry's own error.
  const std::string unknown = make(config_for("NoSuchEnv-v9", 4, 1));
  EXPECT_TRUE(contains(unknown, "unknown environment 'NoSuchEnv-v9'")) << unknown;
  EXPECT_THROW(VectorEnv(config_for("NoSuchEnv-v9", 4, 1)), std::invalid_argument);
}

TEST(VectorEnvConfigTest, ModeFollowsBatchSize) {
  const std::string id = register_fake_env();
  EXPECT_FALSE(VectorEnv(config_for(id, 4, 1, 0)).is_async());
  EXPECT_FALSE(VectorEnv(config_for(id, 4, 1, 4)).is_async());
  VectorEnv async_env(config_for(id, 4, 2, 3));
  EXPECT_TRUE(async_env.is_async());
  EXPECT_EQ(async_env.batch_size(), 3);
  EXPECT_EQ(async_env.num_threads(), 2);
  EXPECT_EQ(async_env.obs_dim(), 4);
  EXPECT_EQ(async_env.act_dim(), 1);
}

// ---------------------------------------------------------------------------------------------
// Sync mode.

TEST(VectorEnvSyncTest, ResetFillsEveryRowExactly) {
  const FakeEnvOptions options;
  auto env = make_fake(options, 5, 2, 0, 42, 1);
  const Batch batch = env->reset();
  ASSERT_EQ(batch.size, 5);
  ASSERT_EQ(batch.obs_dim, 4);
  for (int i = 0; i < 5; ++i) FakeModel(i, 42, options).expect_reset(batch, i);
}

TEST(VectorEnvSyncTest, StepAutoResetsInTheSameStep) {
  FakeEnvOptions options;
  options.terminate_after = 3;  // Episodes of 3, 4 and 5 steps.
  for (int threads : {1, 2, 3}) {
    auto env = make_fake(options, 7, threads, 0, 9, 1);
    std::vector<FakeModel> models;
    for (int i = 0; i < 7; ++i) models.emplace_back(i, 9, options);
    env->reset();
    std::vector<int64_t> actions(7);
    for (int t = 0; t < 30; ++t) {
      for (int i = 0; i < 7; ++i) actions[static_cast<size_t>(i)] = (i + t) % 3;
      const Batch batch = env->step(actions.data());
      ASSERT_EQ(batch.size, 7);
      for (int i = 0; i < 7; ++i) models[static_cast<size_t>(i)].expect_step(batch, i, actions[static_cast<size_t>(i)]);
      const Batch again = env->last_batch();
      EXPECT_EQ(again.observations, batch.observations);
    }
    for (const auto& model : models) EXPECT_GE(model.episodes_done(), 5);
  }
}

TEST(VectorEnvSyncTest, TruncationAtTheTimeLimit) {
  FakeEnvOptions options;
  options.terminate_after = 4;    // Env 0 terminates at step 4, envs 1 and 2 never before 5...
  options.max_episode_steps = 4;  // ...but every env is truncated at step 4.
  auto env = make_fake(options, 3, 2, 0, 1, 1);
  std::vector<FakeModel> models;
  for (int i = 0; i < 3; ++i) models.emplace_back(i, 1, options);
  env->reset();
  const std::vector<int64_t> actions = {0, 1, 2};
  for (int t = 0; t < 9; ++t) {
    const Batch batch = env->step(actions.data());
    for (int i = 0; i < 3; ++i) models[static_cast<size_t>(i)].expect_step(batch, i, actions[static_cast<size_t>(i)]);
    if (t == 3) {
      EXPECT_EQ(batch.terminated[0], 1);  // Both flags on the same step.
      EXPECT_EQ(batch.truncated[0], 1);
      EXPECT_EQ(batch.terminated[1], 0);
      EXPECT_EQ(batch.truncated[1], 1);
      EXPECT_EQ(batch.episode_lengths[1], 4);
      EXPECT_EQ(batch.episode_returns[1], 8.0f);
    }
  }
}

TEST(VectorEnvSyncTest, BoxActionsReachEachEnv) {
  FakeEnvOptions options;
  options.box_actions = true;
  auto env = make_fake(options, 3, 2, 0, 0, 1);
  EXPECT_EQ(env->act_dim(), 2);
  env->reset();
  const std::vector<float> actions = {0.5f, -1.0f, 0.25f, 0.0f, -0.5f, 1.0f};
  const Batch batch = env->step(actions.data());
  EXPECT_EQ(batch.rewards[0], 0.5f - 10.0f);
  EXPECT_EQ(batch.rewards[1], 0.25f);
  EXPECT_EQ(batch.rewards[2], -0.5f + 10.0f);
}

TEST(VectorEnvSyncTest, ChecksActionsBeforeStepping) {
  auto env = make_fake({}, 4, 2);
  const std::vector<int64_t> good = {0, 1, 2, 0};
  EXPECT_TRUE(contains(error_of([&] { env->step(good.data()); }), "call reset() first"));
  env->reset();
  const std::vector<float> floats(4, 0.0f);
  const std::string kind = error_of([&] { env->step(floats.data()); });
  EXPECT_TRUE(contains(kind, "Discrete(3)")) << kind;
  EXPECT_THROW(env->step(floats.data()), std::invalid_argument);
  const std::vector<int64_t> bad = {0, 1, 3, 0};
  const std::string range = error_of([&] { env->step(bad.data()); });
  EXPECT_TRUE(contains(range, "action 3 for env 2 is outside Discrete(3)")) << range;
  EXPECT_THROW(env->step(bad.data()), std::out_of_range);
  const std::vector<int64_t> negative = {-1, 0, 0, 0};
  EXPECT_THROW(env->step(negative.data()), std::out_of_range);
  EXPECT_THROW(env->step(static_cast<const int64_t*>(nullptr)), std::invalid_argument);
  // Nothing was stepped by the rejected calls.
  const Batch batch = env->step(good.data());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(batch.observations_as<float>()[i * 4 + 2], 1.0f);  // Step 1 of 1.

  FakeEnvOptions box;
  box.box_actions = true;
  auto box_env = make_fake(box, 2, 1);
  box_env->reset();
  const std::vector<int64_t> indices = {0, 0};
  const std::string box_kind = error_of([&] { box_env->step(indices.data()); });
  EXPECT_TRUE(contains(box_kind, "Box(-1, 1, (2,), float32)")) << box_kind;
  EXPECT_THROW(box_env->step(indices.data()), std::invalid_argument);
}

TEST(VectorEnvSyncTest, AsyncCallsAreRejected) {
  auto env = make_fake({}, 4, 2);
  const int32_t ids[] = {0};
  const int64_t actions[] = {0};
  EXPECT_THROW(env->async_reset(), std::logic_error);
  EXPECT_THROW(env->send(actions, ids, 1), std::logic_error);
  EXPECT_TRUE(contains(error_of([&] { env->recv(); }), "needs async mode"));
}

TEST(VectorEnvSyncTest, EnvExceptionReachesTheCaller) {
  FakeEnvOptions options;
  options.throw_at_step = 3;
  auto env = make_fake(options, 16, 2, 0, 0, 1);
  env->reset();
  const std::vector<int64_t> actions(16, 0);
  env->step(actions.data());
  env->step(actions.data());
  const std::string error = error_of([&] { env->step(actions.data()); });
  EXPECT_EQ(error, "FakeEnv: planned failure");
}

// Steps `env` for `steps` steps with random actions from a fixed generator and returns every
// buffer of every step, concatenated as bytes.
std::vector<uint8_t> record_sync(VectorEnv& env, std::optional<uint64_t> seed, int steps) {
  std::vector<uint8_t> record;
  auto append = [&](const void* data, size_t bytes) {
    const auto* p = static_cast<const uint8_t*>(data);
    record.insert(record.end(), p, p + bytes);
  };
  auto append_batch = [&](const Batch& b) {
    const auto n = static_cast<size_t>(b.size);
    const auto od = static_cast<size_t>(b.obs_dim);
    append(b.observations_as<float>(), n * od * sizeof(float));
    append(b.rewards, n * sizeof(float));
    append(b.terminated, n);
    append(b.truncated, n);
    append(b.has_final, n);
    for (size_t i = 0; i < n; ++i) {
      if (b.has_final[i]) append(b.final_observations_as<float>() + i * od, od * sizeof(float));
    }
    append(b.episode_returns, n * sizeof(float));
    append(b.episode_lengths, n * sizeof(int32_t));
  };
  core::Rng action_rng(2024);
  append_batch(env.reset(seed));
  const auto n = env.num_envs();
  std::vector<int64_t> discrete(static_cast<size_t>(n));
  std::vector<float> box(static_cast<size_t>(n * env.act_dim()));
  for (int t = 0; t < steps; ++t) {
    if (env.spec().action_space.is_discrete()) {
      sample_actions(env.spec().action_space, action_rng, n, discrete.data());
      append_batch(env.step(discrete.data()));
    } else {
      sample_actions(env.spec().action_space, action_rng, n, box.data());
      append_batch(env.step(box.data()));
    }
  }
  return record;
}

TEST(VectorEnvSyncTest, SameSeedSameTrajectoryForAnyThreadCount) {
  FakeEnvOptions options;
  options.terminate_after = 6;
  options.max_episode_steps = 7;
  auto reference_env = make_fake(options, 37, 1, 0, 5);
  const std::vector<uint8_t> reference = record_sync(*reference_env, 77, 60);
  for (int threads : {2, 4}) {
    for (int chunk : {0, 1, 5}) {
      auto env = make_fake(options, 37, threads, 0, 5, chunk);
      EXPECT_EQ(record_sync(*env, 77, 60), reference) << threads << " threads, chunk " << chunk;
    }
  }
  auto other_seed = make_fake(options, 37, 2, 0, 5);
  EXPECT_NE(record_sync(*other_seed, 78, 60), reference);
}

TEST(VectorEnvSyncTest, SeedingRules) {
  const FakeEnvOptions options;
  // The first reset without a seed uses config.seed; env i uses derive_seed(seed, i).
  auto env = make_fake(options, 4, 2, 0, 31, 1);
  const Batch first = env->reset();
  for (int i = 0; i < 4; ++i) FakeModel(i, 31, options).expect_reset(first, i);
  // A later reset without a seed continues each env's stream: the second draw.
  const Batch second = env->reset();
  for (int i = 0; i < 4; ++i) {
    core::Rng rng(core::derive_seed(31, static_cast<uint64_t>(i)));
    FakeEnv::seed_draw(rng);
    EXPECT_EQ(second.observations_as<float>()[i * 4 + 3], FakeEnv::seed_draw(rng));
  }
  // An explicit seed re-seeds, whatever came before.
  const Batch third = env->reset(31);
  for (int i = 0; i < 4; ++i) {
    core::Rng rng(core::derive_seed(31, static_cast<uint64_t>(i)));
    EXPECT_EQ(third.observations_as<float>()[i * 4 + 3], FakeEnv::seed_draw(rng));
  }
}

TEST(VectorEnvSyncTest, ManyThreadsManySteps) {
  // Contention: four threads, small chunks, thousands of steps, checked row by row.
  FakeEnvOptions options;
  options.terminate_after = 2;
  auto env = make_fake(options, 300, 4, 0, 3, 16);
  std::vector<FakeModel> models;
  for (int i = 0; i < 300; ++i) models.emplace_back(i, 3, options);
  env->reset();
  std::vector<int64_t> actions(300);
  for (int t = 0; t < 300; ++t) {
    for (int i = 0; i < 300; ++i) actions[static_cast<size_t>(i)] = (t * i) % 3;
    const Batch batch = env->step(actions.data());
    for (int i = 0; i < 300; ++i) models[static_cast<size_t>(i)].expect_step(batch, i, actions[static_cast<size_t>(i)]);
    if (::testing::Test::HasFailure()) return;
  }
}

// ---------------------------------------------------------------------------------------------
// Async mode.

TEST(VectorEnvAsyncTest, SyncCallsAreRejected) {
  auto env = make_fake({}, 4, 2, 2);
  const int64_t actions[4] = {};
  EXPECT_THROW(env->reset(), std::logic_error);
  EXPECT_TRUE(contains(error_of([&] { env->step(actions); }), "needs sync mode"));
  EXPECT_THROW(env->last_batch(), std::logic_error);
}

TEST(VectorEnvAsyncTest, AsyncResetReturnsEveryEnvOnceThenTimesOut) {
  const FakeEnvOptions options;
  for (int threads : {1, 2}) {
    VectorEnvConfig config = config_for(register_fake_env(options), 10, threads, 5, 8);
    config.recv_timeout = std::chrono::milliseconds(50);
    VectorEnv env(config);
    env.async_reset();
    EXPECT_EQ(env.num_in_flight(), 10);
    std::set<int32_t> seen;
    for (int r = 0; r < 2; ++r) {
      const Batch batch = env.recv();
      ASSERT_EQ(batch.size, 5);
      for (int64_t row = 0; row < 5; ++row) {
        EXPECT_TRUE(seen.insert(batch.env_ids[row]).second);
        FakeModel(batch.env_ids[row], 8, options).expect_reset(batch, row);
      }
    }
    EXPECT_EQ(seen.size(), 10u);
    EXPECT_EQ(env.num_in_flight(), 0);
    const auto start = std::chrono::steady_clock::now();
    const std::string error = error_of([&] { env.recv(); });
    EXPECT_TRUE(contains(error, "timed out after recv_timeout=50 ms")) << error;
    EXPECT_TRUE(contains(error, "batch of 5 results (0 ready, 0 of 10 envs in flight)")) << error;
    EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(50));
    EXPECT_THROW(env.recv(), std::runtime_error);
  }
}

TEST(VectorEnvAsyncTest, TimeoutReportsAPartialBatch) {
  VectorEnvConfig config = config_for(register_fake_env(), 6, 1, 3);
  config.recv_timeout = std::chrono::milliseconds(20);
  VectorEnv env(config);
  env.async_reset();
  const Batch a = env.recv();
  const std::vector<int32_t> ids(a.env_ids, a.env_ids + 3);
  env.recv();
  const int64_t actions[2] = {0, 0};
  env.send(actions, ids.data(), 2);  // Two of the three a batch needs.
  const std::string error = error_of([&] { env.recv(); });
  EXPECT_TRUE(contains(error, "(2 ready, 2 of 6 envs in flight)")) << error;
  // The missing one completes the batch.
  env.send(actions, ids.data() + 2, 1);
  const Batch b = env.recv();
  EXPECT_EQ(b.size, 3);
}

// Runs at least `rounds` recv/send rounds, and more until every env was served `min_served`
// times (or 20 s passed), checking every row against the per-env model; the action for an env is
// a function of its id and its step count, so trajectories do not depend on timing. Returns how
// often each env was served. Service is fair over time, not per round: each thread has its own
// queue, and a helper that starts late is covered by the owner's stealing after a delay.
std::vector<int> run_async_checked(VectorEnv& env, const FakeEnvOptions& options, uint64_t seed, int rounds,
                                   int min_served) {
  const int n = static_cast<int>(env.num_envs());
  std::vector<FakeModel> models;
  for (int i = 0; i < n; ++i) models.emplace_back(i, seed, options);
  std::vector<int> steps(static_cast<size_t>(n), -1);  // -1: the reset is still to come.
  std::vector<int> served(static_cast<size_t>(n), 0);
  std::vector<int64_t> actions(static_cast<size_t>(env.batch_size()));
  env.async_reset();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  auto all_served = [&] { return *std::min_element(served.begin(), served.end()) >= min_served; };
  for (int r = 0; r < rounds || (!all_served() && std::chrono::steady_clock::now() < deadline); ++r) {
    const Batch batch = env.recv();
    EXPECT_EQ(batch.size, env.batch_size());
    std::set<int32_t> ids;
    for (int64_t row = 0; row < batch.size; ++row) {
      const int32_t id = batch.env_ids[row];
      EXPECT_TRUE(id >= 0 && id < n) << id;
      EXPECT_TRUE(ids.insert(id).second) << "env " << id << " twice in one batch";
      auto& model = models[static_cast<size_t>(id)];
      int& step = steps[static_cast<size_t>(id)];
      if (step < 0) {
        model.expect_reset(batch, row);
      } else {
        model.expect_step(batch, row, (id * 7 + step) % 3);
      }
      ++step;
      ++served[static_cast<size_t>(id)];
      actions[static_cast<size_t>(row)] = (id * 7 + step) % 3;
    }
    if (::testing::Test::HasFailure()) return served;
    env.send(actions.data(), batch.env_ids, batch.size);
  }
  return served;
}

TEST(VectorEnvAsyncTest, ExactBatchesCorrectRowsEveryEnvServed) {
  FakeEnvOptions options;
  options.terminate_after = 3;
  for (int threads : {1, 2, 4}) {
    for (int batch_size : {1, 3, 7}) {
      // chunk_size 1 makes the helpers take every env they can; 0 (adaptive) leaves these cheap
      // envs mostly to the owner.
      for (int chunk : {0, 1}) {
        auto env = make_fake(options, 8, threads, batch_size, 11, chunk);
        const std::vector<int> served = run_async_checked(*env, options, 11, 400, 1);
        for (int i = 0; i < 8; ++i) {
          EXPECT_GT(served[static_cast<size_t>(i)], 0)
              << "env " << i << " never served (" << threads << " threads, batch " << batch_size << ")";
        }
        EXPECT_EQ(env->num_in_flight(), 8);
      }
    }
  }
}

TEST(VectorEnvAsyncTest, UnderContention) {
  FakeEnvOptions options;
  options.terminate_after = 4;
  options.max_episode_steps = 5;
  auto env = make_fake(options, 256, 4, 64, 12, 8);
  const std::vector<int> served = run_async_checked(*env, options, 12, 3000, 100);
  for (int count : served) EXPECT_GE(count, 100);
}

TEST(VectorEnvAsyncTest, SendValidatesAndQueuesNothingOnError) {
  auto env = make_fake({}, 4, 2, 2);
  const int32_t ids[] = {0, 1};
  const int64_t actions[] = {0, 1};
  EXPECT_TRUE(contains(error_of([&] { env->send(actions, ids, 2); }), "call async_reset() first"));
  env->async_reset();
  const std::string busy = error_of([&] { env->send(actions, ids, 2); });
  EXPECT_TRUE(contains(busy, "env 0 is already in flight")) << busy;
  env->recv();
  const Batch batch = env->recv();  // Every env is back.
  EXPECT_EQ(env->num_in_flight(), 0);
  (void)batch;
  const int32_t out_of_range[] = {1, 4};
  EXPECT_TRUE(contains(error_of([&] { env->send(actions, out_of_range, 2); }), "env id 4 is outside [0, 4)"));
  EXPECT_THROW(env->send(actions, out_of_range, 2), std::out_of_range);
  const int32_t twice[] = {2, 2};
  EXPECT_THROW(env->send(actions, twice, 2), std::logic_error);
  const int64_t bad_actions[] = {0, 5};
  const std::string bad = error_of([&] { env->send(bad_actions, ids, 2); });
  EXPECT_TRUE(contains(bad, "action 5 for env 1 is outside Discrete(3)")) << bad;
  const float floats[] = {0.0f, 0.0f};
  EXPECT_THROW(env->send(floats, ids, 2), std::invalid_argument);
  EXPECT_EQ(env->num_in_flight(), 0);
  // The rejected calls left every env free to send.
  const int32_t all[] = {0, 1, 2, 3};
  const int64_t all_actions[] = {0, 0, 0, 0};
  env->send(all_actions, all, 4);
  EXPECT_EQ(env->recv().size, 2);
  EXPECT_EQ(env->recv().size, 2);
}

TEST(VectorEnvAsyncTest, EnvExceptionReachesRecv) {
  FakeEnvOptions options;
  options.throw_at_step = 2;
  for (int threads : {1, 3}) {
    auto env = make_fake(options, 6, threads, 3, 0, 1);
    env->async_reset();
    const std::string error = error_of([&] {
      std::vector<int64_t> actions(3, 0);
      for (int r = 0; r < 100; ++r) {
        const Batch batch = env->recv();
        env->send(actions.data(), batch.env_ids, batch.size);
      }
    });
    EXPECT_EQ(error, "FakeEnv: planned failure");
    EXPECT_THROW(env->recv(), std::runtime_error);
  }
}

TEST(VectorEnvAsyncTest, DestructionWithOutstandingWorkDoesNotHang) {
  FakeEnvOptions slow;
  slow.step_sleep_us = 200;
  test::ends_within(std::chrono::seconds(120), "destroying engines with outstanding work", [&] {
    for (int round = 0; round < 10; ++round) {
      auto env = make_fake(slow, 64, 4, 8);
      env->async_reset();
      if (round % 2 == 1) {
        const Batch batch = env->recv();
        std::vector<int64_t> actions(8, 1);
        env->send(actions.data(), batch.env_ids, batch.size);
      }
      // Destroyed here with most envs still queued or being stepped.
    }
  });
}

TEST(VectorEnvAsyncTest, DestructionRightAfterConstruction) {
  for (int i = 0; i < 20; ++i) make_fake({}, 16, 4, 4);
}

TEST(VectorEnvAsyncTest, SameTrajectoriesAsSyncMode) {
  // Per env, async mode gives exactly the rows sync mode gives for the same actions.
  FakeEnvOptions options;
  options.terminate_after = 3;
  options.box_actions = false;
  auto sync_env = make_fake(options, 6, 1, 0, 4);
  std::vector<std::vector<float>> expected(6);
  sync_env->reset();
  std::vector<int64_t> actions(6);
  for (int t = 0; t < 20; ++t) {
    for (int i = 0; i < 6; ++i) actions[static_cast<size_t>(i)] = (i * 7 + t) % 3;
    const Batch b = sync_env->step(actions.data());
    for (int i = 0; i < 6; ++i) {
      auto& e = expected[static_cast<size_t>(i)];
      e.insert(e.end(), b.observations_as<float>() + i * 4, b.observations_as<float>() + i * 4 + 4);
      e.push_back(b.rewards[i]);
      e.push_back(b.has_final[i] ? b.final_observations_as<float>()[i * 4 + 2] : -1.0f);
    }
  }
  for (int threads : {1, 2, 4}) {
    auto env = make_fake(options, 6, threads, 2, 4, 1);
    std::vector<std::vector<float>> got(6);
    std::vector<int> steps(6, -1);
    env->async_reset();
    while (*std::min_element(steps.begin(), steps.end()) < 20) {
      const Batch b = env->recv();
      std::vector<int64_t> next(2);
      for (int64_t row = 0; row < 2; ++row) {
        const int32_t id = b.env_ids[row];
        int& step = steps[static_cast<size_t>(id)];
        auto& g = got[static_cast<size_t>(id)];
        if (step >= 0 && step < 20) {
          g.insert(g.end(), b.observations_as<float>() + row * 4, b.observations_as<float>() + row * 4 + 4);
          g.push_back(b.rewards[row]);
          g.push_back(b.has_final[row] ? b.final_observations_as<float>()[row * 4 + 2] : -1.0f);
        }
        ++step;
        next[static_cast<size_t>(row)] = (id * 7 + step) % 3;
      }
      env->send(next.data(), b.env_ids, 2);
    }
    EXPECT_EQ(got, expected) << threads << " threads";
  }
}

// ---------------------------------------------------------------------------------------------
// Real environments: a VectorEnv matches N independently stepped single envs bit for bit.

void expect_matches_single_envs(const std::string& id, int threads, int steps) {
  if (!Registry::global().contains(id)) GTEST_SKIP() << id << " is not registered";
  constexpr int kEnvs = 16;
  constexpr uint64_t kSeed = 123;
  VectorEnv vec(config_for(id, kEnvs, threads, 0, kSeed, 1));
  const Space& action_space = vec.spec().action_space;
  const int64_t od = vec.obs_dim();
  const int64_t ad = vec.act_dim();
  std::vector<std::unique_ptr<Env>> singles;
  std::vector<float> obs(static_cast<size_t>(kEnvs * od));
  std::vector<float> final_obs(static_cast<size_t>(od));
  std::vector<double> returns(kEnvs, 0.0);
  std::vector<int> lengths(kEnvs, 0);
  for (int i = 0; i < kEnvs; ++i) {
    singles.push_back(make_env(id));
    singles.back()->reset(core::derive_seed(kSeed, static_cast<uint64_t>(i)), obs.data() + i * od);
  }
  Batch batch = vec.reset();
  ASSERT_EQ(std::memcmp(batch.observations_as<float>(), obs.data(), obs.size() * sizeof(float)), 0);
  core::Rng action_rng(99);
  std::vector<int64_t> discrete(kEnvs);
  std::vector<float> box(static_cast<size_t>(kEnvs * ad));
  int episodes = 0;
  for (int t = 0; t < steps; ++t) {
    if (action_space.is_discrete()) {
      sample_actions(action_space, action_rng, kEnvs, discrete.data());
      batch = vec.step(discrete.data());
    } else {
      sample_actions(action_space, action_rng, kEnvs, box.data());
      batch = vec.step(box.data());
    }
    for (int i = 0; i < kEnvs; ++i) {
      Action action;
      action.index = discrete[static_cast<size_t>(i)];
      action.values = box.data() + i * ad;
      float* row = obs.data() + i * od;
      const StepResult r = singles[static_cast<size_t>(i)]->step(action, row);
      ASSERT_EQ(std::memcmp(&batch.rewards[i], &r.reward, sizeof(float)), 0) << "env " << i << " t " << t;
      ASSERT_EQ(batch.terminated[i], r.terminated);
      ASSERT_EQ(batch.truncated[i], r.truncated);
      returns[static_cast<size_t>(i)] += r.reward;
      ++lengths[static_cast<size_t>(i)];
      if (r.terminated || r.truncated) {
        ++episodes;
        ASSERT_EQ(batch.has_final[i], 1);
        ASSERT_EQ(std::memcmp(batch.final_observations_as<float>() + i * od, row, od * sizeof(float)), 0);
        ASSERT_EQ(batch.episode_returns[i], static_cast<float>(returns[static_cast<size_t>(i)]));
        ASSERT_EQ(batch.episode_lengths[i], lengths[static_cast<size_t>(i)]);
        returns[static_cast<size_t>(i)] = 0.0;
        lengths[static_cast<size_t>(i)] = 0;
        singles[static_cast<size_t>(i)]->reset(std::nullopt, row);
      } else {
        ASSERT_EQ(batch.has_final[i], 0);
      }
    }
    ASSERT_EQ(std::memcmp(batch.observations_as<float>(), obs.data(), obs.size() * sizeof(float)), 0) << "step " << t;
  }
  EXPECT_GT(episodes, kEnvs);  // Auto-resets were exercised.
}

TEST(VectorEnvRealTest, CartPoleMatchesSingleEnvsBitForBit) { expect_matches_single_envs("CartPole-v1", 2, 1200); }

TEST(VectorEnvRealTest, PendulumMatchesSingleEnvsBitForBit) { expect_matches_single_envs("Pendulum-v1", 3, 450); }

TEST(VectorEnvRealTest, AsyncCartPoleMatchesSingleEnvs) {
  if (!Registry::global().contains("CartPole-v1")) GTEST_SKIP() << "CartPole-v1 not registered";
  constexpr int kEnvs = 12;
  VectorEnv vec(config_for("CartPole-v1", kEnvs, 2, 4, 7));
  std::vector<std::unique_ptr<Env>> singles;
  std::vector<float> obs(static_cast<size_t>(kEnvs * 4));
  for (int i = 0; i < kEnvs; ++i) {
    singles.push_back(make_env("CartPole-v1"));
    singles.back()->reset(core::derive_seed(7, static_cast<uint64_t>(i)), obs.data() + i * 4);
  }
  std::vector<int> steps(kEnvs, -1);
  std::vector<int64_t> pending(kEnvs, 0);
  vec.async_reset();
  for (int round = 0; round < 3000; ++round) {
    const Batch b = vec.recv();
    std::vector<int64_t> actions(4);
    for (int64_t row = 0; row < 4; ++row) {
      const int32_t id = b.env_ids[row];
      float* expected = obs.data() + id * 4;
      if (steps[static_cast<size_t>(id)] >= 0) {
        Action action;
        action.index = pending[static_cast<size_t>(id)];
        const StepResult r = singles[static_cast<size_t>(id)]->step(action, expected);
        ASSERT_EQ(b.rewards[row], r.reward);
        ASSERT_EQ(b.terminated[row], r.terminated);
        ASSERT_EQ(b.truncated[row], r.truncated);
        if (r.terminated || r.truncated) {
          ASSERT_EQ(std::memcmp(b.final_observations_as<float>() + row * 4, expected, 4 * sizeof(float)), 0);
          singles[static_cast<size_t>(id)]->reset(std::nullopt, expected);
        }
      }
      ASSERT_EQ(std::memcmp(b.observations_as<float>() + row * 4, expected, 4 * sizeof(float)), 0) << "env " << id;
      const int step = ++steps[static_cast<size_t>(id)];
      pending[static_cast<size_t>(id)] = (id + step / 3) % 2;
      actions[static_cast<size_t>(row)] = pending[static_cast<size_t>(id)];
    }
    vec.send(actions.data(), b.env_ids, 4);
  }
}

// ---------------------------------------------------------------------------------------------
// Random actions.

TEST(RandomActionsTest, DiscreteIndicesAreUniformInRangeAndSeeded) {
  const Space space = Space::discrete(5);
  core::Rng rng(1);
  std::vector<int64_t> actions(10000);
  sample_actions(space, rng, 10000, actions.data());
  std::vector<int> counts(5, 0);
  for (int64_t a : actions) {
    ASSERT_TRUE(a >= 0 && a < 5);
    ++counts[static_cast<size_t>(a)];
  }
  for (int c : counts) EXPECT_NEAR(c, 2000, 200);
  core::Rng again(1);
  std::vector<int64_t> repeat(10000);
  sample_actions(space, again, 10000, repeat.data());
  EXPECT_EQ(actions, repeat);
  std::vector<float> floats(4);
  EXPECT_THROW(sample_actions(space, rng, 4, floats.data()), std::invalid_argument);
}

TEST(RandomActionsTest, BoxDrawsRespectEachBoundKind) {
  const float inf = std::numeric_limits<float>::infinity();
  const Space space = Space::box({4}, {-2.0f, -inf, 1.0f, -inf}, {2.0f, inf, inf, -3.0f});
  core::Rng rng(2);
  constexpr int kCount = 20000;
  std::vector<float> actions(kCount * 4);
  sample_actions(space, rng, kCount, actions.data());
  double sum_normal = 0.0;
  double sum_sq_normal = 0.0;
  double sum_low = 0.0;
  for (int i = 0; i < kCount; ++i) {
    const float* a = actions.data() + i * 4;
    ASSERT_TRUE(a[0] >= -2.0f && a[0] <= 2.0f);
    ASSERT_TRUE(std::isfinite(a[1]));
    ASSERT_GE(a[2], 1.0f);
    ASSERT_LE(a[3], -3.0f);
    sum_normal += a[1];
    sum_sq_normal += a[1] * a[1];
    sum_low += a[2] - 1.0f;
  }
  EXPECT_NEAR(sum_normal / kCount, 0.0, 0.05);
  EXPECT_NEAR(sum_sq_normal / kCount, 1.0, 0.05);
  EXPECT_NEAR(sum_low / kCount, 1.0, 0.05);  // Exp(1) has mean 1.
  std::vector<int64_t> indices(2);
  EXPECT_THROW(sample_actions(space, rng, 2, indices.data()), std::invalid_argument);
}

}  // namespace
}  // namespace concord::envs
