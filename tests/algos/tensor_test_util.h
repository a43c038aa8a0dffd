#pragma once

// Helpers shared by the algos tests (gae, returns, vtrace, a2c, ppo): building small float32
// tensors by hand, comparing them within kTol, the hand-worked rollout of returns_test.cpp, random
// rollouts for a learner's model, and comparing models' parameters. Header-only; every test
// executable includes it once, so everything here is inline.

#include <ATen/core/Tensor.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "concord/algos/returns.h"
#include "concord/algos/rollout.h"
#include "concord/nn/actor_critic.h"

namespace concord::algos::test_util {

// Absolute tolerance of the float32 comparisons below and of the tests' EXPECT_NEARs.
inline constexpr double kTol = 1e-5;

// A [T, B] float32 tensor written row by row: one inner list per time step.
inline at::Tensor rows(std::initializer_list<std::initializer_list<float>> time_rows) {
  std::vector<float> flat;
  int64_t batch = 0;
  for (const auto& row : time_rows) {
    flat.insert(flat.end(), row.begin(), row.end());
    batch = static_cast<int64_t>(row.size());
  }
  return at::tensor(flat).reshape({static_cast<int64_t>(time_rows.size()), batch});
}

// A 1-D float32 tensor.
inline at::Tensor vec(std::initializer_list<float> values) { return at::tensor(std::vector<float>(values)); }

// `actual` is a float32 [T, B] tensor within kTol of `expected_rows`, element by element.
inline void expect_rows_near(const at::Tensor& actual,
                             std::initializer_list<std::initializer_list<float>> expected_rows) {
  const at::Tensor expected = rows(expected_rows);
  ASSERT_EQ(actual.sizes(), expected.sizes());
  ASSERT_EQ(actual.scalar_type(), at::kFloat);
  const at::Tensor a = actual.contiguous();
  for (int64_t t = 0; t < expected.size(0); ++t) {
    for (int64_t b = 0; b < expected.size(1); ++b) {
      EXPECT_NEAR(a[t][b].item<float>(), expected[t][b].item<float>(), kTol) << "at t=" << t << ", b=" << b;
    }
  }
}

// Same shape, and no element further than kTol from its counterpart.
inline void expect_all_near(const at::Tensor& actual, const at::Tensor& expected) {
  ASSERT_EQ(actual.sizes(), expected.sizes());
  const float max_error = actual.sub(expected).abs().max().item<float>();
  EXPECT_LE(max_error, kTol);
}

// Expects `call` to throw std::invalid_argument whose message contains every one of `needles`.
template <typename Call>
void expect_invalid_argument(Call&& call, std::initializer_list<const char*> needles) {
  try {
    call();
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    const std::string message = error.what();
    for (const char* needle : needles) {
      EXPECT_NE(message.find(needle), std::string::npos) << message;
    }
  }
}

// The hand-worked rollout of returns_test.cpp (and gae_test.cpp), gamma = 0.9: T = 3 steps,
// B = 3 environments.
//   column 0 terminates at t = 1 (row 2 is a new episode);
//   column 1 is truncated at t = 1, and the value of its final observation is 4;
//   column 2 runs on through the rollout.
// Entries of truncation_values outside the truncation are 100 and must be ignored.
struct HandWorkedRollout {
  static constexpr double kGamma = 0.9;

  at::Tensor rewards = rows({{1.0f, 0.5f, 1.0f}, {2.0f, 1.0f, 0.0f}, {3.0f, 2.0f, -1.0f}});
  at::Tensor values = rows({{0.5f, 1.0f, 2.0f}, {1.0f, 2.0f, 1.0f}, {1.5f, 0.5f, 3.0f}});
  at::Tensor terminated = rows({{0, 0, 0}, {1, 0, 0}, {0, 0, 0}}).to(at::kBool);
  at::Tensor truncated = rows({{0, 0, 0}, {0, 1, 0}, {0, 0, 0}}).to(at::kBool);
  at::Tensor truncation_values = rows({{100, 100, 100}, {100, 4, 100}, {100, 100, 100}});
  at::Tensor bootstrap = vec({2.0f, 3.0f, 1.0f});

  // truncation_values, or none (truncated episodes then bootstrap from 0).
  std::optional<at::Tensor> maybe_truncation_values(bool with_truncation_values) const {
    return with_truncation_values ? std::optional<at::Tensor>(truncation_values) : std::nullopt;
  }
  at::Tensor returns(bool with_truncation_values = true) const {
    return n_step_returns(rewards, terminated, truncated, values, bootstrap,
                          maybe_truncation_values(with_truncation_values), kGamma);
  }
};

// A CartPole-shaped actor-critic: 4-dim observations, 2 discrete actions, default layers.
inline nn::ActorCriticConfig cartpole_network() {
  nn::ActorCriticConfig network;
  network.obs_shape = {4};
  network.action_kind = nn::ActionKind::kDiscrete;
  network.action_dim = 2;
  return network;
}

// T x B steps of random observations (standard normal times obs_scale plus obs_shift) acted on by
// `model`, with random rewards, a termination at step `terminated_at` of column 0 and a truncation
// at step `truncated_at` of the last column (with a random final observation).
inline Rollout random_rollout(nn::ActorCritic& model, int64_t steps, int64_t envs, int64_t terminated_at,
                              int64_t truncated_at, double obs_scale = 1.0, double obs_shift = 0.0) {
  c10::NoGradGuard no_grad;
  const int64_t obs_dim = model->config().obs_shape.front();
  Rollout rollout;
  rollout.observations = at::randn({steps, envs, obs_dim}) * obs_scale + obs_shift;
  const nn::ActResult act = model->act(rollout.observations.flatten(0, 1));
  const bool discrete = model->config().action_kind == nn::ActionKind::kDiscrete;
  rollout.actions =
      discrete ? act.action.reshape({steps, envs}) : act.action.reshape({steps, envs, model->config().action_dim});
  rollout.log_probs = act.log_prob.reshape({steps, envs});
  rollout.values = act.value.reshape({steps, envs});
  rollout.rewards = at::rand({steps, envs});
  rollout.terminated = at::zeros({steps, envs});
  rollout.truncated = at::zeros({steps, envs});
  rollout.final_observations = at::zeros_like(rollout.observations);
  rollout.terminated[terminated_at][0] = 1.0;
  rollout.truncated[truncated_at][envs - 1] = 1.0;
  rollout.final_observations[truncated_at][envs - 1] = at::randn({obs_dim}) * obs_scale + obs_shift;
  rollout.next_observations = at::randn({envs, obs_dim}) * obs_scale + obs_shift;
  rollout.bootstrap_value = model->value(rollout.next_observations);
  return rollout;
}

// [T, B]: V(final observation) where the rollout is truncated, else 0: what a learner with
// `model` as its critic bootstraps truncated episodes from.
inline at::Tensor final_values(nn::ActorCritic& model, const Rollout& rollout) {
  c10::NoGradGuard no_grad;
  const at::Tensor values = model->value(rollout.final_observations.flatten(0, 1)).reshape(rollout.truncated.sizes());
  return values * rollout.truncated;
}

// Detached copies of the model's parameters, to compare with after an update.
inline std::vector<at::Tensor> parameter_copies(nn::ActorCritic& model) {
  std::vector<at::Tensor> copies;
  for (const at::Tensor& parameter : model->parameters()) copies.push_back(parameter.detach().clone());
  return copies;
}

// Whether the two models' parameters are equal, element by element.
inline bool same_parameters(nn::ActorCritic& a, nn::ActorCritic& b) {
  const std::vector<at::Tensor> pa = a->parameters();
  const std::vector<at::Tensor> pb = b->parameters();
  if (pa.size() != pb.size()) return false;
  for (std::size_t i = 0; i < pa.size(); ++i) {
    if (!pa[i].equal(pb[i])) return false;
  }
  return true;
}

}  // namespace concord::algos::test_util
