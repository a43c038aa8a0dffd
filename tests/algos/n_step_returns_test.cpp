#include "concord/algos/n_step_returns.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <vector>

#include "algos/tensor_test_util.h"
#include "concord/core/rng.h"

namespace concord::algos {
namespace {

using test_util::expect_invalid_argument;
using test_util::rows;

// A [T, B] int64 tensor written row by row.
at::Tensor long_rows(std::initializer_list<std::initializer_list<int64_t>> time_rows) {
  std::vector<int64_t> flat;
  int64_t batch = 0;
  for (const auto& row : time_rows) {
    flat.insert(flat.end(), row.begin(), row.end());
    batch = static_cast<int64_t>(row.size());
  }
  return at::tensor(flat).reshape({static_cast<int64_t>(time_rows.size()), batch});
}

// Exact equality, dtype included: every value below is a dyadic rational, exact in float32.
void expect_equal(const at::Tensor& actual, const at::Tensor& expected, const char* what) {
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  ASSERT_EQ(actual.scalar_type(), expected.scalar_type()) << what;
  EXPECT_TRUE(actual.equal(expected)) << what << ":\n" << actual << "\nexpected\n" << expected;
}

// n = 3, gamma = 0.5, T = 7 steps of 3 environments with the same rewards
//   r = 1, -2, 4, 0.5, 3, -1, 2
// column 0 terminates at t = 2, column 1 is truncated at t = 2, column 2 runs through. Rows 3..6
// of columns 0 and 1 are the next episode.
struct HandWorkedSegment {
  at::Tensor rewards = rows({{1, 1, 1}, {-2, -2, -2}, {4, 4, 4}, {0.5, 0.5, 0.5}, {3, 3, 3}, {-1, -1, -1}, {2, 2, 2}});
  at::Tensor terminated = rows({{0, 0, 0}, {0, 0, 0}, {1, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}});
  at::Tensor truncated = rows({{0, 0, 0}, {0, 0, 0}, {0, 1, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}});
};

TEST(NStepReturnsTest, HandWorkedTerminationTruncationAndSegmentEnd) {
  const HandWorkedSegment s;
  const NStepTargets out = n_step_targets(s.rewards, s.terminated, s.truncated, /*gamma=*/0.5, /*n=*/3);
  // m_t = min(3, steps to the episode end inclusive, steps to the segment end):
  //   columns 0, 1: t = 0: 3 (ends exactly at the episode end), 1: 2, 2: 1 (cut at t = 2);
  //                 t = 3: 3, 4: 3, 5: 2, 6: 1 (cut at the segment end)
  //   column 2:     3, 3, 3, 3, 3, 2, 1
  // G_t = sum_{k < m} 0.5^k r_{t+k}:
  //   t = 0, m = 3: 1 + 0.5 * -2 + 0.25 * 4 = 1 - 1 + 1 = 1
  //   t = 1, m = 2 (columns 0, 1): -2 + 0.5 * 4 = 0;  m = 3 (column 2): 0 + 0.25 * 0.5 = 0.125
  //   t = 2, m = 1 (columns 0, 1): 4;                 m = 3 (column 2): 4 + 0.25 + 0.25 * 3 = 5
  //   t = 3, m = 3: 0.5 + 0.5 * 3 + 0.25 * -1 = 0.5 + 1.5 - 0.25 = 1.75
  //   t = 4, m = 3: 3 + 0.5 * -1 + 0.25 * 2 = 3 - 0.5 + 0.5 = 3
  //   t = 5, m = 2: -1 + 0.5 * 2 = 0
  //   t = 6, m = 1: 2
  expect_equal(out.returns,
               rows({{1, 1, 1}, {0, 0, 0.125}, {4, 4, 5}, {1.75, 1.75, 1.75}, {3, 3, 3}, {0, 0, 0}, {2, 2, 2}}),
               "returns");
  expect_equal(out.steps, long_rows({{3, 3, 3}, {2, 2, 3}, {1, 1, 3}, {3, 3, 3}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}}),
               "steps");
  // Bootstrap from next_observations[t + m - 1]. Columns 0 and 1, t = 0..2: row 2, the step that
  // ended the episode; for column 1 that is the final observation of the truncated episode, not
  // observations[3], which is already the next episode's first.
  expect_equal(out.bootstrap_steps,
               long_rows({{2, 2, 2}, {2, 2, 3}, {2, 2, 4}, {5, 5, 5}, {6, 6, 6}, {6, 6, 6}, {6, 6, 6}}),
               "bootstrap_steps");
  // discount = 0.5^m, except 0 where the window ends in a termination (column 0, t = 0..2).
  // Truncation (column 1) and the segment end (t = 5, 6) still bootstrap.
  expect_equal(out.discounts,
               rows({{0, 0.125, 0.125},
                     {0, 0.25, 0.125},
                     {0, 0.5, 0.125},
                     {0.125, 0.125, 0.125},
                     {0.125, 0.125, 0.125},
                     {0.25, 0.25, 0.25},
                     {0.5, 0.5, 0.5}}),
               "discounts");
  expect_equal(out.bootstrap,
               rows({{0, 1, 1}, {0, 1, 1}, {0, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}}).to(at::kBool),
               "bootstrap");
}

TEST(NStepReturnsTest, EpisodeEndsOnTheLastRowAndBothFlags) {
  // T = 2, n = 3, gamma = 0.5, rewards 1 then 2 in every column.
  //   column 0: terminated at t = 1       -> no bootstrap
  //   column 1: truncated at t = 1        -> bootstrap from the final observation (row 1)
  //   column 2: both flags at t = 1       -> termination wins: no bootstrap
  //   column 3: no episode end            -> bootstrap at the segment end
  //   column 4: terminated at t = 0       -> t = 0 alone, no bootstrap; t = 1 a new episode
  // G_0 = 1 + 0.5 * 2 = 2 (m = 2) except column 4 (m = 1): 1;  G_1 = 2 (m = 1).
  const at::Tensor rewards = rows({{1, 1, 1, 1, 1}, {2, 2, 2, 2, 2}});
  const at::Tensor terminated = rows({{0, 0, 0, 0, 1}, {1, 0, 1, 0, 0}});
  const at::Tensor truncated = rows({{0, 0, 0, 0, 0}, {0, 1, 1, 0, 0}});
  const NStepTargets out = n_step_targets(rewards, terminated, truncated, 0.5, 3);
  expect_equal(out.returns, rows({{2, 2, 2, 2, 1}, {2, 2, 2, 2, 2}}), "returns");
  expect_equal(out.steps, long_rows({{2, 2, 2, 2, 1}, {1, 1, 1, 1, 1}}), "steps");
  expect_equal(out.bootstrap_steps, long_rows({{1, 1, 1, 1, 0}, {1, 1, 1, 1, 1}}), "bootstrap_steps");
  expect_equal(out.discounts, rows({{0, 0.25, 0, 0.25, 0}, {0, 0.5, 0, 0.5, 0.5}}), "discounts");
  expect_equal(out.bootstrap, rows({{0, 1, 0, 1, 0}, {0, 1, 0, 1, 1}}).to(at::kBool), "bootstrap");
}

TEST(NStepReturnsTest, OneStepIsTheTdTarget) {
  // n = 1: G_t = r_t, discount gamma (0 on termination), bootstrap from step t's next observation.
  core::Rng rng(3);
  const int64_t steps = 9, batch = 4;
  std::vector<float> r, term, trunc;
  for (int64_t i = 0; i < steps * batch; ++i) {
    r.push_back(static_cast<float>(core::uniform(rng, -1.0, 1.0)));
    term.push_back(core::uniform(rng, 0.0, 1.0) < 0.3 ? 1.0f : 0.0f);
    trunc.push_back(core::uniform(rng, 0.0, 1.0) < 0.3 ? 1.0f : 0.0f);
  }
  const at::Tensor rewards = at::tensor(r).reshape({steps, batch});
  const at::Tensor terminated = at::tensor(term).reshape({steps, batch});
  const NStepTargets out = n_step_targets(rewards, terminated, at::tensor(trunc).reshape({steps, batch}), 0.9, 1);
  expect_equal(out.returns, rewards, "returns");
  expect_equal(out.discounts, terminated.mul(-1.0).add(1.0).mul(0.9), "discounts");
  for (int64_t t = 0; t < steps; ++t) {
    for (int64_t b = 0; b < batch; ++b) EXPECT_EQ(out.bootstrap_steps[t][b].item<int64_t>(), t);
  }
}

TEST(NStepReturnsTest, QueueEmitsWhenFullOrAtTheEpisodeEnd) {
  // Column 0 of the hand-worked segment (termination at t = 2), then column 1 (truncation).
  const HandWorkedSegment s;
  for (int64_t column : {0, 1}) {
    SCOPED_TRACE(column);
    NStepQueue queue(3, 0.5);
    const std::vector<size_t> expected_ready = {0, 0, 3, 0, 0, 1, 1};
    std::vector<NStepTransition> all;
    for (int64_t t = 0; t < 7; ++t) {
      const std::vector<NStepTransition> ready =
          queue.push(at::scalar_tensor(t, at::kLong), at::scalar_tensor(10 + t, at::kLong),
                     s.rewards[t][column].item<double>(), s.terminated[t][column].item<float>() != 0,
                     s.truncated[t][column].item<float>() != 0, at::scalar_tensor(100 + t, at::kLong));
      EXPECT_EQ(ready.size(), expected_ready[static_cast<size_t>(t)]) << "t = " << t;
      all.insert(all.end(), ready.begin(), ready.end());
    }
    EXPECT_EQ(queue.pending(), 2);  // t = 5, 6 wait for more steps
    const std::vector<NStepTransition> flushed = queue.flush();
    EXPECT_EQ(flushed.size(), 2u);
    EXPECT_EQ(queue.pending(), 0);
    all.insert(all.end(), flushed.begin(), flushed.end());

    ASSERT_EQ(all.size(), 7u);
    const std::vector<double> returns = {1, 0, 4, 1.75, 3, 0, 2};
    const std::vector<double> discounts = column == 0 ? std::vector<double>{0, 0, 0, 0.125, 0.125, 0.25, 0.5}
                                                      : std::vector<double>{0.125, 0.25, 0.5, 0.125, 0.125, 0.25, 0.5};
    const std::vector<int64_t> bootstrap_steps = {2, 2, 2, 5, 6, 6, 6};
    for (size_t t = 0; t < 7; ++t) {
      EXPECT_EQ(all[t].observation.item<int64_t>(), static_cast<int64_t>(t));
      EXPECT_EQ(all[t].action.item<int64_t>(), 10 + static_cast<int64_t>(t));
      EXPECT_EQ(all[t].reward, returns[t]) << t;
      EXPECT_EQ(all[t].discount, discounts[t]) << t;
      EXPECT_EQ(all[t].bootstrap, column == 1 || t >= 3) << t;
      EXPECT_EQ(all[t].bootstrap_observation.item<int64_t>(), 100 + bootstrap_steps[t]) << t;
    }
  }
}

// The acting estimates pushed with each step (Ape-X's actors) come out with the transition that
// starts there (its Q) and the one whose window ends there (its bootstrap value); NaN where none
// was pushed. Column 1 of the hand-worked segment: truncation at t = 2, then full windows.
TEST(NStepReturnsTest, QueueCarriesEachWindowsFirstQAndLastBootstrapValue) {
  const HandWorkedSegment s;
  NStepQueue queue(3, 0.5);
  std::vector<NStepTransition> all;
  for (int64_t t = 0; t < 7; ++t) {
    const ActingEstimates estimates{/*q_taken=*/10.0 + static_cast<double>(t),
                                    /*next_value=*/20.0 + static_cast<double>(t)};
    const std::vector<NStepTransition> ready =
        queue.push(at::scalar_tensor(t, at::kLong), at::scalar_tensor(0, at::kLong), s.rewards[t][1].item<double>(),
                   s.terminated[t][1].item<float>() != 0, s.truncated[t][1].item<float>() != 0,
                   at::scalar_tensor(t, at::kLong), t == 6 ? ActingEstimates{} : estimates);
    all.insert(all.end(), ready.begin(), ready.end());
  }
  const std::vector<NStepTransition> flushed = queue.flush();
  all.insert(all.end(), flushed.begin(), flushed.end());
  ASSERT_EQ(all.size(), 7u);
  const std::vector<int64_t> bootstrap_steps = {2, 2, 2, 5, 6, 6, 6};
  for (size_t t = 0; t < 6; ++t) {
    EXPECT_EQ(all[t].q_first, 10.0 + static_cast<double>(t)) << t;
    const int64_t last = bootstrap_steps[t];
    if (last == 6) {
      EXPECT_TRUE(std::isnan(all[t].bootstrap_value)) << t << ": step 6 was pushed without estimates";
    } else {
      EXPECT_EQ(all[t].bootstrap_value, 20.0 + static_cast<double>(last)) << t;
    }
  }
  EXPECT_TRUE(std::isnan(all[6].q_first));
}

TEST(NStepReturnsTest, QueueAgreesWithTheBatchFormExactly) {
  core::Rng rng(17);
  const int64_t steps = 60, batch = 3;
  for (int64_t n : {1, 3, 5}) {
    for (double gamma : {0.99, 0.5, 0.0, 1.0}) {
      // Float64 rewards and frequent episode ends of both kinds (sometimes together).
      std::vector<double> r;
      std::vector<uint8_t> term, trunc;
      for (int64_t i = 0; i < steps * batch; ++i) {
        r.push_back(core::uniform(rng, -3.0, 3.0));
        term.push_back(core::uniform(rng, 0.0, 1.0) < 0.12);
        trunc.push_back(core::uniform(rng, 0.0, 1.0) < 0.12);
      }
      const at::Tensor rewards = at::tensor(r).reshape({steps, batch});
      const at::Tensor terminated = at::tensor(term).reshape({steps, batch});
      const at::Tensor truncated = at::tensor(trunc).reshape({steps, batch});
      const NStepTargets out = n_step_targets(rewards, terminated, truncated, gamma, n);
      ASSERT_EQ(out.returns.scalar_type(), at::kDouble);

      for (int64_t b = 0; b < batch; ++b) {
        NStepQueue queue(n, gamma);
        std::vector<NStepTransition> all;
        for (int64_t t = 0; t < steps; ++t) {
          const auto cell = static_cast<size_t>(t * batch + b);
          // Observations and actions carry their step, next observations 1000 + step.
          const std::vector<NStepTransition> ready =
              queue.push(at::scalar_tensor(t, at::kLong), at::scalar_tensor(-t, at::kLong), r[cell], term[cell] != 0,
                         trunc[cell] != 0, at::scalar_tensor(1000 + t, at::kLong));
          all.insert(all.end(), ready.begin(), ready.end());
          EXPECT_LE(queue.pending(), n);
        }
        const std::vector<NStepTransition> flushed = queue.flush();
        all.insert(all.end(), flushed.begin(), flushed.end());
        ASSERT_EQ(static_cast<int64_t>(all.size()), steps);
        for (int64_t t = 0; t < steps; ++t) {
          const NStepTransition& x = all[static_cast<size_t>(t)];
          SCOPED_TRACE(testing::Message() << "n " << n << ", gamma " << gamma << ", b " << b << ", t " << t);
          ASSERT_EQ(x.observation.item<int64_t>(), t);  // emitted in order of t
          EXPECT_EQ(x.action.item<int64_t>(), -t);
          EXPECT_EQ(x.reward, out.returns[t][b].item<double>());  // bit for bit
          EXPECT_EQ(x.discount, out.discounts[t][b].item<double>());
          EXPECT_EQ(x.bootstrap, out.bootstrap[t][b].item<bool>());
          EXPECT_EQ(x.steps, out.steps[t][b].item<int64_t>());
          EXPECT_EQ(x.bootstrap_observation.item<int64_t>(), 1000 + out.bootstrap_steps[t][b].item<int64_t>());
        }
      }
    }
  }
}

TEST(NStepReturnsTest, EmptySegmentAndResultTypes) {
  const NStepTargets empty = n_step_targets(at::zeros({0, 2}), at::zeros({0, 2}), at::zeros({0, 2}), 0.9, 3);
  EXPECT_EQ(empty.returns.sizes(), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(empty.bootstrap.scalar_type(), at::kBool);

  at::Tensor rewards = at::zeros({2, 1});
  rewards.requires_grad_(true);
  const NStepTargets out = n_step_targets(rewards, at::zeros({2, 1}, at::kBool), at::zeros({2, 1}, at::kInt), 0.9, 2);
  EXPECT_FALSE(out.returns.requires_grad());
  EXPECT_EQ(out.returns.scalar_type(), at::kFloat);
  EXPECT_EQ(out.discounts.scalar_type(), at::kFloat);
  EXPECT_EQ(out.bootstrap_steps.scalar_type(), at::kLong);
  EXPECT_EQ(out.steps.scalar_type(), at::kLong);
}

TEST(NStepReturnsTest, RejectsBadInputs) {
  const HandWorkedSegment s;
  expect_invalid_argument([&] { n_step_targets(s.rewards, s.terminated, s.truncated, 0.5, 0); }, {"n must be >= 1"});
  expect_invalid_argument([&] { n_step_targets(s.rewards, s.terminated, s.truncated, 1.5, 3); }, {"gamma"});
  expect_invalid_argument([&] { n_step_targets(s.rewards, s.terminated.slice(0, 0, 3), s.truncated, 0.5, 3); },
                          {"terminated"});
  expect_invalid_argument([&] { n_step_targets(s.rewards.to(at::kLong), s.terminated, s.truncated, 0.5, 3); },
                          {"rewards"});
  expect_invalid_argument([&] { n_step_targets(s.rewards[0], s.terminated[0], s.truncated[0], 0.5, 3); }, {"rewards"});
  EXPECT_THROW(NStepQueue(0, 0.5), std::invalid_argument);
  EXPECT_THROW(NStepQueue(3, -0.1), std::invalid_argument);
}

}  // namespace
}  // namespace concord::algos
