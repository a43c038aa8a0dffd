#include "concord/nn/q_network.h"

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include <torch/nn/modules/conv.h>

#include "concord/nn/fused_linear_stack.h"

namespace concord::nn {
namespace {

// PyTorch's default initialisation (what a freshly built nn.Linear or nn.Conv2d has) for every
// linear and convolutional layer below `module` (not itself: a constructor's module has no
// shared_ptr yet).
void pytorch_default_init(torch::nn::Module& module) {
  for (const auto& child : module.modules(/*include_self=*/false)) {
    if (auto* linear = child->as<torch::nn::Linear>()) {
      linear->reset_parameters();
    } else if (auto* conv = child->as<torch::nn::Conv2d>()) {
      conv->reset_parameters();
    }
  }
}

}  // namespace

void QNetworkConfig::validate() const {
  if (torso.action_kind != ActionKind::kDiscrete) {
    throw std::invalid_argument("QNetwork: needs discrete actions, got a continuous action space of " +
                                std::to_string(torso.action_dim) + " dimensions");
  }
  if (torso.normalize_observations) {
    throw std::invalid_argument(
        "QNetwork: normalize_observations is not supported (set algo.normalize_observations "
        "= false)");
  }
  torso.validate();
}

QNetworkImpl::QNetworkImpl(QNetworkConfig config) : config_(std::move(config)) {
  config_.validate();
  reset();
}

void QNetworkImpl::reset() {
  const ActorCriticConfig& c = config_.torso;
  int64_t features = 0;
  mlp_ = nullptr;
  cnn_ = nullptr;
  grid_ = nullptr;
  if (c.torso == "cnn") {
    cnn_ = register_module("torso", CnnTorso(c.obs_shape, c.cnn_features, c.cnn_scale_input));
    features = cnn_->output_dim();
  } else if (c.torso == "grid_cnn") {
    grid_ = register_module("torso", GridCnnTorso(c.grid_cnn()));
    features = grid_->output_dim();
  } else {
    int64_t input_dim = 1;
    for (int64_t size : c.obs_shape) input_dim *= size;
    mlp_ = register_module("torso", MlpTorso(input_dim, c.hidden_sizes, c.activation));
    features = mlp_->output_dim();
  }
  if (config_.dueling) {
    head_ = nullptr;
    value_head_ = register_module("value_head", torch::nn::Linear(features, 1));
    advantage_head_ = register_module("advantage_head", torch::nn::Linear(features, c.action_dim));
  } else {
    head_ = register_module("head", torch::nn::Linear(features, c.action_dim));
    value_head_ = nullptr;
    advantage_head_ = nullptr;
  }
  pytorch_default_init(*this);
}

torch::Tensor QNetworkImpl::features(const torch::Tensor& x) {
  if (cnn_) return cnn_->forward(x);
  return grid_->forward(x);
}

torch::Tensor QNetworkImpl::forward(const torch::Tensor& obs) {
  const std::vector<int64_t>& shape = config_.torso.obs_shape;
  bool matches = obs.dim() == static_cast<int64_t>(shape.size()) + 1;
  for (size_t i = 0; matches && i < shape.size(); ++i) matches = obs.size(static_cast<int64_t>(i) + 1) == shape[i];
  if (!matches) {
    std::ostringstream message;
    message << "QNetwork: expected observations [B";
    for (int64_t size : shape) message << ", " << size;
    message << "], got " << obs.sizes();
    throw std::invalid_argument(message.str());
  }
  const torch::Tensor& weight = config_.dueling ? advantage_head_->weight : head_->weight;
  const torch::Tensor x = obs.to(weight.device(), weight.scalar_type());
  if (mlp_) return mlp_forward(x.flatten(1));
  const torch::Tensor h = features(x);
  if (!config_.dueling) return head_->forward(h);
  return dueling_combination(h);
}

torch::Tensor QNetworkImpl::mlp_forward(const torch::Tensor& x) {
  // The torso, and the plain head, as one autograd node (fused_linear_stack.h): a CartPole-sized
  // update is bound by per-operation cost.
  std::vector<torch::Tensor> weights;
  std::vector<torch::Tensor> biases;
  for (const torch::nn::Linear& layer : mlp_->layers()) {
    weights.push_back(layer->weight);
    biases.push_back(layer->bias);
  }
  if (!config_.dueling) {
    weights.push_back(head_->weight);
    biases.push_back(head_->bias);
    return fused_linear_stack(x, weights, biases, mlp_->activation(), /*activate_last=*/false);
  }
  if (weights.empty()) return dueling_combination(x);
  return dueling_combination(fused_linear_stack(x, weights, biases, mlp_->activation(), /*activate_last=*/true));
}

torch::Tensor QNetworkImpl::dueling_combination(const torch::Tensor& h) {
  // Wang et al. (2016), eq. 9: the mean advantage is subtracted so that V and A are identifiable.
  const torch::Tensor value = value_head_->forward(h);
  const torch::Tensor advantage = advantage_head_->forward(h);
  return value + advantage - advantage.mean(/*dim=*/1, /*keepdim=*/true);
}

QNetwork build_q_network(const QNetworkConfig& config, torch::Device device) {
  QNetwork network(config);
  network->to(device);
  return network;
}

}  // namespace concord::nn
