#include "concord/nn/soft_q_network.h"

#include <ATen/ops/cat.h>

#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "concord/nn/fused_linear_stack.h"

namespace concord::nn {

SoftQNetworkImpl::SoftQNetworkImpl(SoftQNetworkConfig config) : config_(std::move(config)) {
  if (config_.obs_dim < 1 || config_.action_dim < 1) {
    std::ostringstream message;
    message << "SoftQNetwork: obs_dim and action_dim must be >= 1, got obs_dim=" << config_.obs_dim
            << " action_dim=" << config_.action_dim;
    throw std::invalid_argument(message.str());
  }
  reset();
}

void SoftQNetworkImpl::reset() {
  torso_ = register_module("torso",
                           MlpTorso(config_.obs_dim + config_.action_dim, config_.hidden_sizes, config_.activation));
  fc_q_ = register_module("fc_q", torch::nn::Linear(torso_->output_dim(), 1));
  // CleanRL's SAC keeps PyTorch's default initialisation; MlpTorso initialises orthogonally.
  for (const auto& child : torso_->modules(/*include_self=*/false)) {
    if (auto* linear = dynamic_cast<torch::nn::LinearImpl*>(child.get())) linear->reset_parameters();
  }
}

torch::Tensor SoftQNetworkImpl::forward(const torch::Tensor& obs, const torch::Tensor& actions) {
  return evaluate(obs, actions, /*frozen=*/false);
}

torch::Tensor SoftQNetworkImpl::forward_frozen(const torch::Tensor& obs, const torch::Tensor& actions) {
  return evaluate(obs, actions, /*frozen=*/true);
}

torch::Tensor SoftQNetworkImpl::evaluate(const torch::Tensor& obs, const torch::Tensor& actions, bool frozen) {
  const torch::Tensor& weight = fc_q_->weight;
  const torch::Tensor x =
      (obs.dim() == 1 ? obs.unsqueeze(1) : obs.flatten(1)).to(weight.device(), weight.scalar_type());
  const torch::Tensor a =
      (actions.dim() == 1 ? actions.unsqueeze(1) : actions.flatten(1)).to(weight.device(), weight.scalar_type());
  if (x.size(1) != config_.obs_dim || a.size(1) != config_.action_dim || x.size(0) != a.size(0)) {
    std::ostringstream message;
    message << "SoftQNetwork: expected observations [B, " << config_.obs_dim << "] and actions [B, "
            << config_.action_dim << "], got " << obs.sizes() << " and " << actions.sizes();
    throw std::invalid_argument(message.str());
  }
  const torch::Tensor input = at::cat({x, a}, 1);
  if (!fused_) return fc_q_->forward(torso_->forward(input)).squeeze(1);
  std::vector<torch::Tensor> weights;
  std::vector<torch::Tensor> biases;
  for (const torch::nn::Linear& layer : torso_->layers()) {
    weights.push_back(frozen ? layer->weight.detach() : layer->weight);
    biases.push_back(frozen ? layer->bias.detach() : layer->bias);
  }
  weights.push_back(frozen ? fc_q_->weight.detach() : fc_q_->weight);
  biases.push_back(frozen ? fc_q_->bias.detach() : fc_q_->bias);
  return fused_linear_stack(input, weights, biases, torso_->activation(), /*activate_last=*/false).squeeze(1);
}

}  // namespace concord::nn
