#include "concord/nn/q_network.h"

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include <torch/nn/modules/conv.h>

#include "concord/nn/fused_linear_stack.h"
#include "concord/nn/init.h"

namespace concord::nn {

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
  if (!torso.orthogonal_init) {
    throw std::invalid_argument(
        "QNetwork: orthogonal_init = false asks for PyTorch's default initialisation, which its linear layers "
        "always have (set algo.orthogonal_init = true)");
  }
  if (!torso.head_hidden_sizes.empty()) {
    throw std::invalid_argument(
        "QNetwork: head_hidden_sizes is not supported (its heads read the torso or the core; set "
        "algo.head_hidden_sizes = [])");
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
  core_ = nullptr;
  if (!c.recurrent.empty()) {
    core_ = register_module("core", RecurrentCore(c.recurrent, features, c.recurrent_size));
    features = c.recurrent_size;
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
  // R2D2 measured with the core orthogonal (recurrent_core.h), the other layers PyTorch's.
  pytorch_default_init(*this, /*recurrent=*/false);
}

torch::Tensor QNetworkImpl::features(const torch::Tensor& x) {
  if (cnn_) return cnn_->forward(x);
  return grid_->forward(x);
}

torch::Tensor QNetworkImpl::converted(const torch::Tensor& obs, int64_t leading_dims) const {
  const std::vector<int64_t>& shape = config_.torso.obs_shape;
  bool matches = obs.dim() == static_cast<int64_t>(shape.size()) + leading_dims;
  for (size_t i = 0; matches && i < shape.size(); ++i)
    matches = obs.size(static_cast<int64_t>(i) + leading_dims) == shape[i];
  if (!matches) {
    std::ostringstream message;
    message << "QNetwork: expected observations [" << (leading_dims == 2 ? "T, B" : "B");
    for (int64_t size : shape) message << ", " << size;
    message << "], got " << obs.sizes();
    throw std::invalid_argument(message.str());
  }
  const torch::Tensor& weight = config_.dueling ? advantage_head_->weight : head_->weight;
  return obs.to(weight.device(), weight.scalar_type());
}

torch::Tensor QNetworkImpl::forward(const torch::Tensor& obs) {
  if (core_) {
    throw std::logic_error("QNetwork::forward: this network has memory (recurrent = \"" + config_.torso.recurrent +
                           "\"): use step() or unroll() with each env's state");
  }
  const torch::Tensor x = converted(obs, 1);
  if (mlp_) return mlp_forward(x.flatten(1));
  return heads(features(x));
}

torch::Tensor QNetworkImpl::torso_features(const torch::Tensor& x) {
  if (mlp_) return mlp_->forward(x.flatten(1));
  return features(x);
}

torch::Tensor QNetworkImpl::heads(const torch::Tensor& h) {
  if (!config_.dueling) return head_->forward(h);
  return dueling_combination(h);
}

std::vector<torch::Tensor> QNetworkImpl::unpack(const core::TensorMap& state, int64_t batch) const {
  if (state.empty()) return core_->initial_state(batch);
  std::vector<torch::Tensor> tensors;
  for (const std::string& name : core_->state_names()) {
    const auto found = state.find(name);
    if (found == state.end() || found->second.dim() != 2 || found->second.size(0) != batch ||
        found->second.size(1) != core_->hidden_size()) {
      throw std::invalid_argument("QNetwork: the state needs '" + name + "' of shape [" + std::to_string(batch) + ", " +
                                  std::to_string(core_->hidden_size()) + "]");
    }
    tensors.push_back(found->second);
  }
  return tensors;
}

core::TensorMap QNetworkImpl::pack(std::vector<torch::Tensor> state) const {
  core::TensorMap packed;
  const std::vector<std::string>& names = core_->state_names();
  for (size_t i = 0; i < names.size(); ++i) packed[names[i]] = std::move(state[i]);
  return packed;
}

core::TensorMap QNetworkImpl::initial_state(int64_t batch) const {
  if (!core_) throw std::logic_error("QNetwork::initial_state: this network has no memory");
  return pack(core_->initial_state(batch));
}

torch::Tensor QNetworkImpl::step(const torch::Tensor& obs, const torch::Tensor& starts, core::TensorMap& state) {
  if (!core_) throw std::logic_error("QNetwork::step: this network has no memory");
  const torch::Tensor x = converted(obs, 1);
  std::vector<torch::Tensor> tensors = unpack(state, x.size(0));
  const torch::Tensor h = core_->step(torso_features(x), starts, tensors);
  state = pack(std::move(tensors));
  return heads(h);
}

torch::Tensor QNetworkImpl::unroll(const torch::Tensor& obs, const torch::Tensor& starts, core::TensorMap& state) {
  if (!core_) throw std::logic_error("QNetwork::unroll: this network has no memory");
  const torch::Tensor x = converted(obs, 2);
  const int64_t steps = x.size(0);
  const int64_t batch = x.size(1);
  std::vector<torch::Tensor> tensors = unpack(state, batch);
  // The torso sees every step at once; only the core goes step by step.
  const torch::Tensor h = core_->unroll(torso_features(x.flatten(0, 1)).unflatten(0, {steps, batch}), starts, tensors);
  state = pack(std::move(tensors));
  return heads(h.flatten(0, 1)).unflatten(0, {steps, batch});
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
