#include "concord/algos/dqn.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Reduction.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/where.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>
#include <torch/optim/adam.h>
#include <torch/optim/rmsprop.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <sstream>
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
constexpr const char* kReplayPrefix = "replay/";
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

ReplayBufferConfig replay_config(const DqnConfig& config, at::ScalarType observation_dtype) {
  const std::vector<int64_t>& shape = config.network.obs_shape;
  ReplayBufferConfig replay;
  replay.capacity = config.buffer_size;
  replay.prioritized = config.prioritized;
  replay.alpha = config.priority_alpha;
  replay.fields = {
      {dqn_replay::kObservation, {shape, observation_dtype}},
      {dqn_replay::kAction, {{}, at::kLong}},
      {dqn_replay::kReturn, {{}, at::kFloat}},
      {dqn_replay::kDiscount, {{}, at::kFloat}},
      {dqn_replay::kBootstrapObservation, {shape, observation_dtype}},
  };
  return replay;
}

// `t` on the host as `dtype` (its own by default), without dispatching an operation where it
// already is: a step is a few rows, and each operation costs more than its copy.
at::Tensor on_host(const at::Tensor& t, std::optional<at::ScalarType> dtype = std::nullopt) {
  const at::ScalarType wanted = dtype.value_or(t.scalar_type());
  if (t.device().is_cpu() && t.scalar_type() == wanted && !t.requires_grad()) return t;
  return t.detach().to(at::kCPU, wanted);
}

// A host copy of `t` (as `dtype`, its own by default) that nobody else writes to, in one operation.
at::Tensor host_copy(const at::Tensor& t, std::optional<at::ScalarType> dtype = std::nullopt) {
  const at::ScalarType wanted = dtype.value_or(t.scalar_type());
  if (t.device().is_cpu() && t.scalar_type() == wanted && !t.requires_grad()) return t.clone();
  return t.detach().to(at::kCPU, wanted, /*non_blocking=*/false, /*copy=*/true);
}

// Rows [...] as one [k, ...] tensor; a single row as a view of itself (the replay copies it).
at::Tensor stack_rows(const std::vector<at::Tensor>& rows) {
  return rows.size() == 1 ? rows.front().unsqueeze(0) : at::stack(rows);
}

// `values` as a float CPU tensor, rounded as .to(at::kFloat) rounds, in one allocation.
at::Tensor host_floats(const std::vector<double>& values) {
  at::Tensor out = at::empty({static_cast<int64_t>(values.size())}, at::kFloat);
  float* data = out.data_ptr<float>();
  for (size_t i = 0; i < values.size(); ++i) data[i] = static_cast<float>(values[i]);
  return out;
}

// A step's acting estimates (transition::kActingQ and kActingNextValue, [rows] each, from an
// Ape-X actor), as two host double tensors; none when the actor gave none (new transitions then
// take the replay's maximum) or the replay samples uniformly. One without the other is refused.
std::optional<std::pair<at::Tensor, at::Tensor>> acting_estimates(const TensorMap& step, int64_t rows,
                                                                  bool prioritized) {
  const auto q = step.find(transition::kActingQ);
  const auto next_value = step.find(transition::kActingNextValue);
  const bool has_q = q != step.end() && q->second.defined();
  const bool has_next_value = next_value != step.end() && next_value->second.defined();
  if (has_q != has_next_value) {
    tensor_checks::fail("Dqn::observe", std::string("the acting estimates come together: '") +
                                            (has_q ? transition::kActingNextValue : transition::kActingQ) +
                                            "' is missing");
  }
  if (!has_q || !prioritized) return std::nullopt;
  tensor_checks::check_1d("Dqn::observe", transition::kActingQ, q->second, rows);
  tensor_checks::check_1d("Dqn::observe", transition::kActingNextValue, next_value->second, rows);
  return std::make_pair(on_host(q->second, at::kDouble).contiguous(),
                        on_host(next_value->second, at::kDouble).contiguous());
}

// Ape-X's initial priority of a transition, by the acting network's estimates:
// |G + discount * V(bootstrap observation) - Q(o, a)| + eps, the learner's own priority formula
// (update()) with the actor's network in place of both online and target network.
double initial_priority(double return_, double discount, double bootstrap_value, double q_taken, double eps) {
  return std::abs(return_ + discount * bootstrap_value - q_taken) + eps;
}

// The replay sampler's seed, drawn from LibTorch's generator so that torch::manual_seed fixes it.
uint64_t seed_from_torch() {
  const at::Tensor draw =
      at::randint(std::numeric_limits<int64_t>::max(), {1}, core::thread_generator(at::kCPU), at::kLong);
  return static_cast<uint64_t>(draw.item<int64_t>());
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
      {"adam_eps", &DqnConfig::adam_eps, "Adam epsilon"},
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
  problems.check(adam_eps > 0.0, "adam_eps", adam_eps, "> 0");
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

EpsilonGreedyActor::EpsilonGreedyActor(nn::QNetwork network, DqnConfig config)
    : network_(std::move(network)), config_(std::move(config)) {}

Metrics EpsilonGreedyActor::exploration(const ActingContext& context) const {
  return {{"charts/epsilon", dqn_epsilon(config_, context)}};
}

ActorOutput EpsilonGreedyActor::act(const torch::Tensor& observations, const ActingContext& context) {
  const double epsilon = dqn_epsilon(config_, context);
  const int64_t rows = observations.size(0);
  const int64_t actions = network_->num_actions();
  const at::TensorOptions options = network_->parameters().front().options().requires_grad(false);
  const auto generator = core::thread_generator(options.device());
  if (!options.device().is_cpu()) {
    // On an accelerator, every row's draws at once on the device, and the forward pass for all.
    if (epsilon >= 1.0) return {at::randint(actions, {rows}, generator, options.dtype(at::kLong)), {}};
    const at::Tensor greedy = network_->forward(observations).argmax(/*dim=*/1);
    if (epsilon <= 0.0) return {greedy, {}};
    const at::Tensor random_actions = at::randint(actions, {rows}, generator, options.dtype(at::kLong));
    const at::Tensor explore = at::rand({rows}, generator, options.dtype(at::kFloat)) < epsilon;
    return {at::where(explore, random_actions, greedy), {}};
  }
  if (epsilon <= 0.0) return {network_->forward(observations).argmax(/*dim=*/1), {}};
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
  return {chosen, {}};
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
        gives_priority_inputs_(config.prioritized) {}

  ActorOutput act(const torch::Tensor& observations, const ActingContext& context) override {
    return actor_.act(observations, context);
  }
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
      rng_(seed_from_torch()),
      // The target starts as the online network: every multiple of the target period up to
      // learning_starts (when no update has happened yet) counts as synced.
      target_sync_step_(config_.learning_starts / config_.target_network_frequency * config_.target_network_frequency) {
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
      rng_(seed_from_torch()),
      primary_(&primary) {
  share_optimizer_state(*optimizer_, *primary.optimizer_);
}

std::unique_ptr<OffPolicyLearner> Dqn::make_shared_replica() {
  if (config_.prioritized) {
    throw std::invalid_argument(
        "asynchronous Q-learning (policy 'hogwild') learns every transition once, from no replay: set "
        "algo.dqn.prioritized = false");
  }
  // No replay to fill: a fresh learner's target counts as synced at step 0, not at learning_starts.
  if (updates_ == 0) target_sync_step_ = 0;
  // A3C's final epsilons, one draw per thread.
  const double u = core::uniform(rng_, 0.0, 1.0);
  const double final_epsilon = u < 0.4 ? 0.1 : (u < 0.7 ? 0.01 : 0.5);
  return std::unique_ptr<OffPolicyLearner>(new Dqn(*this, final_epsilon));
}

ReplayBuffer& Dqn::replay_for(at::ScalarType observation_dtype) {
  if (!replay_) replay_ = std::make_unique<ReplayBuffer>(replay_config(config_, observation_dtype));
  return *replay_;
}

void Dqn::observe(const TensorMap& step, int stream) {
  constexpr const char* kFn = "Dqn::observe";
  auto field = [&step](const char* name) -> const at::Tensor& {
    const auto found = step.find(name);
    if (found == step.end() || !found->second.defined()) {
      tensor_checks::fail(kFn, std::string("field '") + name + "' is missing");
    }
    return found->second;
  };
  const at::Tensor& observations = field(transition::kObservations);
  const at::Tensor& next_observations = field(transition::kNextObservations);
  if (observations.dim() < 1 || next_observations.sizes() != observations.sizes()) {
    tensor_checks::fail(kFn, "observations and next_observations must be [B, ...] of one shape, got " +
                                 tensor_checks::describe(observations) + " and " +
                                 tensor_checks::describe(next_observations));
  }
  const std::vector<int64_t>& shape = config_.network.obs_shape;
  if (observations.sizes().slice(1) != at::IntArrayRef(shape)) {
    std::ostringstream expected;
    expected << at::IntArrayRef(shape);
    tensor_checks::fail(
        kFn, "observations must be [B, " + expected.str().substr(1) + ", got " + tensor_checks::describe(observations));
  }
  const int64_t rows = observations.size(0);
  // Checked on the host rows: a reduction per bound costs more than the env step.
  const auto check_action_range = [&](const at::Tensor& a) {
    const int64_t* action_values = a.data_ptr<int64_t>();
    const auto [lowest, highest] = std::minmax_element(action_values, action_values + rows);
    if (*lowest < 0 || *highest >= online_->num_actions()) {
      tensor_checks::fail(kFn, "actions must lie in [0, " + std::to_string(online_->num_actions()) + "), got " +
                                   std::to_string(*lowest) + " to " + std::to_string(*highest));
    }
  };
  for (const char* name :
       {transition::kActions, transition::kRewards, transition::kTerminated, transition::kTruncated}) {
    tensor_checks::check_1d(kFn, name, field(name), rows);
  }
  const at::Tensor& actions = field(transition::kActions);
  if (at::isFloatingType(actions.scalar_type()) || actions.scalar_type() == at::kBool) {
    tensor_checks::fail(kFn, "actions must be integer action indices, got " + tensor_checks::describe(actions));
  }
  if (rows == 0) return;
  const auto estimates = acting_estimates(step, rows, config_.prioritized);

  c10::NoGradGuard no_grad;
  if (config_.n_step == 1) {
    // The one-step target: G = r_t, discount = gamma (0 after a termination; a truncation
    // bootstraps), from next_observations (the final observation where an episode ended). The
    // numbers an NStepQueue of n = 1 gives, without the per-env queues. The replay copies the
    // rows, so host tensors go in as they are; discounts are written on the host (a step is a
    // few rows, and an operation per field would cost more than the env step).
    const at::Tensor a = on_host(actions, at::kLong).contiguous();
    check_action_range(a);
    const at::Tensor terminated = on_host(field(transition::kTerminated), at::kFloat).contiguous();
    at::Tensor discounts = at::empty({rows}, at::kFloat);
    const float* ended = terminated.data_ptr<float>();
    float* discount = discounts.data_ptr<float>();
    for (int64_t b = 0; b < rows; ++b) discount[b] = ended[b] != 0.0f ? 0.0f : static_cast<float>(config_.gamma);
    const at::Tensor o = on_host(observations);
    const at::Tensor r = on_host(field(transition::kRewards), at::kFloat).contiguous();
    std::optional<at::Tensor> priorities;
    if (estimates) {
      priorities = at::empty({rows}, at::kFloat);
      const double* q = estimates->first.data_ptr<double>();
      const double* next_value = estimates->second.data_ptr<double>();
      for (int64_t b = 0; b < rows; ++b) {
        priorities->data_ptr<float>()[b] = static_cast<float>(
            initial_priority(r.data_ptr<float>()[b], discount[b], next_value[b], q[b], config_.priority_eps));
      }
    }
    replay_for(o.scalar_type())
        .add(
            {
                {dqn_replay::kObservation, o},
                {dqn_replay::kAction, a},
                {dqn_replay::kReturn, r},
                {dqn_replay::kDiscount, discounts},
                {dqn_replay::kBootstrapObservation, on_host(next_observations)},
            },
            priorities);
    return;
  }

  // n-step windows keep steps by reference: give them copies nobody else writes to.
  const at::Tensor o = host_copy(observations);
  const at::Tensor next_o = host_copy(next_observations);
  const at::Tensor a = host_copy(actions, at::kLong).contiguous();
  check_action_range(a);
  // Flags and rewards are read on the host, without an operation where they already are (as the
  // one-step path): a step is a few rows, and each operation costs more than the step.
  const at::Tensor term = on_host(field(transition::kTerminated), at::kFloat).contiguous();
  const at::Tensor trunc = on_host(field(transition::kTruncated), at::kFloat).contiguous();
  const at::Tensor r = on_host(field(transition::kRewards), at::kDouble).contiguous();
  ReplayBuffer& replay = replay_for(o.scalar_type());

  // n-step: each env's window (n_step_returns.h) emits the transitions it completes.
  std::vector<NStepQueue>& queues = n_step_queues_[stream];
  if (queues.empty()) queues.assign(static_cast<size_t>(rows), NStepQueue(config_.n_step, config_.gamma));
  if (static_cast<int64_t>(queues.size()) != rows) {
    tensor_checks::fail(kFn, "stream " + std::to_string(stream) + " had " + std::to_string(queues.size()) +
                                 " environments, this step has " + std::to_string(rows));
  }
  std::vector<at::Tensor> observation_rows, action_rows, bootstrap_rows;
  std::vector<double> returns, discounts, priorities;
  for (int64_t b = 0; b < rows; ++b) {
    // The actor's estimates travel in the window with their step: a transition completed here
    // takes Q(o_t, a_t) from its first step and the bootstrap value from its last.
    ActingEstimates acting;
    if (estimates) acting = {estimates->first.data_ptr<double>()[b], estimates->second.data_ptr<double>()[b]};
    for (NStepTransition& done :
         queues[static_cast<size_t>(b)].push(o[b], a[b], r.data_ptr<double>()[b], term.data_ptr<float>()[b] != 0.0f,
                                             trunc.data_ptr<float>()[b] != 0.0f, next_o[b], acting)) {
      observation_rows.push_back(std::move(done.observation));
      action_rows.push_back(std::move(done.action));
      returns.push_back(done.reward);
      discounts.push_back(done.discount);
      bootstrap_rows.push_back(std::move(done.bootstrap_observation));
      if (estimates) {
        priorities.push_back(
            initial_priority(done.reward, done.discount, done.bootstrap_value, done.q_first, config_.priority_eps));
      }
    }
  }
  if (returns.empty()) return;
  std::optional<at::Tensor> initial;
  // A stream that starts giving estimates mid-window completes its first transitions without one
  // (NaN): those, and only then, take the replay's maximum.
  const bool complete = estimates && std::none_of(priorities.begin(), priorities.end(),
                                                  [](double priority) { return std::isnan(priority); });
  if (complete) initial = host_floats(priorities);
  replay.add(
      {
          {dqn_replay::kObservation, stack_rows(observation_rows)},
          {dqn_replay::kAction, stack_rows(action_rows)},
          {dqn_replay::kReturn, host_floats(returns)},
          {dqn_replay::kDiscount, host_floats(discounts)},
          {dqn_replay::kBootstrapObservation, stack_rows(bootstrap_rows)},
      },
      initial);
}

at::Tensor Dqn::td_targets(const TensorMap& batch) {
  // Inference mode, not only no-grad: its operations skip autograd's dispatch entirely (a good
  // share of a CartPole update's operations are here). The targets are inference tensors: the
  // loss reads them without saving them for backward.
  c10::InferenceMode inference;
  const at::Tensor next = on_device(batch.at(dqn_replay::kBootstrapObservation), device_);
  const at::Tensor q_next = target_->forward(next);
  const at::Tensor returns = on_device(batch.at(dqn_replay::kReturn), device_);
  const at::Tensor discounts = on_device(batch.at(dqn_replay::kDiscount), device_);
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
  if (!replay_ || replay_->size() < config_.batch_size) return {};

  // Prioritised replay's importance exponent, annealed from beta0 to 1 over training.
  const double beta = config_.prioritized ? config_.priority_beta0 + (1.0 - config_.priority_beta0) * progress : 1.0;
  // gradient_step always clips; an infinite threshold leaves the gradient as it is.
  const double clip = config_.max_grad_norm > 0.0 ? config_.max_grad_norm : std::numeric_limits<double>::infinity();
  at::Tensor loss;
  at::Tensor q_taken;
  for (int64_t g = 0; g < config_.gradient_steps; ++g) {
    const ReplaySample sample = replay_->sample(config_.batch_size, rng_, beta);
    const TensorMap batch = to_device(sample.fields, device_);

    // y = G + discount * Q_target(o', a*), no gradient.
    const at::Tensor y = td_targets(batch);
    // loss = mean w * l(Q_online(o, a) - y) over the replayed actions (fused_td_loss.h); w are
    // prioritised replay's importance weights, which correct its sampling.
    const TdLoss td = fused_td_loss(online_->forward(batch.at(dqn_replay::kObservation)), batch.at(dqn_replay::kAction),
                                    y, config_.prioritized ? sample.weights.to(device_) : at::Tensor(), config_.loss);
    loss = td.loss;
    q_taken = td.q_taken;
    gradient_step(loss, parameters_, *optimizer_, clip, sync_strategy());

    // New priorities: the TD errors the step was taken on.
    if (config_.prioritized) {
      const at::Tensor td_errors = (q_taken - y).abs().to(at::kCPU, at::kDouble);
      replay_->update_priorities(sample.indices, td_errors + config_.priority_eps);
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
  if (!replay_) return {};
  const TensorMap queued = replay_->take_all();
  if (queued.at(dqn_replay::kAction).size(0) == 0) return {};
  const TensorMap batch = to_device(queued, device_);
  // y = G + discount * Q_target(o', a*) with the shared target network, no gradient.
  const at::Tensor y = td_targets(batch);
  const TdLoss td = fused_td_loss(online_->forward(batch.at(dqn_replay::kObservation)), batch.at(dqn_replay::kAction),
                                  y, at::Tensor(), config_.loss);
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

// ---- checkpoints ----

void Dqn::save(core::Checkpoint& checkpoint) const {
  save_module(checkpoint, kModelPrefix, *online_);
  save_module(checkpoint, kTargetPrefix, *target_);
  save_optimizer(checkpoint, kOptimizerTensor, *optimizer_);
  if (config_.checkpoint_replay && replay_) {
    for (const auto& [name, tensor] : replay_->state()) checkpoint.tensors[kReplayPrefix + name] = tensor;
  }
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

  std::unique_ptr<ReplayBuffer> restored;
  const TensorMap replay_state = core::tensors_under(checkpoint, kReplayPrefix);
  if (config_.checkpoint_replay && !replay_state.empty()) {
    const at::Tensor observations =
        core::checkpoint_tensor(checkpoint, std::string(kReplayPrefix) + "fields/" + dqn_replay::kObservation);
    try {
      restored = std::make_unique<ReplayBuffer>(replay_config(config_, observations.scalar_type()));
      restored->load_state(replay_state);
    } catch (const std::invalid_argument& error) {
      core::checkpoint_corrupt(std::string("the replay (tensors '") + kReplayPrefix +
                               "...') does not fit: " + error.what());
    }
  }

  load_module(checkpoint, kModelPrefix, *online_);
  load_module(checkpoint, kTargetPrefix, *target_);
  load_optimizer(checkpoint, kOptimizerTensor, *optimizer_, device_);
  updates_ = updates;
  target_sync_step_ = target_sync_step;
  replay_ = std::move(restored);
  n_step_queues_.clear();
}

}  // namespace concord::algos
