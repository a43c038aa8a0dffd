// The fused LSTM / GRU recurrence (one autograd node for a [T, B] sequence with per-step, per-env
// resets) against LibTorch's own modules stepped one step at a time with the state zeroed where an
// episode starts: outputs, the state after every step, and the gradients in the features, the
// state going in and every weight. In float64 its gradients also match finite differences.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <torch/torch.h>

#include "concord/nn/fused_recurrence.h"
#include "concord/nn/recurrent_core.h"

namespace concord::nn {
namespace {

// A LibTorch LSTM or GRU of one layer and its weights {w_ih, w_hh, b_ih, b_hh}, biases random too.
struct Module {
  bool lstm;
  torch::nn::LSTM lstm_module{nullptr};
  torch::nn::GRU gru_module{nullptr};
  std::vector<torch::Tensor> weights;

  Module(bool is_lstm, int64_t inputs, int64_t hidden, torch::Dtype dtype) : lstm(is_lstm) {
    torch::nn::Module* rnn = nullptr;
    if (lstm) {
      lstm_module = torch::nn::LSTM(torch::nn::LSTMOptions(inputs, hidden));
      lstm_module->to(dtype);
      rnn = lstm_module.get();
    } else {
      gru_module = torch::nn::GRU(torch::nn::GRUOptions(inputs, hidden));
      gru_module->to(dtype);
      rnn = gru_module.get();
    }
    const auto parameters = rnn->named_parameters();
    for (const char* name : {"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"}) {
      weights.push_back(parameters[name]);
    }
  }

  // The module stepped one step at a time, the state's rows multiplied by (1 - starts[t]) before
  // step t: the hidden output [T, B, H] and the state after each step.
  std::pair<torch::Tensor, std::vector<std::vector<torch::Tensor>>> reference(const torch::Tensor& features,
                                                                              const torch::Tensor& starts,
                                                                              std::vector<torch::Tensor> state) {
    std::vector<torch::Tensor> outputs;
    std::vector<std::vector<torch::Tensor>> after;
    for (int64_t t = 0; t < features.size(0); ++t) {
      if (starts.defined()) {
        const torch::Tensor keep = (1.0 - starts[t].to(features.dtype())).unsqueeze(1);
        for (torch::Tensor& s : state) s = s * keep;
      }
      const torch::Tensor x = features.narrow(0, t, 1);
      if (lstm) {
        auto [out, hc] = lstm_module->forward(x, std::make_tuple(state[0].unsqueeze(0), state[1].unsqueeze(0)));
        state = {std::get<0>(hc).squeeze(0), std::get<1>(hc).squeeze(0)};
        outputs.push_back(out.squeeze(0));
      } else {
        auto [out, h] = gru_module->forward(x, state[0].unsqueeze(0));
        state = {h.squeeze(0)};
        outputs.push_back(out.squeeze(0));
      }
      after.push_back(state);
    }
    return {torch::stack(outputs), after};
  }
};

// Relative agreement to float32 rounding: |a - b| <= 1e-5 max|b| + 1e-6, element by element.
::testing::AssertionResult close(const torch::Tensor& a, const torch::Tensor& b, const std::string& what) {
  if (!a.defined() || !b.defined()) return ::testing::AssertionFailure() << what << ": a gradient is missing";
  if (a.sizes() != b.sizes())
    return ::testing::AssertionFailure() << what << ": shapes " << a.sizes() << " vs " << b.sizes();
  const double scale = b.abs().max().item<double>();
  const double error = (a - b).abs().max().item<double>();
  if (error <= 1e-5 * scale + 1e-6) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": max error " << error << " against a max of " << scale;
}

struct Case {
  std::string name;
  int64_t steps, batch;
  std::vector<std::pair<int64_t, int64_t>> starts;  // (t, b) where an episode starts
  bool no_starts_tensor = false;                    // pass starts undefined
};

std::vector<Case> cases() {
  return {
      {"resets_inside", 7, 3, {{2, 1}, {4, 0}, {5, 0}, {5, 2}, {6, 1}}},
      {"resets_at_zero", 5, 3, {{0, 0}, {0, 1}, {0, 2}, {3, 1}}},
      {"no_resets", 6, 2, {}},
      {"starts_undefined", 4, 2, {}, true},
      {"one_env", 6, 1, {{0, 0}, {3, 0}}},
      {"one_step", 1, 4, {{0, 2}}},
  };
}

class FusedRecurrence : public ::testing::TestWithParam<std::tuple<bool, Case>> {};

TEST_P(FusedRecurrence, OutputsStatesAndEveryGradientEqualLibTorchsModuleSteppedWithResets) {
  const auto& [lstm, c] = GetParam();
  torch::manual_seed(11);
  const int64_t inputs = 5, hidden = 6;
  Module module(lstm, inputs, hidden, torch::kFloat);
  {
    torch::NoGradGuard no_grad;
    for (torch::Tensor& w : module.weights) w.uniform_(-0.6, 0.6);  // biases non-zero too
  }
  const torch::Tensor features = torch::randn({c.steps, c.batch, inputs}).requires_grad_(true);
  torch::Tensor starts = torch::zeros({c.steps, c.batch});
  for (const auto& [t, b] : c.starts) starts[t][b] = 1.0F;
  if (c.no_starts_tensor) starts = torch::Tensor();
  std::vector<torch::Tensor> state = {torch::randn({c.batch, hidden}).requires_grad_(true)};
  if (lstm) state.push_back(torch::randn({c.batch, hidden}).requires_grad_(true));

  // Every output counts in the loss: the outputs, the final state and a state in the middle.
  const torch::Tensor output_weight = torch::randn({c.steps, c.batch, hidden});
  const torch::Tensor state_weight = torch::randn({c.batch, hidden});
  const int64_t middle = c.steps / 2;
  const auto loss_of = [&](const torch::Tensor& out, const std::vector<std::vector<torch::Tensor>>& after) {
    torch::Tensor loss = (out * output_weight).sum();
    for (const torch::Tensor& s : after.back()) loss = loss + (s * state_weight).sum();
    for (const torch::Tensor& s : after[static_cast<size_t>(middle)]) loss = loss + (s * state_weight).sum() * 0.5;
    return loss;
  };
  const std::vector<torch::Tensor> differentiable = [&] {
    std::vector<torch::Tensor> all = {features};
    all.insert(all.end(), state.begin(), state.end());
    all.insert(all.end(), module.weights.begin(), module.weights.end());
    return all;
  }();

  auto [expected, expected_after] = module.reference(features, starts, state);
  const std::vector<torch::Tensor> expected_grads =
      torch::autograd::grad({loss_of(expected, expected_after)}, differentiable);

  const RecurrenceOutputs fused = fused_recurrence(lstm, features, starts, state, module.weights);
  ASSERT_EQ(fused.cells.defined(), lstm);
  EXPECT_TRUE(close(fused.hidden, expected, "outputs"));
  std::vector<std::vector<torch::Tensor>> after;
  for (int64_t t = 0; t < c.steps; ++t) {
    after.push_back({fused.hidden[t]});
    if (lstm) after.back().push_back(fused.cells[t]);
    for (size_t i = 0; i < after.back().size(); ++i) {
      EXPECT_TRUE(
          close(after.back()[i], expected_after[static_cast<size_t>(t)][i], "state after step " + std::to_string(t)));
    }
  }
  const std::vector<torch::Tensor> grads = torch::autograd::grad({loss_of(fused.hidden, after)}, differentiable);
  const std::vector<std::string> names =
      lstm ? std::vector<std::string>{"features", "h0", "c0", "w_ih", "w_hh", "b_ih", "b_hh"}
           : std::vector<std::string>{"features", "h0", "w_ih", "w_hh", "b_ih", "b_hh"};
  for (size_t i = 0; i < grads.size(); ++i) EXPECT_TRUE(close(grads[i], expected_grads[i], "d loss / d " + names[i]));

  // Without grad mode the same outputs come from the forward pass alone.
  torch::NoGradGuard no_grad;
  const RecurrenceOutputs plain = fused_recurrence(lstm, features, starts, state, module.weights);
  EXPECT_TRUE(torch::equal(plain.hidden, fused.hidden));
  EXPECT_FALSE(plain.hidden.requires_grad());
}

INSTANTIATE_TEST_SUITE_P(KindsAndResets, FusedRecurrence,
                         ::testing::Combine(::testing::Bool(), ::testing::ValuesIn(cases())),
                         [](const ::testing::TestParamInfo<FusedRecurrence::ParamType>& info) {
                           return std::string(std::get<0>(info.param) ? "lstm_" : "gru_") +
                                  std::get<1>(info.param).name;
                         });

// Central differences in float64 for every input element of a small sequence with resets.
TEST(FusedRecurrenceGradcheck, GradientsMatchFiniteDifferencesInDouble) {
  torch::manual_seed(3);
  for (const bool lstm : {true, false}) {
    const int64_t steps = 4, batch = 2, inputs = 3, hidden = 3;
    Module module(lstm, inputs, hidden, torch::kDouble);
    const auto options = torch::TensorOptions().dtype(torch::kDouble);
    std::vector<torch::Tensor> leaves = {torch::randn({steps, batch, inputs}, options)};
    leaves.push_back(torch::randn({batch, hidden}, options));
    if (lstm) leaves.push_back(torch::randn({batch, hidden}, options));
    {
      torch::NoGradGuard no_grad;
      for (const torch::Tensor& w : module.weights) leaves.push_back(w.detach().uniform_(-0.8, 0.8));
    }
    for (torch::Tensor& leaf : leaves) leaf = leaf.clone().requires_grad_(true);
    torch::Tensor starts = torch::zeros({steps, batch});
    starts[2][1] = 1.0F;
    const torch::Tensor output_weight = torch::randn({steps, batch, hidden}, options);
    const torch::Tensor cell_weight = torch::randn({steps, batch, hidden}, options);
    const size_t state_count = lstm ? 2 : 1;
    const auto loss_of = [&](const std::vector<torch::Tensor>& x) {
      const std::vector<torch::Tensor> state(x.begin() + 1, x.begin() + 1 + static_cast<int64_t>(state_count));
      const std::vector<torch::Tensor> weights(x.begin() + 1 + static_cast<int64_t>(state_count), x.end());
      const RecurrenceOutputs out = fused_recurrence(lstm, x[0], starts, state, weights);
      torch::Tensor loss = (out.hidden * output_weight).sum();
      if (lstm) loss = loss + (out.cells * cell_weight).sum();
      return loss;
    };
    const std::vector<torch::Tensor> analytic = torch::autograd::grad({loss_of(leaves)}, leaves);
    torch::NoGradGuard no_grad;
    const double eps = 1e-6;
    for (size_t i = 0; i < leaves.size(); ++i) {
      torch::Tensor flat = leaves[i].view(-1);
      torch::Tensor numeric = torch::zeros_like(flat);
      for (int64_t k = 0; k < flat.numel(); ++k) {
        const double saved = flat[k].item<double>();
        flat[k] = saved + eps;
        const double up = loss_of(leaves).item<double>();
        flat[k] = saved - eps;
        const double down = loss_of(leaves).item<double>();
        flat[k] = saved;
        numeric[k] = (up - down) / (2 * eps);
      }
      const double error = (analytic[i].view(-1) - numeric).abs().max().item<double>();
      EXPECT_LT(error, 1e-6 * (1.0 + numeric.abs().max().item<double>())) << (lstm ? "lstm" : "gru") << " input " << i;
    }
  }
}

TEST(FusedRecurrenceRefusals, ShapesThatDoNotFitAreRefusedNamingThem) {
  Module module(true, 5, 4, torch::kFloat);
  const std::vector<torch::Tensor> state = {torch::zeros({3, 4}), torch::zeros({3, 4})};
  try {
    fused_recurrence(true, torch::zeros({2, 3, 6}), {}, state, module.weights);
    FAIL() << "a feature width that does not fit w_ih was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("w_ih [16, 5]"), std::string::npos) << error.what();
  }
  EXPECT_THROW(fused_recurrence(true, torch::zeros({2, 3, 5}), torch::zeros({2, 2}), state, module.weights),
               std::invalid_argument);
  EXPECT_THROW(fused_recurrence(false, torch::zeros({2, 3, 5}), {}, state, module.weights), std::invalid_argument);
  EXPECT_FALSE(fused_recurrence_applies(torch::zeros({2, 3, 5}, torch::kInt), state, module.weights));
}

// RecurrentCore runs the fused recurrence, and a clone runs its own (copied) weights, not those
// its reset() made before clone() copied the trained ones in.
TEST(RecurrentCoreFused, UnrollAndStepEqualLibTorchsModuleAndAClonesWeightsAreItsOwn) {
  torch::manual_seed(5);
  for (const std::string kind : {"lstm", "gru"}) {
    RecurrentCore core(kind, 5, 4);
    {
      torch::NoGradGuard no_grad;
      for (auto& p : core->parameters()) p.uniform_(-0.5, 0.5);
    }
    Module module(kind == "lstm", 5, 4, torch::kFloat);
    {
      torch::NoGradGuard no_grad;
      const auto from = core->named_parameters();
      for (size_t i = 0; i < module.weights.size(); ++i) {
        const char* names[] = {"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"};
        module.weights[i].copy_(from[std::string(kind) + "." + names[i]]);
      }
    }
    const torch::Tensor features = torch::randn({6, 3, 5});
    torch::Tensor starts = torch::zeros({6, 3});
    starts[2][0] = 1.0F;
    starts[4][2] = 1.0F;
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> state = core->initial_state(3);
    std::vector<std::vector<torch::Tensor>> states_after;
    const torch::Tensor unrolled = core->unroll(features, starts, state, {1, 3}, &states_after);
    auto [expected, expected_after] = module.reference(features, starts, core->initial_state(3));
    EXPECT_TRUE(close(unrolled, expected, kind + " outputs"));
    for (const size_t t : {1, 3, 5}) {
      const std::vector<torch::Tensor>& got = t == 5 ? state : states_after[t];
      ASSERT_EQ(got.size(), core->state_names().size()) << kind;
      for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(close(got[i], expected_after[t][i], kind + " state"));
    }
    std::vector<torch::Tensor> stepped = core->initial_state(3);
    const torch::Tensor first = core->step(features[0], starts[0], stepped);
    EXPECT_TRUE(close(first, expected[0], kind + " step"));

    RecurrentCore copy = std::dynamic_pointer_cast<RecurrentCoreImpl>(core->clone());
    std::vector<torch::Tensor> copy_state = copy->initial_state(3);
    EXPECT_TRUE(torch::equal(copy->unroll(features, starts, copy_state), unrolled)) << kind;
    for (auto& p : core->parameters()) p.zero_();
    copy_state = copy->initial_state(3);
    EXPECT_TRUE(torch::equal(copy->unroll(features, starts, copy_state), unrolled)) << kind;
  }
}

}  // namespace
}  // namespace concord::nn
