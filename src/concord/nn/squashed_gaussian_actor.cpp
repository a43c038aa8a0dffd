#include "concord/nn/squashed_gaussian_actor.h"

#include <ATen/ops/full.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/tensor.h>

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "concord/core/torch_thread.h"
#include "concord/nn/fused_linear_stack.h"

namespace concord::nn {
namespace {

// log(sqrt(2 pi)), the Gaussian's normalising constant as torch.distributions.Normal writes it.
const double kLogSqrtTwoPi = std::log(std::sqrt(2.0 * M_PI));
// gSDE's variance floor (SB3's StateDependentNoiseDistribution epsilon).
constexpr double kSdeEpsilon = 1e-6;

void check_config(const SquashedGaussianActorConfig& config) {
  std::ostringstream problems;
  if (config.obs_dim < 1) problems << " obs_dim=" << config.obs_dim << " must be >= 1;";
  if (config.action_dim < 1) problems << " action_dim=" << config.action_dim << " must be >= 1;";
  if (config.use_sde && !(config.clip_mean >= 0.0)) problems << " clip_mean=" << config.clip_mean << " must be >= 0;";
  if (config.use_sde && !std::isfinite(config.log_std_init)) {
    problems << " log_std_init=" << config.log_std_init << " must be finite;";
  }
  const size_t low = config.action_low.size();
  const size_t high = config.action_high.size();
  if (low != high || (low != 0 && static_cast<int64_t>(low) != config.action_dim)) {
    problems << " action_low and action_high must both be empty or both hold action_dim=" << config.action_dim
             << " bounds, got " << low << " and " << high << ";";
  } else {
    for (size_t j = 0; j < low; ++j) {
      const double lo = config.action_low[j];
      const double hi = config.action_high[j];
      if (!std::isfinite(lo) || !std::isfinite(hi) || !(lo < hi)) {
        problems << " action bounds [" << lo << ", " << hi << "] of dimension " << j
                 << " must be finite with low < high;";
      }
    }
  }
  const std::string text = problems.str();
  if (!text.empty()) {
    throw std::invalid_argument("SquashedGaussianActor:" + text.substr(0, text.size() - 1));
  }
}

}  // namespace

torch::Tensor squashed_gaussian_log_prob(const torch::Tensor& u, const torch::Tensor& mean,
                                         const torch::Tensor& log_std, const torch::Tensor& action_scale) {
  // log N(u; mean, std) as torch.distributions.Normal(mean, std).log_prob(u) computes it.
  const torch::Tensor std = log_std.exp();
  const torch::Tensor gaussian = -(u - mean).square() / (2.0 * std.square()) - std.log() - kLogSqrtTwoPi;
  // Enforcing the action bound: minus log |d action / d u| = log(scale * (1 - tanh(u)^2)).
  const torch::Tensor y = u.tanh();
  const torch::Tensor log_det = (action_scale * (1.0 - y.square()) + 1e-6).log();
  return (gaussian - log_det).sum(1);
}

SquashedGaussianActorImpl::SquashedGaussianActorImpl(SquashedGaussianActorConfig config) : config_(std::move(config)) {
  check_config(config_);
  reset();
}

void SquashedGaussianActorImpl::reset() {
  torso_ = register_module("torso", MlpTorso(config_.obs_dim, config_.hidden_sizes, config_.activation));
  fc_mean_ = register_module("fc_mean", torch::nn::Linear(torso_->output_dim(), config_.action_dim));
  if (config_.use_sde) {
    sde_log_std_ = register_parameter(
        "log_std", at::full({torso_->output_dim(), config_.action_dim}, config_.log_std_init, at::kFloat));
    sde_noise_ = torch::Tensor();
    sde_row_noise_ = torch::Tensor();
  } else {
    fc_logstd_ = register_module("fc_logstd", torch::nn::Linear(torso_->output_dim(), config_.action_dim));
  }
  // CleanRL's SAC keeps PyTorch's default initialisation; MlpTorso initialises orthogonally.
  for (const auto& child : torso_->modules(/*include_self=*/false)) {
    if (auto* linear = dynamic_cast<torch::nn::LinearImpl*>(child.get())) linear->reset_parameters();
  }
  std::vector<float> scale(static_cast<size_t>(config_.action_dim), 1.0f);
  std::vector<float> bias(static_cast<size_t>(config_.action_dim), 0.0f);
  for (size_t j = 0; j < config_.action_low.size(); ++j) {
    scale[j] = static_cast<float>((config_.action_high[j] - config_.action_low[j]) / 2.0);
    bias[j] = static_cast<float>((config_.action_high[j] + config_.action_low[j]) / 2.0);
  }
  action_scale_ = register_buffer("action_scale", at::tensor(scale));
  action_bias_ = register_buffer("action_bias", at::tensor(bias));
}

torch::Tensor SquashedGaussianActorImpl::prepare(const torch::Tensor& obs) const {
  const torch::Tensor flat = obs.dim() == 1 ? obs.unsqueeze(1) : obs.flatten(1);
  if (flat.size(1) != config_.obs_dim) {
    std::ostringstream message;
    message << "SquashedGaussianActor: expected observations [B, " << config_.obs_dim << "], got " << obs.sizes();
    throw std::invalid_argument(message.str());
  }
  return flat.to(fc_mean_->weight.device(), fc_mean_->weight.scalar_type());
}

torch::Tensor SquashedGaussianActorImpl::features(const torch::Tensor& x) {
  if (!fused_ || torso_->layers().empty()) return torso_->forward(x);
  std::vector<torch::Tensor> weights;
  std::vector<torch::Tensor> biases;
  for (const torch::nn::Linear& layer : torso_->layers()) {
    weights.push_back(layer->weight);
    biases.push_back(layer->bias);
  }
  return fused_linear_stack(x, weights, biases, torso_->activation(), /*activate_last=*/true);
}

torch::Tensor SquashedGaussianActorImpl::head(torch::nn::Linear& layer, const torch::Tensor& h) {
  if (!fused_) return layer->forward(h);
  return fused_linear_stack(h, {layer->weight}, {layer->bias}, torso_->activation(), /*activate_last=*/false);
}

SquashedGaussianActorImpl::Output SquashedGaussianActorImpl::forward(const torch::Tensor& obs) {
  const torch::Tensor h = features(prepare(obs));
  if (config_.use_sde) {
    const SdeParameters p = sde_parameters(h);
    return {p.mean, p.sigma.log()};
  }
  const torch::Tensor mean = head(fc_mean_, h);
  const torch::Tensor log_std =
      kSquashedLogStdMin + 0.5 * (kSquashedLogStdMax - kSquashedLogStdMin) * (head(fc_logstd_, h).tanh() + 1.0);
  return {mean, log_std};
}

SquashedGaussianActorImpl::SdeParameters SquashedGaussianActorImpl::sde_parameters(const torch::Tensor& h) {
  SdeParameters p;
  p.mean = head(fc_mean_, h);
  if (config_.clip_mean > 0.0) p.mean = p.mean.clamp(-config_.clip_mean, config_.clip_mean);
  p.std = sde_log_std_.exp();
  p.sigma = (h.square().mm(p.std.square()) + kSdeEpsilon).sqrt();
  return p;
}

void SquashedGaussianActorImpl::reset_noise(int64_t batch) {
  if (!config_.use_sde) throw std::logic_error("SquashedGaussianActor::reset_noise: the actor does not use gSDE");
  if (batch < 1) throw std::invalid_argument("SquashedGaussianActor::reset_noise: batch must be >= 1");
  const auto options = sde_log_std_.options().requires_grad(false);
  const auto generator = core::thread_generator(sde_log_std_.device());
  sde_noise_ = at::randn(sde_log_std_.sizes(), generator, options);
  sde_row_noise_ =
      batch > 1 ? at::randn({batch, sde_log_std_.size(0), sde_log_std_.size(1)}, generator, options) : torch::Tensor();
}

SquashedSample SquashedGaussianActorImpl::sample(const torch::Tensor& obs) {
  if (config_.use_sde) {
    if (!sde_noise_.defined()) reset_noise();
    const torch::Tensor h = features(prepare(obs));
    const SdeParameters p = sde_parameters(h);
    // The exploration matrices W = std * noise, through which the loss reaches log_std.
    const torch::Tensor noise = sde_row_noise_.defined() && sde_row_noise_.size(0) == h.size(0)
                                    ? h.unsqueeze(1).bmm(p.std * sde_row_noise_.to(h.device())).squeeze(1)
                                    : h.mm(p.std * sde_noise_.to(h.device()));
    const torch::Tensor u = p.mean + noise;
    SquashedSample out;
    out.action = u.tanh() * action_scale_ + action_bias_;
    out.log_prob = squashed_gaussian_log_prob(u, p.mean, p.sigma.log(), action_scale_);
    out.mean_action = p.mean.tanh() * action_scale_ + action_bias_;
    return out;
  }
  const torch::Tensor& weight = fc_mean_->weight;
  const torch::Tensor noise = at::randn({obs.size(0), config_.action_dim}, core::thread_generator(weight.device()),
                                        weight.options().requires_grad(false));
  return sample(obs, noise);
}

SquashedSample SquashedGaussianActorImpl::sample(const torch::Tensor& obs, const torch::Tensor& noise) {
  if (config_.use_sde) throw std::logic_error("SquashedGaussianActor::sample(obs, noise): not with gSDE");
  const auto [mean, log_std] = forward(obs);
  const torch::Tensor u = mean + log_std.exp() * noise.to(mean.options());  // rsample: the reparameterisation trick
  SquashedSample out;
  out.action = u.tanh() * action_scale_ + action_bias_;
  out.log_prob = squashed_gaussian_log_prob(u, mean, log_std, action_scale_);
  out.mean_action = mean.tanh() * action_scale_ + action_bias_;
  return out;
}

torch::Tensor SquashedGaussianActorImpl::deterministic_action(const torch::Tensor& obs) {
  return forward(obs).mean.tanh() * action_scale_ + action_bias_;
}

}  // namespace concord::nn
