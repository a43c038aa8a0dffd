#include "concord/nn/mlp.h"

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "concord/nn/init.h"

namespace concord::nn {

Activation parse_activation(const std::string& name) {
  if (name == "tanh") {
    return Activation::kTanh;
  }
  if (name == "relu") {
    return Activation::kRelu;
  }
  throw std::invalid_argument("unknown activation \"" + name + "\" (expected \"tanh\" or \"relu\")");
}

MlpTorsoImpl::MlpTorsoImpl(int64_t input_dim, std::vector<int64_t> hidden_sizes, const std::string& activation)
    : input_dim_(input_dim), hidden_sizes_(std::move(hidden_sizes)), activation_(parse_activation(activation)) {
  bool valid = input_dim_ >= 1;
  for (int64_t size : hidden_sizes_) {
    valid = valid && size >= 1;
  }
  if (!valid) {
    std::ostringstream message;
    message << "MlpTorso: input_dim and hidden sizes must be >= 1, got input_dim=" << input_dim_ << " hidden_sizes=[";
    for (size_t i = 0; i < hidden_sizes_.size(); ++i) {
      message << (i ? ", " : "") << hidden_sizes_[i];
    }
    message << "]";
    throw std::invalid_argument(message.str());
  }
  reset();
}

void MlpTorsoImpl::reset() {
  layers_.clear();
  int64_t in = input_dim_;
  for (size_t i = 0; i < hidden_sizes_.size(); ++i) {
    torch::nn::Linear layer(in, hidden_sizes_[i]);
    orthogonal_init(layer, std::sqrt(2.0));
    layers_.push_back(register_module("fc" + std::to_string(i), layer));
    in = hidden_sizes_[i];
  }
}

int64_t MlpTorsoImpl::output_dim() const { return hidden_sizes_.empty() ? input_dim_ : hidden_sizes_.back(); }

torch::Tensor MlpTorsoImpl::forward(const torch::Tensor& x) {
  if (x.dim() < 1 || x.size(-1) != input_dim_) {
    std::ostringstream message;
    message << "MlpTorso: expected input [B, " << input_dim_ << "], got " << x.sizes();
    throw std::invalid_argument(message.str());
  }
  if (layers_.empty()) {
    return x;
  }
  const torch::Tensor& weight = layers_.front()->weight;
  torch::Tensor h = x.to(weight.device(), weight.scalar_type());
  for (auto& layer : layers_) {
    h = layer->forward(h);
    h = activation_ == Activation::kTanh ? h.tanh() : h.relu();
  }
  return h;
}

}  // namespace concord::nn
