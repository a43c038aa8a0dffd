#include "concord/nn/recurrent_core.h"

#include <stdexcept>
#include <tuple>
#include <utility>

#include <torch/nn/init.h>
#include <torch/torch.h>

#include "concord/nn/fused_recurrence.h"

namespace concord::nn {
namespace {

// Zeroes the rows of every state tensor where an episode starts (starts [B] 0/1).
void reset_rows(std::vector<torch::Tensor>& state, const torch::Tensor& starts) {
  if (!starts.defined()) return;
  const torch::Tensor keep = (1.0 - starts.to(state.front().options())).unsqueeze(1);
  for (torch::Tensor& tensor : state) tensor = tensor * keep;
}

}  // namespace

RecurrentCoreImpl::RecurrentCoreImpl(std::string kind, int64_t input_size, int64_t hidden_size)
    : kind_(std::move(kind)), input_size_(input_size), hidden_size_(hidden_size) {
  if (kind_ != "lstm" && kind_ != "gru") {
    throw std::invalid_argument("recurrent core: kind must be \"lstm\" or \"gru\", got \"" + kind_ + "\"");
  }
  if (input_size_ < 1 || hidden_size_ < 1) {
    throw std::invalid_argument("recurrent core: sizes must be >= 1, got input " + std::to_string(input_size_) +
                                ", hidden " + std::to_string(hidden_size_));
  }
  state_names_ = kind_ == "lstm" ? std::vector<std::string>{"h", "c"} : std::vector<std::string>{"h"};
  reset();
}

void RecurrentCoreImpl::reset() {
  torch::nn::Module* rnn = nullptr;
  if (kind_ == "lstm") {
    lstm_ = register_module("lstm", torch::nn::LSTM(torch::nn::LSTMOptions(input_size_, hidden_size_)));
    rnn = lstm_.get();
  } else {
    gru_ = register_module("gru", torch::nn::GRU(torch::nn::GRUOptions(input_size_, hidden_size_)));
    rnn = gru_.get();
  }
  torch::NoGradGuard no_grad;
  for (auto& parameter : rnn->named_parameters()) {
    if (parameter.key().rfind("bias", 0) == 0) {
      parameter.value().zero_();
    } else {
      torch::nn::init::orthogonal_(parameter.value(), 1.0);
    }
  }
}

std::vector<torch::Tensor> RecurrentCoreImpl::weights() const {
  const auto parameters =
      lstm_ ? lstm_->named_parameters(/*recurse=*/false) : gru_->named_parameters(/*recurse=*/false);
  return {parameters["weight_ih_l0"], parameters["weight_hh_l0"], parameters["bias_ih_l0"], parameters["bias_hh_l0"]};
}

std::vector<torch::Tensor> RecurrentCoreImpl::initial_state(int64_t batch) const {
  const torch::Tensor weight = lstm_ ? lstm_->all_weights().front() : gru_->all_weights().front();
  std::vector<torch::Tensor> state;
  for (size_t i = 0; i < state_names_.size(); ++i)
    state.push_back(torch::zeros({batch, hidden_size_}, weight.options()));
  return state;
}

torch::Tensor RecurrentCoreImpl::run(const torch::Tensor& features, std::vector<torch::Tensor>& state) {
  if (lstm_) {
    auto [output, hc] = lstm_->forward(features, std::make_tuple(state[0].unsqueeze(0), state[1].unsqueeze(0)));
    state = {std::get<0>(hc).squeeze(0), std::get<1>(hc).squeeze(0)};
    return output;
  }
  auto [output, h] = gru_->forward(features, state[0].unsqueeze(0));
  state = {h.squeeze(0)};
  return output;
}

torch::Tensor RecurrentCoreImpl::step(const torch::Tensor& features, const torch::Tensor& starts,
                                      std::vector<torch::Tensor>& state) {
  if (fused_recurrence_applies(features, state, weights())) {
    return unroll(features.unsqueeze(0), starts.defined() ? starts.unsqueeze(0) : starts, state).squeeze(0);
  }
  reset_rows(state, starts);
  return run(features.unsqueeze(0), state).squeeze(0);  // [1, B, F]: one time step
}

torch::Tensor RecurrentCoreImpl::unroll(const torch::Tensor& features, const torch::Tensor& starts,
                                        std::vector<torch::Tensor>& state, const std::vector<int64_t>& wanted,
                                        std::vector<std::vector<torch::Tensor>>* states_after) {
  const std::vector<torch::Tensor> parameters = weights();
  if (!fused_recurrence_applies(features, state, parameters)) {
    return unroll_segments(features, starts, state, wanted, states_after);
  }
  const RecurrenceOutputs out = fused_recurrence(kind_ == "lstm", features, starts, state, parameters);
  const auto state_after = [&](int64_t t) {
    std::vector<torch::Tensor> after{out.hidden[t]};
    if (out.cells.defined()) after.push_back(out.cells[t]);
    return after;
  };
  const int64_t steps = features.size(0);
  if (states_after != nullptr) {
    states_after->assign(static_cast<size_t>(steps), {});
    for (const int64_t t : wanted) (*states_after)[static_cast<size_t>(t)] = state_after(t);
  }
  state = state_after(steps - 1);
  return out.hidden;
}

torch::Tensor RecurrentCoreImpl::unroll_segments(const torch::Tensor& features, const torch::Tensor& starts,
                                                 std::vector<torch::Tensor>& state, const std::vector<int64_t>& wanted,
                                                 std::vector<std::vector<torch::Tensor>>* states_after) {
  const int64_t steps = features.size(0);
  // Where a segment must begin: a step at which some env starts an episode (its row is reset
  // first), and the step after a wanted one (whose state is read off at the segment's end).
  std::vector<bool> begins(static_cast<size_t>(steps) + 1, false);
  begins[0] = true;
  begins[static_cast<size_t>(steps)] = true;
  if (starts.defined()) {
    const torch::Tensor any_start = starts.gt(0.0).any(1).cpu();
    const bool* row = any_start.data_ptr<bool>();
    for (int64_t t = 1; t < steps; ++t) begins[static_cast<size_t>(t)] = row[t];
  }
  for (const int64_t t : wanted) begins[static_cast<size_t>(t) + 1] = true;
  if (states_after != nullptr) states_after->assign(static_cast<size_t>(steps), {});
  std::vector<torch::Tensor> outputs;
  for (int64_t begin = 0; begin < steps;) {
    int64_t end = begin + 1;
    while (!begins[static_cast<size_t>(end)]) ++end;
    if (starts.defined()) reset_rows(state, starts[begin]);
    outputs.push_back(run(features.narrow(0, begin, end - begin), state));
    if (states_after != nullptr) (*states_after)[static_cast<size_t>(end - 1)] = state;
    begin = end;
  }
  return outputs.size() == 1 ? outputs.front() : torch::cat(outputs);
}

}  // namespace concord::nn
