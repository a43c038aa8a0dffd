#include "concord/algos/replay.h"
#include "concord/algos/replay_buffer.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/full.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "algos/tensor_test_util.h"
#include "concord/core/checkpoint.h"
#include "concord/core/checkpoint_fields.h"
#include "concord/core/rng.h"
#include "hang_guard.h"

namespace concord::algos {
namespace {

using test_util::expect_invalid_argument;

// Transitions with a unique id, and an observation [2] = {id, -id} that lets a reader check
// that every row it gets was written whole.
ReplayBufferConfig id_config(int64_t capacity, bool prioritized = false, double alpha = 1.0) {
  ReplayBufferConfig config;
  config.capacity = capacity;
  config.fields["id"] = {{}, at::kLong};
  config.fields["observation"] = {{2}, at::kFloat};
  config.prioritized = prioritized;
  config.alpha = alpha;
  return config;
}

TensorMap id_batch(int64_t first_id, int64_t n) {
  const at::Tensor ids = at::arange(first_id, first_id + n, at::kLong);
  const at::Tensor as_float = ids.to(at::kFloat);
  return {{"id", ids}, {"observation", at::stack({as_float, as_float.neg()}, 1)}};
}

std::vector<int64_t> to_vector(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kLong).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

// Every row of a sample is one whole transition, and its insertion index is its id.
void expect_consistent(const ReplaySample& sample) {
  const std::vector<int64_t> indices = to_vector(sample.indices);
  const std::vector<int64_t> ids = to_vector(sample.fields.at("id"));
  const at::Tensor obs = sample.fields.at("observation");
  ASSERT_EQ(indices, ids);
  for (size_t j = 0; j < ids.size(); ++j) {
    ASSERT_EQ(obs[j][0].item<float>(), static_cast<float>(ids[j]));
    ASSERT_EQ(obs[j][1].item<float>(), -static_cast<float>(ids[j]));
  }
}

TEST(ReplayBufferTest, FieldsKeepTheirDeclaredDtypeAndShape) {
  ReplayBufferConfig config;
  config.capacity = 8;
  config.fields["observation"] = {{10, 10, 4}, at::kByte};
  config.fields["action"] = {{}, at::kLong};
  config.fields["reward"] = {{}, at::kFloat};
  config.fields["terminated"] = {{}, at::kBool};
  ReplayBuffer buffer(config);

  const int64_t n = 3;
  const at::Tensor observations = at::arange(n * 400, at::kLong).remainder(251).to(at::kByte).reshape({n, 10, 10, 4});
  buffer.add({{"observation", observations},
              {"action", at::tensor(std::vector<int64_t>{2, 0, 1})},
              {"reward", at::tensor(std::vector<float>{0.5f, -1.0f, 2.0f})},
              {"terminated", at::tensor(std::vector<int64_t>{0, 1, 0}).to(at::kBool)}});
  EXPECT_EQ(buffer.size(), 3);

  core::Rng rng(1);
  const ReplaySample sample = buffer.sample(3, rng);
  const at::Tensor obs = sample.fields.at("observation");
  EXPECT_EQ(obs.scalar_type(), at::kByte);  // no float copy anywhere
  EXPECT_EQ(obs.sizes(), (std::vector<int64_t>{3, 10, 10, 4}));
  EXPECT_EQ(sample.fields.at("terminated").scalar_type(), at::kBool);
  EXPECT_EQ(sample.fields.at("action").sizes(), (std::vector<int64_t>{3}));
  EXPECT_EQ(sample.indices.scalar_type(), at::kLong);
  EXPECT_EQ(sample.weights.scalar_type(), at::kFloat);
  EXPECT_TRUE(sample.weights.eq(1.0f).all().item<bool>());  // uniform
  for (int64_t j = 0; j < 3; ++j) {
    const int64_t i = sample.indices[j].item<int64_t>();
    EXPECT_TRUE(obs[j].equal(observations[i])) << "index " << i;
  }

  const TensorMap state = buffer.state();
  EXPECT_EQ(state.at("fields/observation").scalar_type(), at::kByte);
  EXPECT_TRUE(state.at("fields/observation").equal(observations));
}

TEST(ReplayBufferTest, WrapsAroundOverwritingTheOldest) {
  ReplayBuffer buffer(id_config(5));
  core::Rng rng(2);

  // Partly filled: uniform sampling only draws written slots.
  buffer.add(id_batch(0, 3));
  EXPECT_EQ(buffer.size(), 3);
  for (int draw = 0; draw < 50; ++draw) {
    const ReplaySample sample = buffer.sample(3, rng);
    expect_consistent(sample);
    for (int64_t id : to_vector(sample.indices)) EXPECT_LT(id, 3);
  }

  // 7 in all, added in two batches: ids 0 and 1 are gone; slot s holds 5, 6, 2, 3, 4.
  buffer.add(id_batch(3, 4));
  EXPECT_EQ(buffer.size(), 5);
  EXPECT_EQ(buffer.capacity(), 5);
  EXPECT_EQ(buffer.num_added(), 7);
  EXPECT_EQ(to_vector(buffer.state().at("fields/id")), (std::vector<int64_t>{5, 6, 2, 3, 4}));

  std::vector<int> seen(7, 0);
  for (int draw = 0; draw < 200; ++draw) {
    const ReplaySample sample = buffer.sample(5, rng);
    expect_consistent(sample);  // the index maps to the transition that holds it
    for (int64_t id : to_vector(sample.indices)) {
      ASSERT_GE(id, 2);
      ASSERT_LT(id, 7);
      ++seen[id];
    }
  }
  EXPECT_EQ(seen[0] + seen[1], 0);
  for (int id = 2; id < 7; ++id) EXPECT_GT(seen[id], 0) << id;

  // One batch larger than the buffer keeps its last `capacity` transitions.
  buffer.add(id_batch(7, 12));
  EXPECT_EQ(buffer.num_added(), 19);
  EXPECT_EQ(buffer.size(), 5);
  // ids 14..18 in slots 14 % 5 = 4, 0, 1, 2, 3.
  EXPECT_EQ(to_vector(buffer.state().at("fields/id")), (std::vector<int64_t>{15, 16, 17, 18, 14}));
  expect_consistent(buffer.sample(5, rng));
}

TEST(ReplayBufferTest, PrioritizedSamplingHasTheExactDistribution) {
  // Priorities 1, 2, 3, 4 with alpha = 1: P = 0.1, 0.2, 0.3, 0.4.
  ReplayBuffer buffer(id_config(4, /*prioritized=*/true, /*alpha=*/1.0));
  buffer.add(id_batch(0, 4), at::tensor(std::vector<float>{1, 2, 3, 4}));
  const std::vector<double> expected = {0.1, 0.2, 0.3, 0.4};
  core::Rng rng(3);

  // Exact: with six more transitions of priority 0 (never drawn), a stratified batch of 10 takes
  // one mass from each of [k, k + 1), k < 10, and transition i owns [0, 1), [1, 3), [3, 6),
  // [6, 10) of the total 10, so every batch holds exactly 1, 2, 3, 4 of them: 10 P(i).
  ReplayBuffer padded(id_config(10, /*prioritized=*/true, /*alpha=*/1.0));
  padded.add(id_batch(0, 10), at::tensor(std::vector<float>{1, 2, 3, 4, 0, 0, 0, 0, 0, 0}));
  for (int repeat = 0; repeat < 20; ++repeat) {
    std::vector<int> counts(10, 0);
    const ReplaySample sample = padded.sample(10, rng);
    expect_consistent(sample);
    for (int64_t id : to_vector(sample.indices)) ++counts[id];
    EXPECT_EQ(counts, (std::vector<int>{1, 2, 3, 4, 0, 0, 0, 0, 0, 0}));
  }

  // Statistical: 20000 independent single draws; each count within 4.5 binomial standard
  // deviations of 20000 P(i) (about 1 in 150000 to fail by chance; the seed is fixed anyway).
  constexpr int kDraws = 50000;
  std::vector<int> counts(4, 0);
  for (int draw = 0; draw < kDraws; ++draw) ++counts[buffer.sample(1, rng).indices[0].item<int64_t>()];
  for (int i = 0; i < 4; ++i) {
    const double mean = kDraws * expected[i];
    const double sd = std::sqrt(kDraws * expected[i] * (1.0 - expected[i]));
    EXPECT_NEAR(counts[i], mean, 4.5 * sd) << "index " << i;
  }
}

TEST(ReplayBufferTest, AlphaFlattensThePriorities) {
  // Priorities 1, 4, 9, 16 with alpha = 0.5 are 1, 2, 3, 4 after the exponent: the same exact
  // stratified counts as above. With alpha = 0 every transition is equally likely, those of
  // priority 0 included (p^0 = 1).
  const at::Tensor priorities = at::tensor(std::vector<float>{1, 4, 9, 16, 0, 0, 0, 0, 0, 0});
  ReplayBuffer half(id_config(10, true, 0.5));
  half.add(id_batch(0, 10), priorities);
  ReplayBuffer flat(id_config(10, true, 0.0));
  flat.add(id_batch(0, 10), priorities);
  core::Rng rng(4);
  std::vector<int> half_counts(10, 0), flat_counts(10, 0);
  for (int64_t id : to_vector(half.sample(10, rng).indices)) ++half_counts[id];
  for (int64_t id : to_vector(flat.sample(10, rng).indices)) ++flat_counts[id];
  EXPECT_EQ(half_counts, (std::vector<int>{1, 2, 3, 4, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(flat_counts, std::vector<int>(10, 1));
}

TEST(ReplayBufferTest, ImportanceWeightsHandWorked) {
  // Priorities 1, 4, 9, 16, alpha = 0.5: p^alpha = 1, 2, 3, 4, sum 10, P = 0.1, 0.2, 0.3, 0.4,
  // N = 4, so N P = 0.4, 0.8, 1.2, 1.6 and max_j w_j = 0.4^-beta (the rarest transition).
  //   beta = 0.5: w = (N P / 0.4)^-0.5 = 1^-0.5, 2^-0.5, 3^-0.5, 4^-0.5
  //             = 1, 0.70710678, 0.57735027, 0.5
  //   beta = 1:   w = 1, 1/2, 1/3, 1/4
  //   beta = 0:   w = 1, 1, 1, 1
  ReplayBuffer buffer(id_config(4, true, 0.5));
  buffer.add(id_batch(0, 4), at::tensor(std::vector<float>{1, 4, 9, 16}));
  const std::map<double, std::vector<double>> expected = {
      {0.5, {1.0, 1.0 / std::sqrt(2.0), 1.0 / std::sqrt(3.0), 0.5}},
      {1.0, {1.0, 0.5, 1.0 / 3.0, 0.25}},
      {0.0, {1.0, 1.0, 1.0, 1.0}},
  };
  core::Rng rng(5);
  for (const auto& [beta, weights] : expected) {
    std::vector<int> seen(4, 0);
    for (int repeat = 0; repeat < 10; ++repeat) {
      const ReplaySample sample = buffer.sample(4, rng, beta);
      const std::vector<int64_t> ids = to_vector(sample.indices);
      for (size_t j = 0; j < ids.size(); ++j) {
        ++seen[ids[j]];
        EXPECT_NEAR(sample.weights[static_cast<int64_t>(j)].item<float>(), weights[ids[j]], 1e-6)
            << "beta " << beta << ", index " << ids[j];
      }
    }
    EXPECT_GT(seen[0], 0);  // the largest weight, 1, was among those checked
  }

  // The same after the rarest transition is overwritten: the normaliser is the new minimum.
  // Add id 4 with priority 36 (p^alpha = 6) into slot 0: p^alpha = 6, 2, 3, 4, min 2, so with
  // beta = 1, w = 2/6, 1, 2/3, 2/4 for ids 4, 1, 2, 3.
  buffer.add(id_batch(4, 1), at::tensor(std::vector<float>{36}));
  const std::map<int64_t, double> after = {{4, 1.0 / 3.0}, {1, 1.0}, {2, 2.0 / 3.0}, {3, 0.5}};
  for (int repeat = 0; repeat < 10; ++repeat) {
    const ReplaySample sample = buffer.sample(4, rng, 1.0);
    const std::vector<int64_t> ids = to_vector(sample.indices);
    for (size_t j = 0; j < ids.size(); ++j) {
      EXPECT_NEAR(sample.weights[static_cast<int64_t>(j)].item<float>(), after.at(ids[j]), 1e-6) << ids[j];
    }
  }
}

TEST(ReplayBufferTest, NewTransitionsGetTheLargestPrioritySeen) {
  ReplayBuffer buffer(id_config(10, true));
  EXPECT_EQ(buffer.max_priority(), 1.0);
  buffer.add(id_batch(0, 1));
  EXPECT_EQ(buffer.priority(0), 1.0);
  buffer.add(id_batch(1, 2), at::tensor(std::vector<float>{0.5f, 3.0f}));
  EXPECT_EQ(buffer.priority(1), 0.5);
  EXPECT_EQ(buffer.priority(2), 3.0);
  EXPECT_EQ(buffer.max_priority(), 3.0);
  buffer.add(id_batch(3, 1));
  EXPECT_EQ(buffer.priority(3), 3.0);
  EXPECT_EQ(buffer.update_priorities(at::tensor(std::vector<int64_t>{0}), at::tensor(std::vector<double>{7.0})), 1);
  EXPECT_EQ(buffer.max_priority(), 7.0);
  buffer.add(id_batch(4, 1));
  EXPECT_EQ(buffer.priority(4), 7.0);
  // A lower priority does not lower the maximum.
  buffer.update_priorities(at::tensor(std::vector<int64_t>{0}), at::tensor(std::vector<double>{0.1}));
  EXPECT_EQ(buffer.max_priority(), 7.0);
}

TEST(ReplayBufferTest, UpdatePrioritiesIgnoresOverwrittenIndices) {
  ReplayBuffer buffer(id_config(4, true));
  buffer.add(id_batch(0, 4));
  const at::Tensor sampled = at::tensor(std::vector<int64_t>{0, 1, 2, 3});
  // Two more transitions take slots 0 and 1 before the learner reports back.
  buffer.add(id_batch(4, 2));
  const int64_t applied = buffer.update_priorities(sampled, at::tensor(std::vector<float>{100, 200, 5, 6}));
  EXPECT_EQ(applied, 2);  // ids 2 and 3 only
  EXPECT_EQ(buffer.priority(2), 5.0);
  EXPECT_EQ(buffer.priority(3), 6.0);
  EXPECT_EQ(buffer.priority(4), 1.0);  // not 100: slot 0's new transition kept its own priority
  EXPECT_EQ(buffer.priority(5), 1.0);
  EXPECT_EQ(buffer.max_priority(), 6.0);  // stale priorities do not count either
  EXPECT_THROW(buffer.priority(0), std::invalid_argument);

  // A repeated index takes its last priority.
  EXPECT_EQ(buffer.update_priorities(at::tensor(std::vector<int64_t>{4, 4}), at::tensor(std::vector<float>{2, 3})), 2);
  EXPECT_EQ(buffer.priority(4), 3.0);

  // An index never issued is a caller's bug: nothing is applied.
  expect_invalid_argument(
      [&] {
        buffer.update_priorities(at::tensor(std::vector<int64_t>{5, 6}), at::tensor(std::vector<float>{9, 9}));
      },
      {"index 6", "never issued"});
  EXPECT_EQ(buffer.priority(5), 1.0);
  EXPECT_THROW(buffer.update_priorities(at::tensor(std::vector<int64_t>{-1}), at::tensor(std::vector<float>{1})),
               std::invalid_argument);

  // A zero priority is never drawn again (alpha > 0).
  buffer.update_priorities(at::tensor(std::vector<int64_t>{2, 3, 4}), at::tensor(std::vector<float>{0, 0, 0}));
  core::Rng rng(6);
  for (int draw = 0; draw < 20; ++draw) {
    for (int64_t id : to_vector(buffer.sample(4, rng).indices)) EXPECT_EQ(id, 5);
  }
}

TEST(ReplayBufferTest, ConcurrentWritersAndASampler) {
  constexpr int kWriters = 4;
  constexpr int64_t kPerWriter = 1000;
  constexpr int64_t kBatch = 10;
  ReplayBuffer buffer(id_config(10000, /*prioritized=*/true, /*alpha=*/0.6));
  std::atomic<int> writers_done{0};
  std::atomic<int64_t> samples_drawn{0};
  std::atomic<bool> sampler_stopped{false};
  std::vector<std::pair<int64_t, int64_t>> sampled_ids;  // (insertion index, id), by the sampler
  test::ends_within(std::chrono::seconds(120), "concurrent replay", [&] {
    std::vector<std::thread> threads;
    for (int w = 0; w < kWriters; ++w) {
      threads.emplace_back([&, w] {
        for (int64_t first = 0; first < kPerWriter; first += kBatch) {
          // Halfway, wait for the sampler to have drawn a few batches, so that sampling and
          // writing interleave however the threads are scheduled.
          while (first == kPerWriter / 2 && samples_drawn.load() < 5 && !sampler_stopped.load()) {
            std::this_thread::yield();
          }
          buffer.add(id_batch(w * kPerWriter + first, kBatch));
        }
        ++writers_done;
      });
    }
    // The learner: samples while the actors write, checks each row is whole and its index is its
    // id, and updates the priorities of what it drew.
    threads.emplace_back([&] {
      try {
        core::Rng rng(7);
        while (writers_done.load() < kWriters || samples_drawn.load() < 10) {
          if (buffer.size() < 32) {
            std::this_thread::yield();
            continue;
          }
          const ReplaySample sample = buffer.sample(32, rng, 0.4);
          const std::vector<int64_t> ids = to_vector(sample.fields.at("id"));
          const at::Tensor obs = sample.fields.at("observation");
          const at::Tensor as_float = sample.fields.at("id").to(at::kFloat);
          if (!obs.select(1, 0).equal(as_float) || !obs.select(1, 1).equal(as_float.neg())) {
            ADD_FAILURE() << "a sampled row is torn";
            break;
          }
          const std::vector<int64_t> indices = to_vector(sample.indices);
          for (size_t j = 0; j < ids.size(); ++j) sampled_ids.emplace_back(indices[j], ids[j]);
          buffer.update_priorities(sample.indices, sample.indices.to(at::kFloat).remainder(7.0).add(0.1));
          ++samples_drawn;
        }
      } catch (const std::exception& error) {
        ADD_FAILURE() << "sampler: " << error.what();
      }
      sampler_stopped = true;
    });
    for (std::thread& thread : threads) thread.join();
  });

  EXPECT_EQ(buffer.size(), kWriters * kPerWriter);
  EXPECT_EQ(buffer.num_added(), kWriters * kPerWriter);
  EXPECT_GT(samples_drawn.load(), 0);
  // Insertion indices follow arrival order, not the writers' ids, but each still names the
  // transition that was drawn: nothing was overwritten, so slot = index holds it now.
  const std::vector<int64_t> slot_ids = to_vector(buffer.state().at("fields/id"));
  for (const auto& [index, id] : sampled_ids) ASSERT_EQ(slot_ids[static_cast<size_t>(index)], id) << index;
  // Every transition present exactly once, whole.
  const TensorMap state = buffer.state();
  std::vector<int64_t> ids = to_vector(state.at("fields/id"));
  const at::Tensor obs = state.at("fields/observation");
  const at::Tensor ids_tensor = state.at("fields/id").to(at::kFloat);
  EXPECT_TRUE(obs.select(1, 0).equal(ids_tensor));
  EXPECT_TRUE(obs.select(1, 1).equal(ids_tensor.neg()));
  std::sort(ids.begin(), ids.end());
  std::vector<int64_t> all(kWriters * kPerWriter);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  EXPECT_EQ(ids, all);
}

TEST(ReplayBufferTest, StateRoundTripsExactly) {
  for (bool prioritized : {false, true}) {
    SCOPED_TRACE(prioritized ? "prioritized" : "uniform");
    ReplayBuffer original(id_config(5, prioritized, 0.7));
    original.add(id_batch(0, 3));
    if (prioritized) original.update_priorities(at::arange(3, at::kLong), at::tensor(std::vector<float>{0.5, 2, 4}));
    // Partly filled, then wrapped.
    for (int64_t stop : {3, 7}) {
      if (stop == 7) {
        original.add(id_batch(3, 4));
        if (prioritized)
          original.update_priorities(at::arange(4, 7, at::kLong), at::tensor(std::vector<float>{3, 1, 9}));
      }
      const TensorMap state = original.state();
      ReplayBuffer restored(id_config(5, prioritized, 0.7));
      restored.add(id_batch(100, 2));  // whatever it held is replaced
      restored.load_state(state);
      EXPECT_EQ(restored.size(), original.size());
      EXPECT_EQ(restored.num_added(), stop);
      const TensorMap again = restored.state();
      ASSERT_EQ(again.size(), state.size());
      for (const auto& [name, tensor] : state) {
        EXPECT_EQ(again.at(name).scalar_type(), tensor.scalar_type()) << name;
        EXPECT_TRUE(again.at(name).equal(tensor)) << name;
      }
      // Same seed, same draws: indices, fields and weights equal.
      core::Rng rng_a(8), rng_b(8);
      const ReplaySample a = original.sample(original.size(), rng_a, 0.5);
      const ReplaySample b = restored.sample(restored.size(), rng_b, 0.5);
      EXPECT_TRUE(a.indices.equal(b.indices));
      EXPECT_TRUE(a.weights.equal(b.weights));
      for (const auto& [name, tensor] : a.fields) EXPECT_TRUE(b.fields.at(name).equal(tensor)) << name;
      // And they go on alike.
      original.add(id_batch(stop, 1));
      restored.add(id_batch(stop, 1));
      EXPECT_TRUE(original.state().at("fields/id").equal(restored.state().at("fields/id")));
      if (prioritized) {
        EXPECT_EQ(restored.max_priority(), original.max_priority());
        EXPECT_TRUE(original.state().at("priorities").equal(restored.state().at("priorities")));
      }
      // Undo the extra add so that the next round starts from the intended state.
      original.load_state(state);
    }
  }
}

TEST(ReplayBufferTest, LoadStateRejectsAMismatchAndChangesNothing) {
  ReplayBuffer source(id_config(5, true));
  source.add(id_batch(0, 4));
  const TensorMap state = source.state();

  ReplayBuffer target(id_config(5, true));
  target.add(id_batch(50, 2));
  const TensorMap before = target.state();

  ReplayBuffer other_capacity(id_config(6, true));
  expect_invalid_argument([&] { other_capacity.load_state(state); }, {"capacity is 5", "6"});

  TensorMap missing = state;
  missing.erase("fields/observation");
  expect_invalid_argument([&] { target.load_state(missing); }, {"field 'observation' is missing"});

  TensorMap extra = state;
  extra["fields/mask"] = at::zeros({4});
  expect_invalid_argument([&] { target.load_state(extra); }, {"unexpected field 'mask'"});

  TensorMap wrong_dtype = state;
  wrong_dtype["fields/id"] = state.at("fields/id").to(at::kInt);
  expect_invalid_argument([&] { target.load_state(wrong_dtype); }, {"field 'id'", "Long"});

  TensorMap wrong_rows = state;
  wrong_rows["fields/observation"] = at::zeros({3, 2});
  expect_invalid_argument([&] { target.load_state(wrong_rows); }, {"field 'observation'", "[4, 2]"});

  ReplayBuffer uniform(id_config(5, false));
  uniform.add(id_batch(0, 4));
  expect_invalid_argument([&] { target.load_state(uniform.state()); }, {"priorities", "missing"});

  TensorMap negative = state;
  negative["priorities"] = at::full({4}, -1.0, at::kDouble);
  expect_invalid_argument([&] { target.load_state(negative); }, {"priorities", ">= 0"});

  TensorMap unknown = state;
  unknown["something"] = at::zeros({1});
  expect_invalid_argument([&] { target.load_state(unknown); }, {"unexpected tensor 'something'"});

  const TensorMap after = target.state();
  for (const auto& [name, tensor] : before) EXPECT_TRUE(after.at(name).equal(tensor)) << name;

  // A uniform buffer ignores the priorities of a prioritized buffer's state.
  uniform.load_state(state);
  EXPECT_TRUE(uniform.state().at("fields/id").equal(state.at("fields/id")));
}

TEST(ReplayBufferTest, RejectsBadInputs) {
  ReplayBufferConfig bad = id_config(0);
  bad.alpha = -0.5;
  expect_invalid_argument([&] { ReplayBuffer buffer(bad); }, {"capacity=0", "alpha=-0.5"});
  ReplayBufferConfig no_fields;
  no_fields.capacity = 4;
  EXPECT_THROW(ReplayBuffer buffer(no_fields), std::invalid_argument);

  ReplayBuffer buffer(id_config(4, true));
  core::Rng rng(9);
  expect_invalid_argument([&] { buffer.sample(1, rng); }, {"empty"});

  TensorMap batch = id_batch(0, 2);
  batch["reward"] = at::zeros({2});
  expect_invalid_argument([&] { buffer.add(batch); }, {"unknown field 'reward'"});
  batch = id_batch(0, 2);
  batch.erase("id");
  expect_invalid_argument([&] { buffer.add(batch); }, {"field 'id' is missing"});
  batch = id_batch(0, 2);
  batch["observation"] = at::zeros({2, 3});
  expect_invalid_argument([&] { buffer.add(batch); }, {"field 'observation' is [2, 3]", "expected [2, 2] Float"});
  batch = id_batch(0, 2);
  batch["observation"] = batch["observation"].to(at::kDouble);
  expect_invalid_argument([&] { buffer.add(batch); }, {"field 'observation'", "Double"});
  batch = id_batch(0, 2);
  batch["id"] = at::arange(3, at::kLong);
  expect_invalid_argument([&] { buffer.add(batch); }, {"field 'observation' has 2 rows", "'id' has 3"});
  expect_invalid_argument(
      [&] {
        buffer.add(id_batch(0, 2), at::tensor(std::vector<float>{1, -1}));
      },
      {"priorities", ">= 0"});
  expect_invalid_argument(
      [&] {
        buffer.add(id_batch(0, 2), at::tensor(std::vector<float>{1, std::nanf("")}));
      },
      {"priorities"});
  expect_invalid_argument([&] { buffer.add(id_batch(0, 2), at::tensor(std::vector<float>{1})); }, {"[2]"});
  EXPECT_EQ(buffer.size(), 0);  // nothing was written by the rejected adds

  buffer.add(id_batch(0, 2));
  expect_invalid_argument([&] { buffer.sample(3, rng); }, {"batch_size 3", "2 transitions"});
  expect_invalid_argument([&] { buffer.sample(0, rng); }, {"batch_size"});
  expect_invalid_argument([&] { buffer.sample(1, rng, 1.5); }, {"beta"});
  expect_invalid_argument(
      [&] { buffer.update_priorities(at::tensor(std::vector<int64_t>{0}), at::tensor(std::vector<float>{-0.1f})); },
      {"priorities", ">= 0"});
  expect_invalid_argument(
      [&] {
        buffer.update_priorities(at::tensor(std::vector<int64_t>{0, 1}), at::tensor(std::vector<float>{1}));
      },
      {"[2]"});
  expect_invalid_argument(
      [&] { buffer.update_priorities(at::tensor(std::vector<int32_t>{0}), at::tensor(std::vector<float>{1})); },
      {"int64"});
  // Every stored priority 0: nothing to draw.
  buffer.update_priorities(at::tensor(std::vector<int64_t>{0, 1}), at::tensor(std::vector<float>{0, 0}));
  expect_invalid_argument([&] { buffer.sample(1, rng); }, {"every stored priority is 0"});

  ReplayBuffer uniform(id_config(4));
  uniform.add(id_batch(0, 2));
  expect_invalid_argument([&] { uniform.add(id_batch(2, 1), at::tensor(std::vector<float>{1})); }, {"not prioritized"});
  expect_invalid_argument(
      [&] { uniform.update_priorities(at::tensor(std::vector<int64_t>{0}), at::tensor(std::vector<float>{1})); },
      {"not prioritized"});
}

TEST(ReplayBufferTest, BetaScheduleAnnealsLinearlyToOne) {
  const BetaSchedule schedule{0.4, 100};
  EXPECT_DOUBLE_EQ(schedule.at(0), 0.4);
  EXPECT_DOUBLE_EQ(schedule.at(25), 0.55);
  EXPECT_DOUBLE_EQ(schedule.at(50), 0.7);
  EXPECT_DOUBLE_EQ(schedule.at(100), 1.0);
  EXPECT_DOUBLE_EQ(schedule.at(1000), 1.0);
  EXPECT_DOUBLE_EQ((BetaSchedule{0.4, 0}).at(0), 1.0);
  EXPECT_THROW((BetaSchedule{1.5, 10}).at(0), std::invalid_argument);
  EXPECT_THROW((BetaSchedule{0.4, -1}).at(0), std::invalid_argument);
  EXPECT_THROW(schedule.at(-1), std::invalid_argument);
}

// ---- Replay (replay.h): the adder, the sampler and their checkpoint ----

// A continuous-action replay of [2] observations (SAC's form).
ReplaySpec continuous_spec(int64_t n_step = 1) {
  ReplaySpec spec;
  spec.owner = "Test::observe";
  spec.observation_shape = {2};
  spec.observation_dtype = at::kFloat;
  spec.action_shape = {1};
  spec.capacity = 16;
  spec.n_step = n_step;
  spec.gamma = 0.5;
  return spec;
}

// One step of B envs: o = (t, b), actions [B] (one action dimension), rewards r, flags.
TensorMap env_step(float t, std::vector<float> rewards, std::vector<float> terminated, std::vector<float> truncated) {
  const int64_t rows = static_cast<int64_t>(rewards.size());
  const at::Tensor envs = at::arange(rows, at::kFloat);
  return {{transition::kObservations, at::stack({at::full({rows}, t), envs}, 1).to(at::kDouble)},
          {transition::kActions, at::full({rows}, t / 10.0f)},
          {transition::kRewards, at::tensor(rewards)},
          {transition::kTerminated, at::tensor(terminated)},
          {transition::kTruncated, at::tensor(truncated)},
          {transition::kNextObservations, at::stack({at::full({rows}, t + 1.0f), envs}, 1).to(at::kDouble)}};
}

TEST(ReplayTest, OneStepTransitionsStoreTheDiscountAndTheDeclaredForms) {
  torch::manual_seed(0);
  Replay replay(continuous_spec());
  EXPECT_EQ(replay.buffer()->size(), 0) << "a declared observation dtype builds the buffer at once";
  replay.add(env_step(3, {1, 2, 4}, {0, 1, 0}, {0, 0, 1}));
  ASSERT_EQ(replay.size(), 3);
  TensorMap fields;
  for (const auto& [name, tensor] : replay.buffer()->state()) {
    if (name.rfind("fields/", 0) == 0) fields[name.substr(7)] = tensor;
  }
  // Observations converted to the declared float, actions [B] as [B, 1].
  EXPECT_EQ(fields.at(replay_field::kObservation).scalar_type(), at::kFloat);
  EXPECT_EQ(fields.at(replay_field::kAction).sizes(), (std::vector<int64_t>{3, 1}));
  EXPECT_FLOAT_EQ(fields.at(replay_field::kAction)[2][0].item<float>(), 0.3f);
  // The termination stops the bootstrap; the truncation does not.
  EXPECT_TRUE(fields.at(replay_field::kDiscount).equal(at::tensor(std::vector<float>{0.5f, 0.0f, 0.5f})));
  EXPECT_TRUE(fields.at(replay_field::kReturn).equal(at::tensor(std::vector<float>{1, 2, 4})));
  EXPECT_EQ(fields.at(replay_field::kBootstrapObservation)[1][0].item<float>(), 4.0f);
}

TEST(ReplayTest, NStepWindowsAreKeptPerStreamAndEnv) {
  torch::manual_seed(0);
  Replay replay(continuous_spec(/*n_step=*/2));
  replay.add(env_step(0, {1, 1}, {0, 0}, {0, 0}), /*stream=*/0);
  replay.add(env_step(0, {8}, {0}, {0}), /*stream=*/1);  // another stream, its own window
  EXPECT_EQ(replay.size(), 0);
  replay.add(env_step(1, {2, 2}, {0, 1}, {0, 0}), 0);
  ASSERT_EQ(replay.size(), 3) << "two full windows, and env 1's last step cut by its termination";
  const TensorMap all = replay.take_all();
  // G = 1 + 0.5 * 2 for the full windows (discount 0.25), 2 alone after the termination.
  EXPECT_TRUE(all.at(replay_field::kReturn).equal(at::tensor(std::vector<float>{2, 2, 2})));
  EXPECT_TRUE(all.at(replay_field::kDiscount).equal(at::tensor(std::vector<float>{0.25f, 0.0f, 0.0f})));
  EXPECT_TRUE(all.at(replay_field::kObservation).select(1, 0).equal(at::tensor(std::vector<float>{0, 0, 1})));
  expect_invalid_argument(
      [&] {
        replay.add(env_step(2, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}), 0);
      },
      {"Test::observe", "stream 0 had 2 environments, this step has 3"});
}

TEST(ReplayTest, RefusesMalformedStepsNamingItsOwner) {
  torch::manual_seed(0);
  ReplaySpec discrete = continuous_spec();
  discrete.num_actions = 2;
  discrete.observation_dtype.reset();
  Replay indices(discrete);
  EXPECT_EQ(indices.buffer(), nullptr) << "the env's dtype is fixed by the first step";
  TensorMap step = env_step(0, {1}, {0}, {0});
  expect_invalid_argument([&] { indices.add(step); }, {"Test::observe", "integer action indices"});
  step[transition::kActions] = at::tensor(std::vector<int64_t>{2});
  expect_invalid_argument([&] { indices.add(step); }, {"actions must lie in [0, 2), got 2 to 2"});
  step[transition::kActions] = at::tensor(std::vector<int64_t>{1});
  step.erase(transition::kTruncated);
  expect_invalid_argument([&] { indices.add(step); }, {"field 'truncated' is missing"});
  step[transition::kTruncated] = at::zeros({1});
  step[transition::kObservations] = at::zeros({1, 3});
  expect_invalid_argument([&] { indices.add(step); }, {"observations must be [1, 2]"});

  ReplaySpec lenient = continuous_spec();
  lenient.require_truncated = false;
  Replay one_step(lenient);
  TensorMap untruncated = env_step(0, {1}, {0}, {0});
  untruncated.erase(transition::kTruncated);
  one_step.add(untruncated);
  EXPECT_EQ(one_step.size(), 1);
  expect_invalid_argument([&] { Replay(ReplaySpec{}); }, {"capacity must be >= 1"});
}

TEST(ReplayTest, ACheckpointRestoresTheSamplerAndTheContents) {
  torch::manual_seed(3);
  Replay saved(continuous_spec());
  for (int t = 0; t < 5; ++t) saved.add(env_step(static_cast<float>(t), {1, 2}, {0, 0}, {0, 0}));
  saved.sample(4);
  core::Checkpoint checkpoint;
  saved.save(checkpoint, /*with_contents=*/true);
  EXPECT_EQ(checkpoint.tensors.count("replay_rng"), 1u);
  EXPECT_EQ(checkpoint.tensors.count("replay/fields/observation"), 1u);

  torch::manual_seed(4);  // another sampler seed, overwritten by the checkpoint's
  Replay restored(continuous_spec());
  restored.restore(restored.read(checkpoint, /*accept_contents=*/true), /*keep_unsaved_contents=*/false);
  ASSERT_EQ(restored.size(), 10);
  const ReplaySample next = saved.sample(6);
  const ReplaySample again = restored.sample(6);
  EXPECT_TRUE(next.indices.equal(again.indices)) << "the sampler continues where it was saved";

  // Without contents: kept, or emptied, as the learner asks.
  core::Checkpoint sampler_only;
  saved.save(sampler_only, /*with_contents=*/false);
  EXPECT_EQ(core::tensors_under(sampler_only, "replay/").size(), 0u);
  restored.restore(restored.read(sampler_only, true), /*keep_unsaved_contents=*/true);
  EXPECT_EQ(restored.size(), 10);
  restored.restore(restored.read(sampler_only, true), /*keep_unsaved_contents=*/false);
  EXPECT_EQ(restored.size(), 0);

  // Contents of another form are refused before anything changes.
  ReplaySpec wider = continuous_spec();
  wider.observation_shape = {3};
  Replay other(wider);
  EXPECT_THROW(other.read(checkpoint, true), core::CheckpointError);
  checkpoint.tensors["replay_rng"] = at::zeros({3}, at::kByte);
  EXPECT_THROW(restored.read(checkpoint, true), core::CheckpointError);
}

}  // namespace
}  // namespace concord::algos
