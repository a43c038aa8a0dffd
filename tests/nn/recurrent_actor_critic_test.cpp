// An actor-critic with memory (algo.recurrent): a sequence re-run from its start state gives what
// acting step by step gave, a reset state is the initial one, truncations bootstrap from the ended
// episode's own state, and the feed-forward methods refuse it.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "concord/nn/actor_critic.h"
#include "concord/nn/recurrent_core.h"

namespace concord::nn {
namespace {

constexpr int64_t kSteps = 7;
constexpr int64_t kEnvs = 3;

// heads: sb3-contrib RecurrentPPO's arrangement, the core on the raw observation, then hidden
// layers before each head, every layer with PyTorch's default initialisation.
ActorCriticConfig recurrent_config(const std::string& kind, bool shared, ActionKind action_kind, bool heads = false) {
  ActorCriticConfig config;
  config.obs_shape = {3};
  config.action_kind = action_kind;
  config.action_dim = 2;
  if (action_kind == ActionKind::kContinuous) {
    config.action_low = {-1.0, -1.0};
    config.action_high = {1.0, 1.0};
  }
  config.hidden_sizes = {16};
  config.shared_torso = shared;
  config.recurrent = kind;
  config.recurrent_size = 8;
  if (heads) {
    config.hidden_sizes = {};
    config.head_hidden_sizes = {16, 8};
    config.activation = "relu";
    config.orthogonal_init = false;
  }
  return config;
}

// Episode starts at step 0 for every env, and inside the sequence for some.
torch::Tensor episode_starts() {
  torch::Tensor starts = torch::zeros({kSteps, kEnvs});
  starts[0].fill_(1.0f);
  starts[3][1] = 1.0f;
  starts[5][0] = 1.0f;
  starts[5][2] = 1.0f;
  return starts;
}

struct Acted {
  torch::Tensor actions, log_probs, values;  // [T, B(, d)]
  std::vector<core::TensorMap> states_after;
};

Acted act_step_by_step(ActorCritic& model, const torch::Tensor& obs, const torch::Tensor& starts) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> actions, log_probs, values;
  Acted acted;
  core::TensorMap state;
  for (int64_t t = 0; t < kSteps; ++t) {
    RecurrentActResult result = model->act(obs[t], state, starts[t]);
    actions.push_back(result.act.action);
    log_probs.push_back(result.act.log_prob);
    values.push_back(result.act.value);
    state = result.state;
    acted.states_after.push_back(state);
  }
  acted.actions = torch::stack(actions);
  acted.log_probs = torch::stack(log_probs);
  acted.values = torch::stack(values);
  return acted;
}

class RecurrentActorCritic : public ::testing::TestWithParam<std::tuple<std::string, bool, ActionKind, bool>> {};

TEST_P(RecurrentActorCritic, ASequenceReRunFromItsStartStateGivesWhatActingStepByStepGave) {
  torch::manual_seed(3);
  const auto [kind, shared, action_kind, heads] = GetParam();
  ActorCritic model(recurrent_config(kind, shared, action_kind, heads));
  const torch::Tensor obs = torch::randn({kSteps, kEnvs, 3});
  const torch::Tensor starts = episode_starts();
  const Acted acted = act_step_by_step(model, obs, starts);

  const ActionEvaluation again = model->evaluate_sequence(obs, acted.actions, starts, {});
  EXPECT_TRUE(torch::allclose(again.log_prob, acted.log_probs.flatten(), 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(again.value, acted.values.flatten(), 1e-5, 1e-6));
  EXPECT_EQ(again.entropy.sizes(), torch::IntArrayRef({kSteps * kEnvs}));

  // From the state after step 2, steps 3.. re-run alone give the same as within the whole.
  const ActionEvaluation tail =
      model->evaluate_sequence(obs.narrow(0, 3, kSteps - 3), acted.actions.narrow(0, 3, kSteps - 3),
                               starts.narrow(0, 3, kSteps - 3), acted.states_after[2]);
  EXPECT_TRUE(torch::allclose(tail.log_prob, acted.log_probs.narrow(0, 3, kSteps - 3).flatten(), 1e-5, 1e-6));

  // Gradients reach the core's parameters through the sequence.
  model->evaluate_sequence(obs, acted.actions, starts, {}).log_prob.sum().backward();
  bool core_has_gradient = false;
  for (const auto& parameter : model->named_parameters()) {
    if (parameter.key().find("core") != std::string::npos && parameter.value().grad().defined()) {
      core_has_gradient = core_has_gradient || parameter.value().grad().abs().sum().item<double>() > 0.0;
    }
  }
  EXPECT_TRUE(core_has_gradient);
}

TEST_P(RecurrentActorCritic, AnEpisodeStartResetsTheStateToTheInitialOne) {
  torch::manual_seed(4);
  const auto [kind, shared, action_kind, heads] = GetParam();
  ActorCritic model(recurrent_config(kind, shared, action_kind, heads));
  torch::NoGradGuard no_grad;
  const torch::Tensor obs = torch::randn({kEnvs, 3});
  const core::TensorMap remembered = model->act(torch::randn({kEnvs, 3}), {}, {}).state;
  const torch::Tensor fresh = model->value(obs, {}, {});
  const torch::Tensor reset = model->value(obs, remembered, torch::ones({kEnvs}));
  const torch::Tensor kept = model->value(obs, remembered, torch::zeros({kEnvs}));
  EXPECT_TRUE(torch::equal(fresh, reset));
  EXPECT_FALSE(torch::equal(fresh, kept));
  for (const auto& [name, tensor] : model->initial_state(kEnvs)) {
    EXPECT_EQ(tensor.sizes(), torch::IntArrayRef({kEnvs, 8})) << name;
    EXPECT_EQ(remembered.count(name), 1u) << name;
  }
}

TEST_P(RecurrentActorCritic, ATruncationBootstrapsFromTheEndedEpisodesOwnState) {
  torch::manual_seed(5);
  const auto [kind, shared, action_kind, heads] = GetParam();
  ActorCritic model(recurrent_config(kind, shared, action_kind, heads));
  const torch::Tensor obs = torch::randn({kSteps, kEnvs, 3});
  const torch::Tensor final_obs = torch::randn({kSteps, kEnvs, 3});
  const torch::Tensor starts = episode_starts();
  torch::Tensor truncated = torch::zeros({kSteps, kEnvs});
  truncated[2][1] = 1.0f;  // env 1's episode ends at step 2 (a new one starts at step 3)
  truncated[6][0] = 1.0f;
  const Acted acted = act_step_by_step(model, obs, starts);
  const torch::Tensor values = model->final_values_sequence(obs, final_obs, truncated, starts, {});
  torch::NoGradGuard no_grad;
  torch::Tensor expected = torch::zeros({kSteps, kEnvs});
  for (const int64_t t : {2, 6}) {
    expected[t] = model->value(final_obs[t], acted.states_after[static_cast<size_t>(t)], {}) * truncated[t];
  }
  EXPECT_TRUE(torch::allclose(values, expected, 1e-5, 1e-6));
  EXPECT_EQ(values[0].abs().sum().item<float>(), 0.0f);
}

INSTANTIATE_TEST_SUITE_P(KindsAndTorsos, RecurrentActorCritic,
                         ::testing::Values(std::make_tuple("lstm", false, ActionKind::kDiscrete, false),
                                           std::make_tuple("lstm", true, ActionKind::kContinuous, false),
                                           std::make_tuple("gru", false, ActionKind::kContinuous, false),
                                           std::make_tuple("gru", true, ActionKind::kDiscrete, false),
                                           std::make_tuple("lstm", false, ActionKind::kDiscrete, true),
                                           std::make_tuple("gru", true, ActionKind::kContinuous, true)));

// RecurrentPPO's arrangement: each head has its own hidden layers on the core (shared core or
// not), and orthogonal_init = false leaves every layer as PyTorch builds it: the policy head is no
// longer scaled to 0.01 and the core's biases are not zero.
TEST(RecurrentActorCriticHeads, HeadLayersSitBetweenTheCoreAndEachHeadWithPyTorchsInitialisation) {
  torch::manual_seed(7);
  ActorCritic model(recurrent_config("lstm", true, ActionKind::kDiscrete, /*heads=*/true));
  const auto parameters = model->named_parameters();
  EXPECT_EQ(parameters["actor_head_layers.fc0.weight"].sizes(), torch::IntArrayRef({16, 8}));
  EXPECT_EQ(parameters["critic_head_layers.fc1.weight"].sizes(), torch::IntArrayRef({8, 16}));
  EXPECT_EQ(parameters["actor_head.weight"].sizes(), torch::IntArrayRef({2, 8}));
  EXPECT_EQ(parameters["core.lstm.weight_ih_l0"].sizes(), torch::IntArrayRef({32, 3}));  // the raw observation
  EXPECT_GT(parameters["actor_head.weight"].abs().max().item<double>(), 0.05);
  EXPECT_GT(parameters["core.lstm.bias_ih_l0"].abs().max().item<double>(), 0.0);
  // PyTorch's LSTM draws every parameter from U(-1/sqrt(hidden), 1/sqrt(hidden)).
  EXPECT_LE(parameters["core.lstm.weight_hh_l0"].abs().max().item<double>(), 1.0 / std::sqrt(8.0));

  ActorCritic orthogonal(recurrent_config("lstm", true, ActionKind::kDiscrete));
  EXPECT_EQ(orthogonal->named_parameters()["core.lstm.bias_ih_l0"].abs().max().item<double>(), 0.0);
  EXPECT_EQ(orthogonal->named_parameters().find("actor_head_layers.fc0.weight"), nullptr);
}

TEST(RecurrentActorCriticHeads, HeadLayersWithoutACoreAreRefusedNamingTheKey) {
  ActorCriticConfig config = recurrent_config("", false, ActionKind::kDiscrete);
  config.recurrent_size = ActorCriticConfig{}.recurrent_size;
  config.head_hidden_sizes = {64};
  try {
    config.validate();
    FAIL() << "validate() accepted head_hidden_sizes without a core";
  } catch (const std::invalid_argument& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("head_hidden_sizes=[64] applies only to a recurrent core"), std::string::npos) << message;
  }
}

TEST(RecurrentActorCriticRefusals, TheFeedForwardMethodsRefuseANetworkWithMemory) {
  ActorCritic model(recurrent_config("lstm", false, ActionKind::kDiscrete));
  const torch::Tensor obs = torch::randn({2, 3});
  EXPECT_THROW(model->act(obs), std::logic_error);
  EXPECT_THROW(model->value(obs), std::logic_error);
  EXPECT_THROW(model->evaluate(obs, torch::zeros({2}, torch::kInt64)), std::logic_error);
  ActorCriticConfig feed_forward = recurrent_config("", false, ActionKind::kDiscrete);
  feed_forward.recurrent_size = ActorCriticConfig{}.recurrent_size;
  ActorCritic plain(feed_forward);
  EXPECT_FALSE(plain->recurrent());
  EXPECT_THROW(plain->act(obs, {}, {}), std::logic_error);
}

TEST(RecurrentActorCriticRefusals, AnUnknownKindOrASizeWithoutACoreIsRefusedNamingTheKey) {
  ActorCriticConfig config = recurrent_config("rnn", false, ActionKind::kDiscrete);
  try {
    config.validate();
    FAIL() << "validate() accepted recurrent = rnn";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("recurrent=\"rnn\""), std::string::npos) << error.what();
  }
  config.recurrent = "";
  config.recurrent_size = 32;
  try {
    config.validate();
    FAIL() << "validate() accepted recurrent_size without a core";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("recurrent_size"), std::string::npos) << error.what();
  }
}

TEST(RecurrentCore, UnrollingBetweenEpisodeStartsInOneCallEqualsSteppingOneStepAtATime) {
  torch::manual_seed(6);
  for (const std::string kind : {"lstm", "gru"}) {
    RecurrentCore core(kind, 5, 4);
    const torch::Tensor features = torch::randn({kSteps, kEnvs, 5});
    const torch::Tensor starts = episode_starts();
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> stepped_state = core->initial_state(kEnvs);
    std::vector<torch::Tensor> outputs;
    for (int64_t t = 0; t < kSteps; ++t) outputs.push_back(core->step(features[t], starts[t], stepped_state));
    std::vector<torch::Tensor> unrolled_state = core->initial_state(kEnvs);
    std::vector<std::vector<torch::Tensor>> states_after;
    const torch::Tensor unrolled = core->unroll(features, starts, unrolled_state, {1}, &states_after);
    EXPECT_TRUE(torch::allclose(unrolled, torch::stack(outputs), 1e-5, 1e-6)) << kind;
    for (size_t i = 0; i < stepped_state.size(); ++i) {
      EXPECT_TRUE(torch::allclose(unrolled_state[i], stepped_state[i], 1e-5, 1e-6)) << kind;
    }
    EXPECT_EQ(states_after[1].size(), core->state_names().size()) << kind;  // asked for after step 1
  }
}

}  // namespace
}  // namespace concord::nn
