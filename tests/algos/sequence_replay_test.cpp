// R2D2's sequence replay: the windows an episode is cut into, position by position (padding before
// the episode, the stored state, the final observation after an episode's end and the mask after
// it), and R2D2's DQN learning from them.
#include "concord/algos/sequence_replay.h"

#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "concord/algos/dqn.h"

namespace concord::algos {
namespace {

// burn_in 2, 3 learned steps, n_step 2: S = 6 steps and 7 observations per sequence.
SequenceReplaySpec small_spec() {
  SequenceReplaySpec spec;
  spec.observation_shape = {1};
  spec.num_actions = 2;
  spec.state_shapes = {{"h", {2}}};
  spec.burn_in = 2;
  spec.trace = 3;
  spec.n_step = 2;
  spec.capacity = 16;
  return spec;
}

// One env's step j of an episode: o_j = j, a_j = j % 2, r_j = 10 + j, the state before it
// (j, -j); `next` is o_{j+1}, or the final observation where the step ends the episode.
TensorMap step(int j, float next, bool terminated = false, bool truncated = false) {
  const float position = static_cast<float>(j);
  return {{transition::kObservations, at::tensor({position}).view({1, 1})},
          {transition::kActions, at::tensor({static_cast<int64_t>(j % 2)})},
          {transition::kRewards, at::tensor({10.0f + position})},
          {transition::kTerminated, at::tensor({terminated ? 1.0f : 0.0f})},
          {transition::kTruncated, at::tensor({truncated ? 1.0f : 0.0f})},
          {transition::kNextObservations, at::tensor({next}).view({1, 1})},
          {std::string(kTransitionStatePrefix) + "h", at::tensor({position, -position}).view({1, 2})}};
}

std::vector<float> floats(const at::Tensor& t) {
  const at::Tensor flat = t.to(at::kFloat).contiguous().view(-1);
  return {flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel()};
}

TEST(SequenceReplay, AnEpisodeIsCutIntoWindowsThatTileItsLearnedSteps) {
  torch::manual_seed(0);
  SequenceReplay replay(small_spec());
  // An episode of 8 steps that terminates at step 7 (final observation 100).
  for (int j = 0; j < 8; ++j) {
    replay.add(j < 7 ? step(j, static_cast<float>(j + 1)) : step(j, 100.0f, /*terminated=*/true));
    // Window 0 is complete after step 3, window 1 after step 6, window 2 at the episode's end.
    const int64_t expected = j < 3 ? 0 : (j < 6 ? 1 : (j < 7 ? 2 : 3));
    EXPECT_EQ(replay.size(), expected) << "after step " << j;
  }
  const TensorMap stored = replay.buffer()->state();
  const auto row = [&](const std::string& name, int64_t k) { return floats(stored.at("fields/" + name)[k]); };
  using V = std::vector<float>;
  // Window 0 learns from steps 0..2; its burn-in precedes the episode (padding, initial state).
  EXPECT_EQ(row(sequence_field::kObservations, 0), (V{0, 0, 0, 1, 2, 3, 4}));
  EXPECT_EQ(row(sequence_field::kValid, 0), (V{0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(row(sequence_field::kActions, 0), (V{0, 0, 0, 1, 0, 1}));
  EXPECT_EQ(row(sequence_field::kRewards, 0), (V{0, 0, 10, 11, 12, 13}));
  EXPECT_EQ(row(sequence_field::kStarts, 0), (V{0, 0, 1, 0, 0, 0, 0}));
  EXPECT_EQ(row(sequence_field::kTerminated, 0), (V{0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(row("state/h", 0), (V{0, 0}));
  // Window 1 learns from steps 3..5 after a burn-in over steps 1..2, from the state before step 1.
  EXPECT_EQ(row(sequence_field::kObservations, 1), (V{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(row(sequence_field::kValid, 1), (V{1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(row(sequence_field::kActions, 1), (V{1, 0, 1, 0, 1, 0}));
  EXPECT_EQ(row(sequence_field::kRewards, 1), (V{11, 12, 13, 14, 15, 16}));
  EXPECT_EQ(row(sequence_field::kStarts, 1), (V{0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(row("state/h", 1), (V{1, -1}));
  // Window 2 learns from steps 6..7 and is cut at the episode's end: the final observation
  // follows step 7, which terminated, and the rest is masked.
  EXPECT_EQ(row(sequence_field::kObservations, 2), (V{4, 5, 6, 7, 100, 0, 0}));
  EXPECT_EQ(row(sequence_field::kValid, 2), (V{1, 1, 1, 1, 0, 0}));
  EXPECT_EQ(row(sequence_field::kActions, 2), (V{0, 1, 0, 1, 0, 0}));
  EXPECT_EQ(row(sequence_field::kRewards, 2), (V{14, 15, 16, 17, 0, 0}));
  EXPECT_EQ(row(sequence_field::kTerminated, 2), (V{0, 0, 0, 1, 0, 0}));
  EXPECT_EQ(row("state/h", 2), (V{4, -4}));

  // The next step starts a new episode: its first window begins again at step 0 of it.
  replay.add(step(0, 1.0f, /*terminated=*/false, /*truncated=*/true));
  EXPECT_EQ(replay.size(), 4);
  const TensorMap after = replay.buffer()->state();
  EXPECT_EQ(floats(after.at("fields/observations")[3]), (V{0, 0, 0, 1, 0, 0, 0}));
  EXPECT_EQ(floats(after.at("fields/valid")[3]), (V{0, 0, 1, 0, 0, 0}));
  EXPECT_EQ(floats(after.at("fields/terminated")[3]), (V{0, 0, 0, 0, 0, 0}));  // truncated: bootstrap
}

TEST(SequenceReplay, RefusesAStepWithoutTheActorsState) {
  torch::manual_seed(0);
  SequenceReplay replay(small_spec());
  TensorMap without = step(0, 1.0f);
  without.erase(std::string(kTransitionStatePrefix) + "h");
  try {
    replay.add(without);
    FAIL() << "a step without state was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("no 'state/h'"), std::string::npos) << error.what();
  }
}

// DQN with an LSTM: R2D2's replay and its update.
DqnConfig recurrent_config() {
  DqnConfig config;
  config.network.obs_shape = {1};
  config.network.action_dim = 2;
  config.network.hidden_sizes = {8};
  config.network.recurrent = "lstm";
  config.network.recurrent_size = 4;
  config.buffer_size = 400;
  config.batch_size = 4;
  config.sequence_length = 3;
  config.burn_in = 2;
  config.n_step = 2;
  config.learning_starts = 0;
  config.learning_rate = 1e-2;
  config.prioritized = true;
  return config;
}

TEST(R2d2, ActsFromEachEnvsStateAndLearnsFromSequences) {
  torch::manual_seed(1);
  Dqn dqn(recurrent_config());
  EXPECT_TRUE(dqn.acts_with_memory());
  // The actor returns the next state, one row per env, and acts otherwise after another history.
  ActingContext greedy;
  greedy.deterministic = true;
  const ActorOutput first = dqn.actor().act(ActorInput(at::zeros({3, 1})), greedy);
  ASSERT_EQ(first.state.size(), 2u);
  EXPECT_EQ(first.state.at("h").sizes(), (std::vector<int64_t>{3, 4}));
  // An episode start resets a row's state: from the state after one step, a start gives the
  // first step's state again.
  const ActorOutput again = dqn.actor().act(ActorInput(at::zeros({3, 1}), first.state, at::ones({3})), greedy);
  EXPECT_TRUE(torch::allclose(again.state.at("h"), first.state.at("h")));

  // Episodes of 6 steps whose last reward is 1: the TD loss on them falls as R2D2 learns.
  for (int episode = 0; episode < 20; ++episode) {
    for (int j = 0; j < 6; ++j) {
      TensorMap s = step(j, j < 5 ? static_cast<float>(j + 1) : 0.0f, /*terminated=*/j == 5);
      s[transition::kRewards] = at::tensor({j == 5 ? 1.0f : 0.0f});
      s.erase(std::string(kTransitionStatePrefix) + "h");
      s[std::string(kTransitionStatePrefix) + "h"] = at::zeros({1, 4});
      s[std::string(kTransitionStatePrefix) + "c"] = at::zeros({1, 4});
      dqn.observe(s);
    }
  }
  const Metrics first_update = dqn.update(100, 0.0);
  ASSERT_TRUE(first_update.count("losses/td_loss"));
  double last_loss = first_update.at("losses/td_loss");
  for (int i = 0; i < 200; ++i) last_loss = dqn.update(100 + i, 0.5).at("losses/td_loss");
  EXPECT_TRUE(std::isfinite(last_loss));
  EXPECT_LT(last_loss, first_update.at("losses/td_loss"));
  EXPECT_EQ(dqn.updates(), 201);
}

// R2D2's h and its inverse, against values worked out by hand: h(3) = sqrt(4) - 1 + 0.003 = 1.003,
// h(-8) = -(3 - 1) - 0.008 = -2.008, h(0) = 0; h^-1 undoes h over a wide range.
TEST(R2d2, ValueRescalingIsTheHOfThePaperAndItsInverse) {
  const at::Tensor x = at::tensor({3.0, -8.0, 0.0}, at::kDouble);
  const std::vector<float> h = floats(value_rescale(x));
  EXPECT_NEAR(h[0], 1.003, 1e-6);
  EXPECT_NEAR(h[1], -2.008, 1e-6);
  EXPECT_EQ(h[2], 0.0f);
  const at::Tensor wide = at::tensor({-1000.0, -37.5, -1.0, -0.01, 0.0, 0.2, 1.0, 9.0, 100.0, 5000.0}, at::kDouble);
  EXPECT_TRUE(torch::allclose(value_unrescale(value_rescale(wide)), wide, 1e-9, 1e-9));
  EXPECT_TRUE(torch::allclose(value_rescale(value_unrescale(wide)), wide, 1e-9, 1e-9));
}

// The targets exactly: with every LSTM weight 0 the core outputs 0, so Q(o, a) is the head's bias
// b_a for every observation and state. One episode of two steps (r = 1, 2; a = 0, 1), burn-in 1,
// two learned steps, n_step 2, gamma 0.5, one sequence per batch:
//   terminated at step 1:  y_0 = 1 + 0.5 * 2 = 2, y_1 = 2 (no bootstrap)
//   truncated at step 1:   y_0 = 2 + 0.5^2 * Q_target(o_2, argmax Q_online) = 2 + 0.25 b_1, y_1 = 2 + 0.5 b_1
// and the loss is the mean over the two learned steps of (b_{a_t} - y_t)^2. With value rescaling
// the network's b_a stand for h(Q): y_t = h(G_t + discount h^-1(b_1)), h^-1(1.5) being about 5.23.
TEST(R2d2, TargetsAreNStepDoubleQWithinTheEpisodeExactly) {
  for (const bool rescaled : {false, true}) {
    for (const bool terminated : {true, false}) {
      torch::manual_seed(4);
      DqnConfig config = recurrent_config();
      config.batch_size = 1;
      config.sequence_length = 2;
      config.burn_in = 1;
      config.n_step = 2;
      config.gamma = 0.5;
      config.prioritized = false;
      config.value_rescaling = rescaled;
      Dqn dqn(config);
      for (nn::QNetwork network : {dqn.online_network(), dqn.target_network()}) {
        torch::NoGradGuard no_grad;
        for (auto& parameter : network->named_parameters()) {
          if (parameter.key().rfind("core.", 0) == 0 || parameter.key() == "head.weight") parameter.value().zero_();
          if (parameter.key() == "head.bias") parameter.value().copy_(at::tensor({0.5f, 1.5f}));
        }
      }
      for (int j = 0; j < 2; ++j) {
        TensorMap s = step(j, j == 0 ? 1.0f : 9.0f, /*terminated=*/j == 1 && terminated,
                           /*truncated=*/j == 1 && !terminated);
        s[transition::kRewards] = at::tensor({static_cast<float>(j + 1)});
        s.erase(std::string(kTransitionStatePrefix) + "h");
        s[std::string(kTransitionStatePrefix) + "h"] = at::zeros({1, 4});
        s[std::string(kTransitionStatePrefix) + "c"] = at::zeros({1, 4});
        dqn.observe(s);
      }
      // h and h^-1 in plain doubles, from the paper's formulas.
      const double eps = kValueRescalingEps;
      const auto h = [&](double v) { return (v < 0 ? -1.0 : 1.0) * (std::sqrt(std::abs(v) + 1.0) - 1.0) + eps * v; };
      const auto h_inverse = [&](double v) {
        const double root = (std::sqrt(1.0 + 4.0 * eps * (std::abs(v) + 1.0 + eps)) - 1.0) / (2.0 * eps);
        return (v < 0 ? -1.0 : 1.0) * (root * root - 1.0);
      };
      const double b1 = rescaled ? h_inverse(1.5) : 1.5;  // Q_target(o_2, a*) in the returns' scale
      double y0 = terminated ? 2.0 : 2.0 + 0.25 * b1;
      double y1 = terminated ? 2.0 : 2.0 + 0.5 * b1;
      if (rescaled) {
        y0 = h(y0);
        y1 = h(y1);
      }
      const double expected = ((0.5 - y0) * (0.5 - y0) + (1.5 - y1) * (1.5 - y1)) / 2.0;
      const Metrics metrics = dqn.update(1, 0.0);
      EXPECT_NEAR(metrics.at("losses/td_loss"), expected, 1e-6)
          << (terminated ? "terminated" : "truncated") << (rescaled ? ", rescaled" : "");
      EXPECT_NEAR(metrics.at("losses/q_values"), 1.0, 1e-6);
    }
  }
}

TEST(R2d2, BadSequenceSettingsAreRefusedNamingTheKey) {
  DqnConfig config = recurrent_config();
  config.burn_in = 4;  // longer than the 3 learned steps
  EXPECT_THROW(
      {
        try {
          Dqn dqn(config);
        } catch (const std::invalid_argument& error) {
          EXPECT_NE(std::string(error.what()).find("burn_in=4 must be in [0, sequence_length]"), std::string::npos)
              << error.what();
          throw;
        }
      },
      std::invalid_argument);
  DqnConfig saving = recurrent_config();
  saving.checkpoint_replay = true;
  EXPECT_THROW(Dqn{saving}, std::invalid_argument);
  DqnConfig feed_forward;
  feed_forward.network.obs_shape = {1};
  feed_forward.network.action_dim = 2;
  feed_forward.burn_in = 3;  // R2D2's key without a recurrent network
  EXPECT_THROW(Dqn{feed_forward}, std::invalid_argument);
  feed_forward.burn_in = DqnConfig{}.burn_in;
  feed_forward.value_rescaling = true;
  EXPECT_THROW(Dqn{feed_forward}, std::invalid_argument);
  // hogwild's asynchronous Q-learning has no sequences.
  torch::manual_seed(0);
  Dqn dqn(recurrent_config());
  EXPECT_THROW(dqn.make_shared_replica(), std::invalid_argument);
  // Ape-X's actors: a replica carries the state, and says which fields of a step hold it.
  const std::unique_ptr<ActorReplica> replica = dqn.make_actor_replica();
  ASSERT_NE(replica, nullptr);
  EXPECT_EQ(replica->state_fields(), (std::vector<std::string>{"state/c", "state/h"}));
  EXPECT_TRUE(replica->priority_input_fields().empty());
}

}  // namespace
}  // namespace concord::algos
