#include "concord/algos/sac.h"

#include <ATen/ops/equal.h>
#include <ATen/ops/full.h>
#include <ATen/ops/min.h>
#include <ATen/ops/mse_loss.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "concord/algos/gradient_step.h"
#include "concord/algos/module_checkpoint.h"
#include "concord/core/checkpoint_fields.h"
#include "concord/core/config_problems.h"
#include "concord/core/torch_thread.h"

namespace concord::algos {
namespace {

constexpr const char* kAlgorithm = "sac";
// SAC clips no gradient: gradient_step scales by min(1, max_norm / ||g||), which is 1 here
// (max_grad_norm = 0 would zero the gradient instead).
constexpr double kNoClipping = std::numeric_limits<double>::infinity();

int64_t obs_dim_of(const nn::ActorCriticConfig& network) {
  int64_t dim = 1;
  for (int64_t size : network.obs_shape) dim *= size;
  return dim;
}

nn::SquashedGaussianActorConfig actor_config(const SacConfig& config) {
  nn::SquashedGaussianActorConfig actor{obs_dim_of(config.network),  config.network.action_dim,
                                        config.network.hidden_sizes, config.network.activation,
                                        config.network.action_low,   config.network.action_high};
  actor.use_sde = config.use_sde;
  actor.log_std_init = config.log_std_init;
  return actor;
}

nn::SoftQNetworkConfig critic_config(const SacConfig& config) {
  return {obs_dim_of(config.network), config.network.action_dim, config.network.hidden_sizes,
          config.network.activation};
}

// SAC's replay: float observations, float actions of action_dim, one-step targets. Truncation
// needs no field of its own (next_observations bootstraps it), so a step may leave it out.
ReplaySpec replay_spec(const SacConfig& config) {
  ReplaySpec spec;
  spec.owner = "Sac::observe";
  spec.observation_shape = config.network.obs_shape;
  spec.observation_dtype = at::kFloat;
  spec.action_shape = {config.network.action_dim};
  spec.capacity = config.buffer_size;
  spec.gamma = config.gamma;
  spec.require_truncated = false;
  return spec;
}

SacModel build_model(const SacConfig& config, torch::Device device) {
  SacModel model(actor_config(config), critic_config(config));
  model->to(device);
  return model;
}

SacTargets build_targets(const SacConfig& config, torch::Device device) {
  SacTargets targets(critic_config(config));
  targets->to(device);
  return targets;
}

// The slice of the flat buffer that holds `parameters`, which must lie next to each other in it in
// this order.
at::Tensor slice_of(const nn::FlatParameters& flat, const std::vector<at::Tensor>& parameters, const char* what) {
  const std::vector<at::Tensor>& all = flat.parameters();
  size_t first = 0;
  while (first < all.size() && !all[first].is_same(parameters.front())) ++first;
  int64_t numel = 0;
  for (size_t i = 0; i < parameters.size(); ++i) {
    if (first + i >= all.size() || !all[first + i].is_same(parameters[i])) {
      throw std::logic_error(std::string("Sac: the ") + what + " parameters are not contiguous in the flat buffer");
    }
    numel += parameters[i].numel();
  }
  return flat.values().narrow(0, flat.offset(first), numel);
}

// The slice of the flat buffer that holds qf1's then qf2's parameters (contiguous: they are the
// model's last submodules), in the order of the targets' own flat buffer.
at::Tensor critic_slice(const nn::FlatParameters& flat, const SacModel& model) {
  std::vector<at::Tensor> critics = model->qf1->parameters();
  for (const at::Tensor& parameter : model->qf2->parameters()) critics.push_back(parameter);
  return slice_of(flat, critics, "critics'");
}

// A SacActor over its own clone of the policy network. assign() takes the learner's whole flat
// buffer (actor, critics, log alpha) and copies the policy's slice, at `offset`, into the clone.
class SacActorReplica final : public ActorReplica {
 public:
  SacActorReplica(const SacModel& model, const nn::FlatParameters& flat, const SacConfig& config)
      : policy_(std::dynamic_pointer_cast<nn::SquashedGaussianActorImpl>(model->actor->clone())),
        parameters_(*policy_),
        learner_numel_(flat.numel()),
        actor_(policy_, config.learning_starts, config.train_frequency, config.sde_sample_freq) {
    const at::Tensor slice = slice_of(flat, model->actor->parameters(), "actor's");
    offset_ = slice.storage_offset() - flat.values().storage_offset();
    if (slice.numel() != parameters_.numel()) throw std::logic_error("Sac: the actor replica does not match the actor");
  }

  ActorOutput act(const ActorInput& input, const ActingContext& context) override { return actor_.act(input, context); }

  void assign(const at::Tensor& flat_values) override {
    if (flat_values.numel() != learner_numel_) {
      throw std::invalid_argument("Sac actor replica: assign() got " + std::to_string(flat_values.numel()) +
                                  " values, the learner's flat buffer has " + std::to_string(learner_numel_));
    }
    c10::NoGradGuard no_grad;
    parameters_.values().copy_(flat_values.detach().reshape({-1}).narrow(0, offset_, parameters_.numel()));
  }

 private:
  nn::SquashedGaussianActor policy_;
  nn::FlatParameters parameters_;
  int64_t learner_numel_;
  int64_t offset_ = 0;
  SacActor actor_;
};

}  // namespace

const core::ConfigFields<SacConfig>& SacConfig::fields() {
  static const core::ConfigFields<SacConfig> kFields = {
      {"buffer_size", &SacConfig::buffer_size, "Replay capacity, in transitions"},
      {"gamma", &SacConfig::gamma, "Discount factor"},
      {"tau", &SacConfig::tau, "Target smoothing coefficient: target = tau * Q + (1 - tau) * target"},
      {"batch_size", &SacConfig::batch_size, "Transitions sampled from the replay per gradient step"},
      {"learning_starts", &SacConfig::learning_starts,
       "Env steps (over all envs) of uniformly random actions before the first update"},
      {"policy_lr", &SacConfig::policy_lr, "Adam step size of the actor"},
      {"q_lr", &SacConfig::q_lr, "Adam step size of the critics and of log alpha"},
      {"policy_frequency", &SacConfig::policy_frequency,
       "Update the actor (and alpha) every this many gradient steps, this many times (delayed update)"},
      {"target_network_frequency", &SacConfig::target_network_frequency,
       "Gradient steps between soft updates of the target critics"},
      {"alpha", &SacConfig::alpha, "Entropy coefficient when autotune is off"},
      {"autotune", &SacConfig::autotune, "Learn the entropy coefficient towards entropy -action_dim"},
      {"train_frequency", &SacConfig::train_frequency, "Env steps (over all envs) between updates"},
      {"gradient_steps", &SacConfig::gradient_steps, "Gradient steps per update"},
      {"checkpoint_replay", &SacConfig::checkpoint_replay, "Save the replay buffer in checkpoints"},
      {"use_sde", &SacConfig::use_sde,
       "Generalised state-dependent exploration (gSDE) instead of a state-dependent log std head"},
      {"log_std_init", &SacConfig::log_std_init, "gSDE: initial log std of the exploration matrix's elements"},
      {"sde_sample_freq", &SacConfig::sde_sample_freq,
       "gSDE: env steps between new exploration noise while acting (-1: once per train_frequency steps)"},
  };
  return kFields;
}

void SacConfig::validate() const {
  if (network.action_kind != nn::ActionKind::kContinuous) {
    throw std::invalid_argument("SAC needs a continuous (Box) action space; this one is discrete (" +
                                std::to_string(network.action_dim) + " actions)");
  }
  if (network.torso != "mlp" || network.shared_torso || network.normalize_observations) {
    throw std::invalid_argument(
        "SAC builds separate MLP networks on raw observations: algo.torso=\"" + network.torso +
        "\", algo.shared_torso=" + (network.shared_torso ? "true" : "false") + " and algo.normalize_observations=" +
        (network.normalize_observations ? "true" : "false") + " must be \"mlp\", false and false");
  }
  if (!network.orthogonal_init) {
    throw std::invalid_argument(
        "SAC: orthogonal_init = false asks for PyTorch's default initialisation, which SAC's networks always have "
        "(CleanRL's sac_continuous_action.py; set algo.orthogonal_init = true)");
  }
  network.validate();
  core::ConfigProblems problems;
  problems.check(buffer_size >= 1, "buffer_size", buffer_size, ">= 1");
  problems.check(gamma >= 0.0 && gamma <= 1.0, "gamma", gamma, "in [0, 1]");
  problems.check(tau > 0.0 && tau <= 1.0, "tau", tau, "in (0, 1]");
  problems.check(batch_size >= 1 && batch_size <= buffer_size, "batch_size", batch_size, ">= 1 and <= buffer_size");
  problems.check(learning_starts >= 0, "learning_starts", learning_starts, ">= 0");
  problems.check(policy_lr > 0.0, "policy_lr", policy_lr, "> 0");
  problems.check(q_lr > 0.0, "q_lr", q_lr, "> 0");
  problems.check(policy_frequency >= 1, "policy_frequency", policy_frequency, ">= 1");
  problems.check(target_network_frequency >= 1, "target_network_frequency", target_network_frequency, ">= 1");
  problems.check(alpha >= 0.0, "alpha", alpha, ">= 0");
  problems.check(train_frequency >= 1, "train_frequency", train_frequency, ">= 1");
  problems.check(gradient_steps >= 1, "gradient_steps", gradient_steps, ">= 1");
  problems.check(sde_sample_freq == -1 || sde_sample_freq >= 1, "sde_sample_freq", sde_sample_freq, "-1 or >= 1");
  problems.check(std::isfinite(log_std_init), "log_std_init", log_std_init, "finite");
  problems.check(network.recurrent.empty(), "recurrent", "\"" + network.recurrent + "\"",
                 "empty: sac learns without memory (a recurrent network runs under ppo or a2c)");
  problems.throw_if_any("SacConfig");
}

SacModelImpl::SacModelImpl(nn::SquashedGaussianActorConfig actor_config_, nn::SoftQNetworkConfig critic_config_)
    : actor_config(std::move(actor_config_)), critic_config(std::move(critic_config_)) {
  reset();
}

void SacModelImpl::reset() {
  actor = register_module("actor", nn::SquashedGaussianActor(actor_config));
  qf1 = register_module("qf1", nn::SoftQNetwork(critic_config));
  qf2 = register_module("qf2", nn::SoftQNetwork(critic_config));
  log_alpha = register_parameter("log_alpha", at::zeros({1}));
}

SacTargetsImpl::SacTargetsImpl(nn::SoftQNetworkConfig critic_config_) : critic_config(std::move(critic_config_)) {
  reset();
}

void SacTargetsImpl::reset() {
  qf1 = register_module("qf1", nn::SoftQNetwork(critic_config));
  qf2 = register_module("qf2", nn::SoftQNetwork(critic_config));
}

SacActor::SacActor(nn::SquashedGaussianActor policy, int64_t learning_starts, int64_t train_frequency,
                   int64_t sde_sample_freq)
    : policy_(std::move(policy)),
      learning_starts_(learning_starts),
      train_frequency_(std::max<int64_t>(train_frequency, 1)),
      sde_sample_freq_(sde_sample_freq) {}

ActorOutput SacActor::act(const ActorInput& input, const ActingContext& context) {
  const torch::Tensor& observations = input.observations;
  at::Tensor actions;
  if (context.deterministic) {
    actions = policy_->deterministic_action(observations);
  } else if (context.global_step >= 0 && context.global_step < learning_starts_) {
    // Uniformly random in [low, high] = bias -+ scale, to fill the replay.
    const at::Tensor& scale = policy_->action_scale();
    const at::Tensor unit =
        at::rand({observations.size(0), scale.size(0)}, core::thread_generator(scale.device()), scale.options());
    actions = policy_->action_bias() + scale * (2.0 * unit - 1.0);
  } else {
    if (policy_->config().use_sde) {
      const int64_t step = std::max<int64_t>(context.global_step, 0);
      const std::pair<int64_t, int64_t> period = {
          step / train_frequency_, sde_sample_freq_ > 0 ? step % train_frequency_ / sde_sample_freq_ : 0};
      if (period != noise_drawn_for_) {
        policy_->reset_noise(observations.size(0));
        noise_drawn_for_ = period;
      }
    }
    actions = policy_->sample(observations).action;
  }
  return {actions.detach(), {}, {}};
}

Sac::Sac(SacConfig config, torch::Device device)
    : config_(core::validated(std::move(config))),
      device_(device),
      model_(build_model(config_, device)),
      parameters_(*model_),
      targets_(build_targets(config_, device)),
      target_parameters_(*targets_),
      critic_values_(critic_slice(parameters_, model_)),
      optimizers_(make_optimizers()),
      replay_(replay_spec(config_)),
      actor_(std::make_unique<SacActor>(model_->actor, config_.learning_starts, config_.train_frequency,
                                        config_.sde_sample_freq)),
      target_entropy_(-static_cast<double>(config_.network.action_dim)) {
  if (target_parameters_.numel() != critic_values_.numel()) {
    throw std::logic_error("Sac: the target critics do not match the critics");
  }
  c10::NoGradGuard no_grad;
  target_parameters_.values().copy_(critic_values_);  // qf_target.load_state_dict(qf.state_dict())
}

std::unique_ptr<ActorReplica> Sac::make_actor_replica() {
  return std::make_unique<SacActorReplica>(model_, parameters_, config_);
}

Sac::Optimizers Sac::make_optimizers() const {
  std::vector<at::Tensor> critics = model_->qf1->parameters();
  for (const at::Tensor& parameter : model_->qf2->parameters()) critics.push_back(parameter);
  Optimizers optimizers;
  optimizers.actor =
      std::make_unique<torch::optim::Adam>(model_->actor->parameters(), torch::optim::AdamOptions(config_.policy_lr));
  optimizers.q = std::make_unique<torch::optim::Adam>(critics, torch::optim::AdamOptions(config_.q_lr));
  optimizers.alpha = std::make_unique<torch::optim::Adam>(std::vector<at::Tensor>{model_->log_alpha},
                                                          torch::optim::AdamOptions(config_.q_lr));
  return optimizers;
}

void Sac::observe(const TensorMap& step, int stream) { replay_.add(step, stream); }

double Sac::alpha() const { return config_.autotune ? model_->log_alpha.detach().exp().item<double>() : config_.alpha; }

at::Tensor Sac::alpha_tensor() const {
  return config_.autotune ? model_->log_alpha.detach().exp()
                          : at::full({1}, config_.alpha, model_->log_alpha.options().requires_grad(false));
}

void Sac::step(const at::Tensor& loss, torch::optim::Optimizer& optimizer) {
  gradient_step(loss, parameters_, optimizer, kNoClipping, sync_strategy());
}

at::Tensor Sac::soft_q_target(const at::Tensor& returns, const at::Tensor& discounts,
                              const at::Tensor& bootstrap_observations) {
  c10::NoGradGuard no_grad;
  const nn::SquashedSample next = model_->actor->sample(bootstrap_observations);
  const at::Tensor min_qf_next_target =
      at::min(targets_->qf1(bootstrap_observations, next.action), targets_->qf2(bootstrap_observations, next.action)) -
      alpha_tensor() * next.log_prob;
  const at::Tensor g = returns.to(device_, at::kFloat).reshape(-1);
  const at::Tensor discount = discounts.to(device_, at::kFloat).reshape(-1);
  // CleanRL's r + (1 - d) * gamma * target, with (1 - d) * gamma stored as the discount.
  return g + discount * min_qf_next_target;
}

Metrics Sac::update(int64_t /*global_step*/, double progress) {
  if (!(progress >= 0.0 && progress <= 1.0)) {
    throw std::invalid_argument("Sac::update: progress must be in [0, 1], got " + std::to_string(progress));
  }
  if (replay_.size() < config_.batch_size) return {};

  at::Tensor qf1_loss, qf2_loss, qf_values;
  for (int64_t g = 0; g < config_.gradient_steps; ++g) {
    const TensorMap data = to_device(replay_.sample(config_.batch_size).fields, device_);
    // gSDE: log_std may have changed since the last draw (SB3 draws anew every gradient step).
    if (config_.use_sde) model_->actor->reset_noise();
    const at::Tensor& observations = data.at(replay_field::kObservation);
    const at::Tensor& actions = data.at(replay_field::kAction);

    // Soft policy evaluation: both critics regress on the soft Bellman target.
    const at::Tensor next_q_value = soft_q_target(data.at(replay_field::kReturn), data.at(replay_field::kDiscount),
                                                  data.at(replay_field::kBootstrapObservation));
    const at::Tensor qf1_a_values = model_->qf1(observations, actions);
    const at::Tensor qf2_a_values = model_->qf2(observations, actions);
    qf1_loss = at::mse_loss(qf1_a_values, next_q_value);
    qf2_loss = at::mse_loss(qf2_a_values, next_q_value);
    step(qf1_loss + qf2_loss, *optimizers_.q);
    qf_values = (qf1_a_values.detach().mean() + qf2_a_values.detach().mean()) / 2.0;
    ++gradient_steps_;

    // Soft policy improvement, delayed as TD3 (policy_frequency updates every policy_frequency steps).
    if (gradient_steps_ % config_.policy_frequency == 0) {
      for (int64_t i = 0; i < config_.policy_frequency; ++i) {
        const nn::SquashedSample pi = model_->actor->sample(observations);
        const at::Tensor min_qf_pi = at::min(model_->qf1->forward_frozen(observations, pi.action),
                                             model_->qf2->forward_frozen(observations, pi.action));
        const at::Tensor actor_loss = (alpha_tensor() * pi.log_prob - min_qf_pi).mean();
        step(actor_loss, *optimizers_.actor);
        last_actor_loss_ = actor_loss.detach();

        // Automatic entropy tuning: alpha rises while the policy's entropy is below the target.
        if (config_.autotune) {
          at::Tensor log_pi;
          {
            c10::NoGradGuard no_grad;
            log_pi = model_->actor->sample(observations).log_prob;
          }
          const at::Tensor alpha_loss = (-model_->log_alpha.exp() * (log_pi + target_entropy_)).mean();
          step(alpha_loss, *optimizers_.alpha);
          last_alpha_loss_ = alpha_loss.detach();
        }
      }
    }

    // Target smoothing.
    if (gradient_steps_ % config_.target_network_frequency == 0) {
      c10::NoGradGuard no_grad;
      const at::Tensor& target = target_parameters_.values();
      target.copy_(config_.tau * critic_values_ + (1.0 - config_.tau) * target);
    }
  }
  ++updates_;

  // One read from the device for every metric.
  std::vector<std::string> names = {"losses/qf1_loss", "losses/qf2_loss", "losses/qf_values", "losses/alpha"};
  std::vector<at::Tensor> values = {qf1_loss.detach(), qf2_loss.detach(), qf_values, alpha_tensor().reshape({})};
  if (last_actor_loss_.defined()) {
    names.emplace_back("losses/actor_loss");
    values.push_back(last_actor_loss_);
  }
  if (last_alpha_loss_.defined()) {
    names.emplace_back("losses/alpha_loss");
    values.push_back(last_alpha_loss_);
  }
  const at::Tensor read = at::stack(values).to(at::kCPU, at::kDouble);
  Metrics metrics;
  for (size_t i = 0; i < names.size(); ++i) metrics[names[i]] = read[static_cast<int64_t>(i)].item<double>();
  return metrics;
}

void Sac::save(core::Checkpoint& checkpoint) const {
  save_module(checkpoint, "model/", *model_);
  save_module(checkpoint, "target/", *targets_);
  save_optimizer(checkpoint, "optimizer/actor", *optimizers_.actor);
  save_optimizer(checkpoint, "optimizer/q", *optimizers_.q);
  save_optimizer(checkpoint, "optimizer/alpha", *optimizers_.alpha);
  replay_.save(checkpoint, config_.checkpoint_replay);
  checkpoint.metadata["algorithm"] = kAlgorithm;
  checkpoint.metadata["updates"] = updates_;
  checkpoint.metadata["gradient_steps"] = gradient_steps_;
}

void Sac::load(const core::Checkpoint& checkpoint) {
  // Check everything first.
  check_algorithm(checkpoint, kAlgorithm);
  const int64_t updates = core::metadata_int(checkpoint, "updates");
  const int64_t gradient_steps = core::metadata_int(checkpoint, "gradient_steps");
  check_module(checkpoint, "model/", *model_);
  check_module(checkpoint, "target/", *targets_);
  for (const auto& buffer : model_->named_buffers()) {
    const at::Tensor& saved = checkpoint.tensors.at("model/" + buffer.key());
    if (!at::equal(saved.to(at::kCPU, at::kFloat), buffer.value().to(at::kCPU, at::kFloat))) {
      core::checkpoint_corrupt("tensor 'model/" + buffer.key() +
                               "' differs: the checkpoint was trained for other action bounds");
    }
  }
  const std::pair<const char*, torch::optim::Optimizer*> optimizers[] = {{"optimizer/actor", optimizers_.actor.get()},
                                                                         {"optimizer/q", optimizers_.q.get()},
                                                                         {"optimizer/alpha", optimizers_.alpha.get()}};
  const Optimizers scratch = make_optimizers();
  check_optimizer(checkpoint, "optimizer/actor", *scratch.actor, device_);
  check_optimizer(checkpoint, "optimizer/q", *scratch.q, device_);
  check_optimizer(checkpoint, "optimizer/alpha", *scratch.alpha, device_);
  Replay::Saved replay = replay_.read(checkpoint, /*accept_contents=*/true);

  // Then change everything.
  load_module(checkpoint, "model/", *model_);
  load_module(checkpoint, "target/", *targets_);
  for (const auto& [name, optimizer] : optimizers) load_optimizer(checkpoint, name, *optimizer, device_);
  replay_.restore(std::move(replay), /*keep_unsaved_contents=*/true);
  updates_ = updates;
  gradient_steps_ = gradient_steps;
  last_actor_loss_ = at::Tensor();
  last_alpha_loss_ = at::Tensor();
}

}  // namespace concord::algos
