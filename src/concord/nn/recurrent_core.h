#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/cloneable.h>
#include <torch/nn/modules/rnn.h>
#include <torch/nn/pimpl.h>

namespace concord::nn {

// What follows a torso in an agent with memory (A3C-LSTM, Mnih et al. 2016; CleanRL's
// ppo_atari_lstm.py): LibTorch's LSTM or GRU, one layer, stepped one time step at a time, so
// that every env's state can be reset to zeros where its episode starts, inside a sequence too.
//
// A state is one tensor per name of state_names(), each [B, hidden_size] (env-major, so that a
// policy can split and join envs' rows): {h} for a GRU, {h, c} for an LSTM. Weights are
// orthogonal with gain 1 and biases 0, as CleanRL initialises its LSTM.
class RecurrentCoreImpl : public torch::nn::Cloneable<RecurrentCoreImpl> {
 public:
  // kind: "lstm" or "gru". Throws std::invalid_argument for another kind or a size < 1.
  RecurrentCoreImpl(std::string kind, int64_t input_size, int64_t hidden_size);
  void reset() override;

  const std::vector<std::string>& state_names() const { return state_names_; }
  int64_t hidden_size() const { return hidden_size_; }
  // The state at an episode's start for `batch` envs: zeros on the parameters' device.
  std::vector<torch::Tensor> initial_state(int64_t batch) const;

  // One step for B envs: features [B, input_size], `state` the state before it (rows where
  // starts [B] is 1 are reset first; starts may be undefined) -> output [B, hidden_size]; `state`
  // becomes the state after it. Runs as unroll() does, a sequence of one step.
  torch::Tensor step(const torch::Tensor& features, const torch::Tensor& starts, std::vector<torch::Tensor>& state);
  // T steps: features [T, B, input_size], starts [T, B] -> outputs [T, B, hidden_size]; `state`
  // goes in as the state before step 0 and comes out as the state after step T - 1. With
  // `states_after`, it also receives the state after each step t of `wanted` (before any reset at
  // t + 1). On the CPU in float32 or float64 the whole sequence runs as one autograd node
  // (fused_recurrence.h: the same math; recurrent PPO at CartPole scale ran 4x to 6x the steps/s
  // of a LibTorch call per segment, bench/RESULTS.md); elsewhere the steps between two episode
  // starts (in any env) run as one call of the LibTorch module: an episode start splits the
  // sequence, as does a wanted step.
  torch::Tensor unroll(const torch::Tensor& features, const torch::Tensor& starts, std::vector<torch::Tensor>& state,
                       const std::vector<int64_t>& wanted = {},
                       std::vector<std::vector<torch::Tensor>>* states_after = nullptr);

 private:
  // Steps features [L, B, input_size] from `state` without resets -> outputs [L, B, hidden_size].
  torch::Tensor run(const torch::Tensor& features, std::vector<torch::Tensor>& state);
  // unroll() through LibTorch's module, a call per segment between episode starts (any device).
  torch::Tensor unroll_segments(const torch::Tensor& features, const torch::Tensor& starts,
                                std::vector<torch::Tensor>& state, const std::vector<int64_t>& wanted,
                                std::vector<std::vector<torch::Tensor>>* states_after);

  std::string kind_;
  int64_t input_size_;
  int64_t hidden_size_;
  std::vector<std::string> state_names_;
  torch::nn::LSTM lstm_{nullptr};
  torch::nn::GRU gru_{nullptr};
  // The module's parameters w_ih, w_hh, b_ih, b_hh, looked up at each call: a clone() replaces
  // the LibTorch module's parameter tensors after reset(), so they cannot be kept.
  std::vector<torch::Tensor> weights() const;
};
TORCH_MODULE(RecurrentCore);

}  // namespace concord::nn
