#include "concord/algos/dqn.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Reduction.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/where.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>
#include <torch/optim/adam.h>
#include <torch/optim/rmsprop.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "concord/algos/fused_td_loss.h"
#include "concord/algos/gradient_step.h"
#include "concord/algos/module_checkpoint.h"
#include "concord/algos/shared_optimizer_state.h"
#include "concord/algos/tensor_checks.h"
#include "concord/core/checkpoint_fields.h"
#include "concord/core/config_problems.h"
#include "concord/core/rng.h"
#include "concord/core/torch_thread.h"

namespace concord::algos {
namespace {

constexpr const char* kAlgorithm = "dqn";
constexpr const char* kModelPrefix = "model/";
constexpr const char* kTargetPrefix = "target/";
constexpr const char* kOptimizerTensor = "optimizer";

// The one-line refusal of a continuous action space, then the config's own checks.
DqnConfig checked(DqnConfig config) {
  if (config.network.action_kind != nn::ActionKind::kDiscrete) {
    throw std::invalid_argument("dqn: needs a discrete action space (Discrete(n)), got continuous actions of " +
                                std::to_string(config.network.action_dim) + " dimension(s)");
  }
  config.validate();
  return config;
}

nn::QNetworkConfig q_network_config(const DqnConfig& config) { return {config.network, config.dueling}; }

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const DqnConfig& config, const nn::FlatParameters& parameters) {
  const std::vector<at::Tensor> values{parameters.values()};
  if (config.optimizer == "rmsprop") {
    return std::make_unique<torch::optim::RMSprop>(values, torch::optim::RMSpropOptions(config.learning_rate)
                                                               .alpha(config.rmsprop_alpha)
                                                               .eps(config.rmsprop_eps)
                                                               .centered(config.rmsprop_centered)
                                                               .momentum(config.rmsprop_momentum));
  }
  return std::make_unique<torch::optim::Adam>(values,
                                              torch::optim::AdamOptions(config.learning_rate).eps(config.adam_eps));
}

// DQN's replay: env-dtype observations (uint8 grids stay uint8), action indices, its n-step
// return and, prioritised, Ape-X's initial priorities.
ReplaySpec replay_spec(const DqnConfig& config) {
  ReplaySpec spec;
  spec.owner = "Dqn::observe";
  spec.observation_shape = config.network.obs_shape;
  spec.num_actions = config.network.action_dim;
  spec.capacity = config.buffer_size;
  spec.n_step = config.n_step;
  spec.gamma = config.gamma;
  spec.prioritized = config.prioritized;
  spec.priority_alpha = config.priority_alpha;
  spec.priority_eps = config.priority_eps;
  return spec;
}

// R2D2's replay of sequences, holding buffer_size transitions' worth of them.
SequenceReplaySpec sequence_replay_spec(const DqnConfig& config, const nn::QNetworkImpl& network) {
  SequenceReplaySpec spec;
  spec.owner = "Dqn::observe";
  spec.observation_shape = config.network.obs_shape;
  spec.num_actions = config.network.action_dim;
  for (const auto& [name, tensor] : network.initial_state(1)) spec.state_shapes[name] = {tensor.size(1)};
  spec.burn_in = config.burn_in;
  spec.trace = config.sequence_length;
  spec.n_step = config.n_step;
  spec.capacity = std::max<int64_t>(1, config.buffer_size / config.sequence_length);
  spec.prioritized = config.prioritized;
  spec.priority_alpha = config.priority_alpha;
  return spec;
}

}  // namespace

// ---- config ----

const core::ConfigFields<DqnConfig>& DqnConfig::fields() {
  static const core::ConfigFields<DqnConfig> kFields = {
      {"learning_rate", &DqnConfig::learning_rate, "Optimiser step size"},
      {"buffer_size", &DqnConfig::buffer_size, "Replay capacity in transitions"},
      {"gamma", &DqnConfig::gamma, "Discount factor"},
      {"tau", &DqnConfig::tau, "Target update rate: target = tau * online + (1 - tau) * target (1 = copy)"},
      {"target_network_frequency", &DqnConfig::target_network_frequency,
       "Environment steps (over all envs) between target-network updates"},
      {"batch_size", &DqnConfig::batch_size, "Transitions per gradient step"},
      {"start_e", &DqnConfig::start_e, "Epsilon at the start of its decay"},
      {"end_e", &DqnConfig::end_e, "Epsilon after its decay, and when acting after training"},
      {"exploration_fraction", &DqnConfig::exploration_fraction,
       "Epsilon decay length as a fraction of the total steps (when exploration_steps = 0)"},
      {"exploration_steps", &DqnConfig::exploration_steps,
       "Epsilon decay length in environment steps; 0 = exploration_fraction of the total"},
      {"decay_after_learning_starts", &DqnConfig::decay_after_learning_starts,
       "MinAtar's schedule: uniformly random actions until learning_starts, the decay from there (false: "
       "CleanRL's, decaying from step 0)"},
      {"learning_starts", &DqnConfig::learning_starts, "Environment steps before the first update"},
      {"train_frequency", &DqnConfig::train_frequency, "Environment steps (over all envs) between updates"},
      {"gradient_steps", &DqnConfig::gradient_steps, "Gradient steps per update"},
      {"optimizer", &DqnConfig::optimizer, "adam or rmsprop"},
      {"optimizer_eps", &DqnConfig::adam_eps, "Adam epsilon", "adam_eps"},
      {"rmsprop_alpha", &DqnConfig::rmsprop_alpha, "RMSprop smoothing constant of the squared gradients"},
      {"rmsprop_eps", &DqnConfig::rmsprop_eps, "RMSprop epsilon"},
      {"rmsprop_centered", &DqnConfig::rmsprop_centered, "Centered RMSprop (normalise by the gradient's variance)"},
      {"rmsprop_momentum", &DqnConfig::rmsprop_momentum, "RMSprop momentum"},
      {"loss", &DqnConfig::loss, "TD loss: mse (CleanRL) or huber (smooth L1, MinAtar)"},
      {"max_grad_norm", &DqnConfig::max_grad_norm, "Gradient-norm clipping threshold; 0 = no clipping"},
      {"double_dqn", &DqnConfig::double_dqn,
       "Double DQN: the online network picks the next action, the target network evaluates it"},
      {"dueling", &DqnConfig::dueling, "Dueling network: Q = V + A - mean(A)"},
      {"n_step", &DqnConfig::n_step, "n of the n-step return (stops at episode ends)"},
      {"prioritized", &DqnConfig::prioritized, "Proportional prioritised replay"},
      {"priority_alpha", &DqnConfig::priority_alpha, "Prioritised replay: priority exponent alpha"},
      {"priority_beta0", &DqnConfig::priority_beta0,
       "Prioritised replay: importance exponent beta at the start, annealed linearly to 1 over training"},
      {"priority_eps", &DqnConfig::priority_eps, "Prioritised replay: priority = |TD error| + priority_eps"},
      {"checkpoint_replay", &DqnConfig::checkpoint_replay,
       "Save the replay in checkpoints and restore it on resume (false: a resumed run refills an empty replay)"},
      {"sequence_length", &DqnConfig::sequence_length,
       "With algo.recurrent (R2D2): steps learned from per stored sequence; batch_size then counts sequences"},
      {"burn_in", &DqnConfig::burn_in,
       "With algo.recurrent (R2D2): steps re-run before a sequence's learned ones to warm its state"},
      {"priority_eta", &DqnConfig::priority_eta,
       "With algo.recurrent (R2D2), prioritised: a sequence's priority is eta max |td| + (1 - eta) mean |td|"},
      {"value_rescaling", &DqnConfig::value_rescaling,
       "With algo.recurrent (R2D2): learn h(Q), h(x) = sign(x)(sqrt(|x| + 1) - 1) + 0.001 x, with h^-1 in the "
       "target"},
  };
  return kFields;
}

void DqnConfig::validate() const {
  core::ConfigProblems problems;
  problems.check(learning_rate > 0.0, "learning_rate", learning_rate, "> 0");
  problems.check(buffer_size >= 1, "buffer_size", buffer_size, ">= 1");
  problems.check(gamma >= 0.0 && gamma <= 1.0, "gamma", gamma, "in [0, 1]");
  problems.check(tau > 0.0 && tau <= 1.0, "tau", tau, "in (0, 1]");
  problems.check(target_network_frequency >= 1, "target_network_frequency", target_network_frequency, ">= 1");
  problems.check(batch_size >= 1 && batch_size <= buffer_size, "batch_size", batch_size, ">= 1 and <= buffer_size");
  problems.check(start_e >= 0.0 && start_e <= 1.0, "start_e", start_e, "in [0, 1]");
  problems.check(end_e >= 0.0 && end_e <= start_e, "end_e", end_e, "in [0, start_e]");
  problems.check(exploration_fraction >= 0.0 && exploration_fraction <= 1.0, "exploration_fraction",
                 exploration_fraction, "in [0, 1]");
  problems.check(exploration_steps >= 0, "exploration_steps", exploration_steps, ">= 0 (0 = exploration_fraction)");
  problems.check(learning_starts >= 0, "learning_starts", learning_starts, ">= 0");
  problems.check(train_frequency >= 1, "train_frequency", train_frequency, ">= 1");
  problems.check(gradient_steps >= 1, "gradient_steps", gradient_steps, ">= 1");
  problems.check(optimizer == "adam" || optimizer == "rmsprop", "optimizer", "\"" + optimizer + "\"",
                 "\"adam\" or \"rmsprop\"");
  problems.check(adam_eps > 0.0, "optimizer_eps", adam_eps, "> 0");
  problems.check(rmsprop_alpha >= 0.0 && rmsprop_alpha < 1.0, "rmsprop_alpha", rmsprop_alpha, "in [0, 1)");
  problems.check(rmsprop_eps > 0.0, "rmsprop_eps", rmsprop_eps, "> 0");
  problems.check(rmsprop_momentum >= 0.0, "rmsprop_momentum", rmsprop_momentum, ">= 0");
  problems.check(loss == "mse" || loss == "huber", "loss", "\"" + loss + "\"", "\"mse\" or \"huber\"");
  problems.check(max_grad_norm >= 0.0, "max_grad_norm", max_grad_norm, ">= 0 (0 = no clipping)");
  problems.check(n_step >= 1, "n_step", n_step, ">= 1");
  problems.check(priority_alpha >= 0.0 && std::isfinite(priority_alpha), "priority_alpha", priority_alpha,
                 "finite and >= 0");
  problems.check(priority_beta0 >= 0.0 && priority_beta0 <= 1.0, "priority_beta0", priority_beta0, "in [0, 1]");
  problems.check(priority_eps > 0.0, "priority_eps", priority_eps, "> 0");
  const DqnConfig defaults;
  problems.check(sequence_length >= 1 && sequence_length <= 100000, "sequence_length", sequence_length,
                 "in [1, 100000]");
  problems.check(burn_in >= 0 && burn_in <= sequence_length, "burn_in", burn_in, "in [0, sequence_length]");
  problems.check(priority_eta >= 0.0 && priority_eta <= 1.0, "priority_eta", priority_eta, "in [0, 1]");
  const bool recurrent = !network.recurrent.empty();
  problems.check_applies(recurrent, "sequence_length", sequence_length, defaults.sequence_length,
                         "a recurrent network (algo.recurrent, R2D2's sequence replay), and there is none");
  problems.check_applies(recurrent, "burn_in", burn_in, defaults.burn_in,
                         "a recurrent network (algo.recurrent, R2D2's sequence replay), and there is none");
  problems.check_applies(recurrent, "value_rescaling", value_rescaling, defaults.value_rescaling,
                         "a recurrent network (algo.recurrent, R2D2's sequence replay), and there is none");
  if (recurrent) {
    // Sequences, not transitions: the replay holds buffer_size / sequence_length of them.
    if (batch_size > buffer_size / sequence_length) {
      problems.add("batch_size=" + std::to_string(batch_size) + " must be <= buffer_size / sequence_length (" +
                   std::to_string(buffer_size / sequence_length) + " sequences) with algo.recurrent");
    }
    problems.check(!checkpoint_replay, "checkpoint_replay", "true",
                   "false with algo.recurrent: R2D2's sequence replay is not saved (a resumed run refills it)");
  }
  problems.throw_if_any("algo.dqn config");
}

// ---- acting: epsilon-greedy ----

double dqn_epsilon(const DqnConfig& config, const ActingContext& context) {
  if (context.deterministic) return 0.0;
  if (context.global_step < 0) return config.end_e;
  if (context.epsilon >= 0.0) return context.epsilon;
  const double duration = config.exploration_steps > 0
                              ? static_cast<double>(config.exploration_steps)
                              : config.exploration_fraction * static_cast<double>(context.total_steps);
  const double t = static_cast<double>(context.global_step);
  if (config.decay_after_learning_starts) {
    // MinAtar's dqn.py: a uniformly random policy before learning starts, then epsilon from
    // start_e down to end_e over `duration` steps.
    if (context.global_step < config.learning_starts) return 1.0;
    const double since = t - static_cast<double>(config.learning_starts);
    if (duration <= 0.0 || since >= duration) return config.end_e;
    return ((config.end_e - config.start_e) / duration) * since + config.start_e;
  }
  // CleanRL's linear_schedule(start_e, end_e, duration, t).
  if (duration <= 0.0) return config.end_e;
  const double slope = (config.end_e - config.start_e) / duration;
  return std::max(slope * t + config.start_e, config.end_e);
}

// Both in the form sqrt(1 + z) - 1 = z / (sqrt(1 + z) + 1), which loses no digits to cancellation
// (the textbook h^-1 divides a difference of nearly equal floats by 2 eps: 1e-5 off in float).
at::Tensor value_rescale(const at::Tensor& x, double eps) {
  const at::Tensor magnitude = x.abs();
  return x.sign() * magnitude / ((magnitude + 1.0).sqrt() + 1.0) + eps * x;
}

at::Tensor value_unrescale(const at::Tensor& x, double eps) {
  const at::Tensor shifted = x.abs() + (1.0 + eps);  // |x| + 1 + eps
  const at::Tensor root = 2.0 * shifted / ((1.0 + 4.0 * eps * shifted).sqrt() + 1.0);
  return x.sign() * (root.square() - 1.0);
}

EpsilonGreedyActor::EpsilonGreedyActor(nn::QNetwork network, DqnConfig config)
    : network_(std::move(network)), config_(std::move(config)) {}

Metrics EpsilonGreedyActor::exploration(const ActingContext& context) const {
  return {{"charts/epsilon", dqn_epsilon(config_, context)}};
}

ActorOutput EpsilonGreedyActor::act(const ActorInput& input, const ActingContext& context) {
  const torch::Tensor& observations = input.observations;
  const double epsilon = dqn_epsilon(config_, context);
  const int64_t rows = observations.size(0);
  const int64_t actions = network_->num_actions();
  const at::TensorOptions options = network_->parameters().front().options().requires_grad(false);
  const auto generator = core::thread_generator(options.device());
  if (network_->recurrent()) {
    // With memory the network runs at every step, exploring or not: the state must follow each
    // env's history. A coin per row, then a uniform action where it says to explore.
    ActorOutput out;
    out.state = input.state;
    const at::Tensor greedy = network_->step(observations, input.episode_starts, out.state).argmax(/*dim=*/1);
    if (epsilon <= 0.0) {
      out.actions = greedy;
      return out;
    }
    const at::Tensor explore = at::rand({rows}, generator, options.dtype(at::kFloat)) < epsilon;
    const at::Tensor random_actions = at::randint(actions, {rows}, generator, options.dtype(at::kLong));
    out.actions = at::where(explore, random_actions, greedy);
    return out;
  }
  if (!options.device().is_cpu()) {
    // On an accelerator, every row's draws at once on the device, and the forward pass for all.
    if (epsilon >= 1.0) return {at::randint(actions, {rows}, generator, options.dtype(at::kLong)), {}, {}};
    const at::Tensor greedy = network_->forward(observations).argmax(/*dim=*/1);
    if (epsilon <= 0.0) return {greedy, {}, {}};
    const at::Tensor random_actions = at::randint(actions, {rows}, generator, options.dtype(at::kLong));
    const at::Tensor explore = at::rand({rows}, generator, options.dtype(at::kFloat)) < epsilon;
    return {at::where(explore, random_actions, greedy), {}, {}};
  }
  if (epsilon <= 0.0) return {network_->forward(observations).argmax(/*dim=*/1), {}, {}};
  // On the host, as dqn.py acts: a coin per row (env) first, and the forward pass only if some
  // row acts greedily. The draws come from the same LibTorch generator (thread_generator's, or
  // the global one that torch::manual_seed seeds), taken without a tensor operation per draw.
  at::Tensor chosen = at::empty({rows}, options.dtype(at::kLong));
  int64_t* action_of = chosen.data_ptr<int64_t>();
  std::vector<char> greedy_rows(static_cast<size_t>(rows), 0);
  bool any_greedy = false;
  {
    at::Generator source = generator.has_value() ? *generator : at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(source.mutex());
    auto* draws = at::check_generator<at::CPUGeneratorImpl>(source);
    for (int64_t b = 0; b < rows; ++b) {
      // A uniform double in [0, 1) from 53 bits, and a uniform action by multiply-shift.
      const bool explore = epsilon >= 1.0 || static_cast<double>(draws->random64() >> 11) * 0x1.0p-53 < epsilon;
      if (explore) {
        action_of[b] = static_cast<int64_t>(((draws->random64() >> 32) * static_cast<uint64_t>(actions)) >> 32);
      } else {
        greedy_rows[static_cast<size_t>(b)] = 1;
        any_greedy = true;
      }
    }
  }
  if (any_greedy) {
    const at::Tensor greedy = network_->forward(observations).argmax(/*dim=*/1).contiguous();
    const int64_t* greedy_action = greedy.data_ptr<int64_t>();
    for (int64_t b = 0; b < rows; ++b) {
      if (greedy_rows[static_cast<size_t>(b)] != 0) action_of[b] = greedy_action[b];
    }
  }
  return {chosen, {}, {}};
}

// ---- an actor over a copy of the online network ----

namespace {

// An EpsilonGreedyActor over its own clone of the online network (and the flat buffer over the
// clone that assign() overwrites in one copy).
class DqnActorReplica final : public ActorReplica {
 public:
  DqnActorReplica(const nn::QNetwork& online, const DqnConfig& config)
      : network_(std::dynamic_pointer_cast<nn::QNetworkImpl>(online->clone())),
        parameters_(*network_),
        actor_(network_, config),
        // A recurrent network's Q needs each step's state: its sequences enter at the maximum.
        gives_priority_inputs_(config.prioritized && !network_->recurrent()) {
    if (network_->recurrent()) {
      for (const auto& entry : network_->initial_state(1))
        state_fields_.push_back(kTransitionStatePrefix + entry.first);
    }
  }

  ActorOutput act(const ActorInput& input, const ActingContext& context) override { return actor_.act(input, context); }
  Metrics exploration(const ActingContext& context) const override { return actor_.exploration(context); }

  void assign(const at::Tensor& flat_values) override {
    if (flat_values.numel() != parameters_.numel()) {
      throw std::invalid_argument("Dqn actor replica: assign() got " + std::to_string(flat_values.numel()) +
                                  " values, the network has " + std::to_string(parameters_.numel()));
    }
    c10::NoGradGuard no_grad;
    parameters_.values().copy_(flat_values.detach().reshape({-1}));
  }

  // Ape-X's initial priorities: this replica's estimates of Q(o, a) and max_a Q(o', a), its
  // network standing in for both online and target network (the actors have no target copy).
  // observe() completes the TD error for the learner's one-step or n-step target.
  std::vector<std::string> priority_input_fields() const override {
    if (!gives_priority_inputs_) return {};
    return {transition::kActingQ, transition::kActingNextValue};
  }
  std::vector<std::string> state_fields() const override { return state_fields_; }

  TensorMap priority_inputs(const TensorMap& transitions) override {
    if (!gives_priority_inputs_) return {};
    c10::NoGradGuard no_grad;
    const torch::Device device = parameters_.values().device();
    const at::Tensor q_taken =
        network_->forward(on_device(transitions.at(transition::kObservations), device))
            .gather(1, on_device(transitions.at(transition::kActions), device).to(at::kLong).unsqueeze(1))
            .squeeze(1);
    const at::Tensor next_value =
        std::get<0>(network_->forward(on_device(transitions.at(transition::kNextObservations), device)).max(1));
    return {{transition::kActingQ, q_taken.to(at::kCPU, at::kFloat)},
            {transition::kActingNextValue, next_value.to(at::kCPU, at::kFloat)}};
  }

 private:
  nn::QNetwork network_;
  nn::FlatParameters parameters_;
  EpsilonGreedyActor actor_;
  bool gives_priority_inputs_;
  std::vector<std::string> state_fields_;
};

}  // namespace

// ---- the learner ----

Dqn::Dqn(DqnConfig config, torch::Device device)
    : config_(checked(std::move(config))),
      device_(device),
      online_(nn::build_q_network(q_network_config(config_), device)),
      parameters_(*online_),
      target_(nn::build_q_network(q_network_config(config_), device)),
      target_parameters_(*target_),
      optimizer_(make_optimizer(config_, parameters_)),
      actor_(online_, config_),
      replay_(replay_spec(config_)),
      // The target starts as the online network: every multiple of the target period up to
      // learning_starts (when no update has happened yet) counts as synced.
      target_sync_step_(config_.learning_starts / config_.target_network_frequency * config_.target_network_frequency) {
  if (online_->recurrent()) sequences_ = std::make_unique<SequenceReplay>(sequence_replay_spec(config_, *online_));
  c10::NoGradGuard no_grad;
  target_parameters_.values().detach().copy_(parameters_.values().detach());
}

std::unique_ptr<ActorReplica> Dqn::make_actor_replica() { return std::make_unique<DqnActorReplica>(online_, config_); }

Dqn::Dqn(Dqn& primary, double final_epsilon)
    : config_(primary.config_),
      device_(primary.device_),
      online_(nn::build_q_network(q_network_config(config_), device_)),
      parameters_(*online_, primary.parameters_),
      target_(nn::build_q_network(q_network_config(config_), device_)),
      target_parameters_(*target_, primary.target_parameters_),
      optimizer_(make_optimizer(config_, parameters_)),
      actor_(online_,
             [&] {
               DqnConfig acting = config_;
               acting.end_e = final_epsilon;
               return acting;
             }()),
      replay_(replay_spec(config_)),
      primary_(&primary) {
  share_optimizer_state(*optimizer_, *primary.optimizer_);
}

std::unique_ptr<OffPolicyLearner> Dqn::make_shared_replica() {
  if (sequences_) {
    throw std::invalid_argument(
        "asynchronous Q-learning (policy 'hogwild') learns from single transitions, and a recurrent network "
        "(algo.recurrent) learns from R2D2's sequences: use train.policy single or sync_vector");
  }
  if (config_.prioritized) {
    throw std::invalid_argument(
        "asynchronous Q-learning (policy 'hogwild') learns every transition once, from no replay: set "
        "algo.dqn.prioritized = false");
  }
  // No replay to fill: a fresh learner's target counts as synced at step 0, not at learning_starts.
  if (updates_ == 0) target_sync_step_ = 0;
  // A3C's final epsilons, one draw per thread.
  const double u = core::uniform(replay_.generator(), 0.0, 1.0);
  const double final_epsilon = u < 0.4 ? 0.1 : (u < 0.7 ? 0.01 : 0.5);
  return std::unique_ptr<OffPolicyLearner>(new Dqn(*this, final_epsilon));
}

void Dqn::observe(const TensorMap& step, int stream) {
  if (sequences_) {
    sequences_->add(step, stream);
    return;
  }
  replay_.add(step, stream);
}

at::Tensor Dqn::td_targets(const TensorMap& batch) {
  // Inference mode, not only no-grad: its operations skip autograd's dispatch entirely (a good
  // share of a CartPole update's operations are here). The targets are inference tensors: the
  // loss reads them without saving them for backward.
  c10::InferenceMode inference;
  const at::Tensor next = on_device(batch.at(replay_field::kBootstrapObservation), device_);
  const at::Tensor q_next = target_->forward(next);
  const at::Tensor returns = on_device(batch.at(replay_field::kReturn), device_);
  const at::Tensor discounts = on_device(batch.at(replay_field::kDiscount), device_);
  if (config_.double_dqn) {
    // Double DQN: the online network chooses a*, the target network evaluates it.
    const at::Tensor best = online_->forward(next).argmax(/*dim=*/1, /*keepdim=*/true);
    return returns + discounts * q_next.gather(1, best).squeeze(1);
  }
  // a* = argmax_a Q_target(o', a): returns + discounts * max_a Q_target(o', a), in one pass.
  return max_q_targets(returns, discounts, q_next);
}

Metrics Dqn::update(int64_t global_step, double progress) {
  if (global_step < 0) {
    tensor_checks::fail("Dqn::update", "global_step must be >= 0, got " + std::to_string(global_step));
  }
  tensor_checks::check_unit_interval("Dqn::update", "progress", progress);
  if (primary_ != nullptr) return update_shared(global_step);
  if (sequences_) return update_sequences(global_step, progress);
  if (replay_.size() < config_.batch_size) return {};

  // Prioritised replay's importance exponent, annealed from beta0 to 1 over training.
  const double beta = config_.prioritized ? config_.priority_beta0 + (1.0 - config_.priority_beta0) * progress : 1.0;
  // gradient_step always clips; an infinite threshold leaves the gradient as it is.
  const double clip = config_.max_grad_norm > 0.0 ? config_.max_grad_norm : std::numeric_limits<double>::infinity();
  at::Tensor loss;
  at::Tensor q_taken;
  for (int64_t g = 0; g < config_.gradient_steps; ++g) {
    const ReplaySample sample = replay_.sample(config_.batch_size, beta);
    const TensorMap batch = to_device(sample.fields, device_);

    // y = G + discount * Q_target(o', a*), no gradient.
    const at::Tensor y = td_targets(batch);
    // loss = mean w * l(Q_online(o, a) - y) over the replayed actions (fused_td_loss.h); w are
    // prioritised replay's importance weights, which correct its sampling.
    const TdLoss td =
        fused_td_loss(online_->forward(batch.at(replay_field::kObservation)), batch.at(replay_field::kAction), y,
                      config_.prioritized ? sample.weights.to(device_) : at::Tensor(), config_.loss);
    loss = td.loss;
    q_taken = td.q_taken;
    gradient_step(loss, parameters_, *optimizer_, clip, sync_strategy());

    // New priorities: the TD errors the step was taken on.
    if (config_.prioritized) {
      const at::Tensor td_errors = (q_taken - y).abs().to(at::kCPU, at::kDouble);
      replay_.update_priorities(sample.indices, td_errors + config_.priority_eps);
    }
  }
  ++updates_;
  follow_target(global_step);

  Metrics metrics;
  metrics["losses/td_loss"] = loss.item<double>();
  metrics["losses/q_values"] = q_taken.sum().item<double>() / static_cast<double>(q_taken.size(0));
  metrics["charts/learning_rate"] = config_.learning_rate;
  if (config_.prioritized) metrics["charts/beta"] = beta;
  return metrics;
}

void Dqn::follow_target(int64_t global_step) {
  const int64_t period = config_.target_network_frequency;
  const int64_t reached = global_step / period * period;
  if (reached <= target_sync_step_) return;
  c10::NoGradGuard no_grad;
  const at::Tensor online = parameters_.values().detach();
  const at::Tensor target = target_parameters_.values().detach();
  if (config_.tau == 1.0) {
    target.copy_(online);
  } else {
    target.copy_(config_.tau * online + (1.0 - config_.tau) * target);
  }
  target_sync_step_ = reached;
}

Metrics Dqn::update_shared(int64_t global_step) {
  const TensorMap queued = replay_.take_all();
  if (queued.empty() || queued.at(replay_field::kAction).size(0) == 0) return {};
  const TensorMap batch = to_device(queued, device_);
  // y = G + discount * Q_target(o', a*) with the shared target network, no gradient.
  const at::Tensor y = td_targets(batch);
  const TdLoss td = fused_td_loss(online_->forward(batch.at(replay_field::kObservation)),
                                  batch.at(replay_field::kAction), y, at::Tensor(), config_.loss);
  const double clip = config_.max_grad_norm > 0.0 ? config_.max_grad_norm : std::numeric_limits<double>::infinity();
  // The gradient on this thread alone; the step on the shared parameters and statistics takes
  // turns with the other replicas' (gradient_step's step_lock says why).
  gradient_step(td.loss, parameters_, *optimizer_, clip, sync_strategy(), &primary_->shared_mutex_);
  {
    std::lock_guard<std::mutex> lock(primary_->shared_mutex_);
    ++primary_->updates_;
    primary_->follow_target(global_step);
  }
  Metrics metrics;
  metrics["losses/td_loss"] = td.loss.item<double>();
  metrics["losses/q_values"] = td.q_taken.sum().item<double>() / static_cast<double>(td.q_taken.size(0));
  metrics["charts/learning_rate"] = config_.learning_rate;
  return metrics;
}

Metrics Dqn::update_sequences(int64_t global_step, double progress) {
  if (sequences_->size() < config_.batch_size) return {};
  const double beta = config_.prioritized ? config_.priority_beta0 + (1.0 - config_.priority_beta0) * progress : 1.0;
  const double clip = config_.max_grad_norm > 0.0 ? config_.max_grad_norm : std::numeric_limits<double>::infinity();
  const SequenceReplaySpec& spec = sequences_->spec();
  const int64_t burn_in = spec.burn_in;
  const int64_t learned = spec.trace;
  const int64_t steps = spec.steps();
  at::Tensor loss;
  double mean_q = 0.0;
  for (int64_t g = 0; g < config_.gradient_steps; ++g) {
    const ReplaySample sample = sequences_->sample(config_.batch_size, beta);
    const TensorMap batch = to_device(sample.fields, device_);
    // Time-major, as the network unrolls: [S + 1, B, ...] and [S, B].
    const at::Tensor observations = batch.at(sequence_field::kObservations).transpose(0, 1);
    const at::Tensor starts = batch.at(sequence_field::kStarts).transpose(0, 1);
    const at::Tensor actions = batch.at(sequence_field::kActions).transpose(0, 1);
    const at::Tensor rewards = batch.at(sequence_field::kRewards).transpose(0, 1);
    const at::Tensor valid = batch.at(sequence_field::kValid).transpose(0, 1);
    const at::Tensor terminated = batch.at(sequence_field::kTerminated).transpose(0, 1);
    TensorMap stored_state;
    for (const auto& [name, shape] : spec.state_shapes) {
      stored_state[name] = batch.at(std::string(sequence_field::kStatePrefix) + name);
    }
    const at::Tensor mask = valid.narrow(0, burn_in, learned);  // [L, B]

    // y_t for the learned steps t = burn_in .. burn_in + L - 1, without gradient.
    at::Tensor y;
    {
      c10::InferenceMode inference;
      TensorMap target_state = stored_state;
      const at::Tensor q_target = target_->unroll(observations, starts, target_state);  // [S + 1, B, n]
      TensorMap online_state = stored_state;
      const at::Tensor next_action = online_->unroll(observations, starts, online_state).argmax(2);  // [S + 1, B]
      const at::TensorOptions index_options = valid.options().dtype(at::kLong);
      // The position after the episode's last step in each sequence (S where it goes on).
      const at::Tensor position = at::arange(1, steps + 1, index_options).unsqueeze(1);
      const at::Tensor end = (valid.to(at::kLong) * position).amax(0);                                  // [B]
      const at::Tensor t = at::arange(burn_in, burn_in + learned, index_options).unsqueeze(1);          // [L, 1]
      const at::Tensor bootstrap = at::maximum(at::minimum(t + spec.n_step, end.unsqueeze(0)), t + 1);  // [L, B]
      at::Tensor returns = at::zeros_like(mask);
      for (int64_t i = 0; i < spec.n_step; ++i) {
        const at::Tensor reward = rewards.narrow(0, burn_in + i, learned);
        returns =
            returns + std::pow(config_.gamma, static_cast<double>(i)) * reward * (t + i < bootstrap).to(reward.dtype());
      }
      const at::Tensor discount =
          at::pow(config_.gamma, (bootstrap - t).to(returns.dtype())) * (1.0 - terminated.gather(0, bootstrap - 1));
      const at::Tensor chosen = next_action.gather(0, bootstrap);  // a* = argmax_a Q_online(o_b, a)
      const at::Tensor q_next =
          q_target.gather(0, bootstrap.unsqueeze(2).expand({learned, bootstrap.size(1), q_target.size(2)}))
              .gather(2, chosen.unsqueeze(2))
              .squeeze(2);
      y = config_.value_rescaling ? value_rescale(returns + discount * value_unrescale(q_next))
                                  : returns + discount * q_next;
    }
    // A normal tensor, outside inference mode: the Huber loss saves its target for backward.
    const at::Tensor y_grad_free = y.clone();

    // Q_online for the learned steps, from the state the burn-in leaves (no gradient through it).
    TensorMap state = stored_state;
    if (burn_in > 0) {
      c10::NoGradGuard no_grad;
      online_->unroll(observations.narrow(0, 0, burn_in), starts.narrow(0, 0, burn_in), state);
    }
    const at::Tensor q = online_->unroll(observations.narrow(0, burn_in, learned), starts.narrow(0, burn_in, learned),
                                         state);                                                          // [L, B, n]
    const at::Tensor q_taken = q.gather(2, actions.narrow(0, burn_in, learned).unsqueeze(2)).squeeze(2);  // [L, B]
    const at::Tensor per_step = config_.loss == "huber" ? at::smooth_l1_loss(q_taken, y_grad_free, at::Reduction::None)
                                                        : (q_taken - y_grad_free).pow(2);
    const at::Tensor counts = mask.sum(0).clamp_min(1.0);               // [B]
    const at::Tensor per_sequence = (per_step * mask).sum(0) / counts;  // [B]
    const at::Tensor weights = config_.prioritized ? sample.weights.to(device_) : at::ones_like(per_sequence);
    loss = (weights * per_sequence).mean();
    gradient_step(loss, parameters_, *optimizer_, clip, sync_strategy());
    mean_q = ((q_taken.detach() * mask).sum() / mask.sum().clamp_min(1.0)).item<double>();

    if (config_.prioritized) {
      // R2D2's mixture of the sequence's largest and mean absolute TD error.
      const at::Tensor errors = (q_taken.detach() - y_grad_free).abs() * mask;
      const at::Tensor priorities = config_.priority_eta * errors.amax(0) +
                                    (1.0 - config_.priority_eta) * errors.sum(0) / counts + config_.priority_eps;
      sequences_->update_priorities(sample.indices, priorities.to(at::kCPU, at::kDouble));
    }
  }
  ++updates_;
  follow_target(global_step);

  Metrics metrics;
  metrics["losses/td_loss"] = loss.item<double>();
  metrics["losses/q_values"] = mean_q;
  metrics["charts/learning_rate"] = config_.learning_rate;
  if (config_.prioritized) metrics["charts/beta"] = beta;
  return metrics;
}

// ---- checkpoints ----

void Dqn::save(core::Checkpoint& checkpoint) const {
  save_module(checkpoint, kModelPrefix, *online_);
  save_module(checkpoint, kTargetPrefix, *target_);
  save_optimizer(checkpoint, kOptimizerTensor, *optimizer_);
  replay_.save(checkpoint, config_.checkpoint_replay);
  checkpoint.metadata["algorithm"] = kAlgorithm;
  checkpoint.metadata["updates"] = updates_;
  checkpoint.metadata["target_sync_step"] = target_sync_step_;
}

void Dqn::load(const core::Checkpoint& checkpoint) {
  // Everything is checked (the optimiser state and the replay read into scratch copies) before
  // anything changes.
  check_algorithm(checkpoint, kAlgorithm);
  const int64_t updates = core::metadata_int(checkpoint, "updates");
  const int64_t target_sync_step = core::metadata_int(checkpoint, "target_sync_step");
  ModuleHints hints;
  hints.missing = [](const std::string& key) {
    return key.find("head") != std::string::npos ? std::string(" (saved with another algo.dqn.dueling?)")
                                                 : std::string();
  };
  check_module(checkpoint, kModelPrefix, *online_, hints);
  check_module(checkpoint, kTargetPrefix, *target_, hints);
  check_optimizer(checkpoint, kOptimizerTensor, *make_optimizer(config_, parameters_), device_);

  Replay::Saved replay = replay_.read(checkpoint, config_.checkpoint_replay);

  load_module(checkpoint, kModelPrefix, *online_);
  load_module(checkpoint, kTargetPrefix, *target_);
  load_optimizer(checkpoint, kOptimizerTensor, *optimizer_, device_);
  updates_ = updates;
  target_sync_step_ = target_sync_step;
  // Without contents the replay empties: a resumed run refills it as it acts.
  replay_.restore(std::move(replay), /*keep_unsaved_contents=*/false);
  if (sequences_) sequences_->clear();
}

}  // namespace concord::algos
