#include "concord/nn/actor_critic.h"

#include <sstream>
#include <stdexcept>
#include <utility>

#include "concord/core/config_problems.h"
#include "concord/nn/fused_linear_stack.h"
#include "concord/nn/init.h"

namespace concord::nn {
namespace {

std::string shape_string(const std::vector<int64_t>& shape) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    out << (i ? ", " : "") << shape[i];
  }
  out << "]";
  return out.str();
}

// x through `torso`'s layers and then `head` (when given) as one fused_linear_stack node, the
// activation after every torso layer and none after the head. Without layers at all, x itself.
torch::Tensor fused_mlp_stack(const torch::Tensor& x, const MlpTorso& torso, const torch::nn::Linear* head) {
  std::vector<torch::Tensor> weights;
  std::vector<torch::Tensor> biases;
  for (const torch::nn::Linear& layer : torso->layers()) {
    weights.push_back(layer->weight);
    biases.push_back(layer->bias);
  }
  if (head != nullptr) {
    weights.push_back((*head)->weight);
    biases.push_back((*head)->bias);
  }
  if (weights.empty()) return x;
  return fused_linear_stack(x, weights, biases, torso->activation(), /*activate_last=*/head == nullptr);
}

// CleanRL's head gains: a near-uniform initial policy, a unit-scale value.
constexpr double kPolicyHeadGain = 0.01;
constexpr double kValueHeadGain = 1.0;

}  // namespace

void ActorCriticConfig::validate() const {
  core::ConfigProblems problems;
  bool positive_shape = !obs_shape.empty();
  for (int64_t size : obs_shape) positive_shape = positive_shape && size >= 1;
  problems.check(positive_shape, "obs_shape", obs_shape, "non-empty and positive");
  problems.check(action_dim >= 1, "action_dim", action_dim, ">= 1");
  if (torso == "mlp") {
    bool positive_sizes = true;
    for (int64_t size : hidden_sizes) positive_sizes = positive_sizes && size >= 1;
    problems.check(positive_sizes, "hidden_sizes", hidden_sizes, "all >= 1");
    problems.check(activation == "tanh" || activation == "relu", "activation", "\"" + activation + "\"",
                   "\"tanh\" or \"relu\"");
  } else if (torso == "cnn") {
    if (!(obs_shape.size() == 3 && obs_shape[1] >= 36 && obs_shape[2] >= 36)) {
      problems.add("torso=cnn does not fit observations of shape " + shape_string(obs_shape) +
                   ": it needs [C, H, W] pixels with H, W >= 36");
    }
    problems.check(cnn_features >= 1, "cnn_features", cnn_features, ">= 1");
  } else if (torso == "grid_cnn") {
    const GridCnnConfig grid = grid_cnn();
    const std::vector<int64_t> out = grid.output_grid();
    if (!(obs_shape.size() == 3 && out[0] >= 1 && out[1] >= 1)) {
      problems.add("torso=grid_cnn does not fit observations of shape " + shape_string(obs_shape) +
                   ": it needs a channel-last grid [H, W, C] large enough for " + std::to_string(grid_channels.size()) +
                   " convolution(s) of " + std::to_string(grid_kernel_size) + "x" + std::to_string(grid_kernel_size) +
                   ", stride " + std::to_string(grid_stride));
    }
    bool positive_channels = !grid_channels.empty();
    for (int64_t size : grid_channels) positive_channels = positive_channels && size >= 1;
    problems.check(positive_channels, "grid_channels", grid_channels, "non-empty, all >= 1");
    problems.check(grid_kernel_size >= 1, "grid_kernel_size", grid_kernel_size, ">= 1");
    problems.check(grid_stride >= 1, "grid_stride", grid_stride, ">= 1");
    problems.check(grid_features >= 1, "grid_features", grid_features, ">= 1");
  } else {
    problems.check(false, "torso", "\"" + torso + "\"", "\"mlp\", \"cnn\" or \"grid_cnn\"");
  }
  // Another torso's keys changed from their defaults would be ignored without a word: a user who
  // sets hidden_sizes beside torso=grid_cnn believes the network has those layers.
  const ActorCriticConfig defaults;
  const std::string torso_is = ", and torso is \"" + torso + "\"";
  const std::string mlp = "torso=mlp" + torso_is;
  const std::string grid = "torso=grid_cnn" + torso_is;
  const std::string cnn = "torso=cnn" + torso_is;
  problems.check_applies(torso == "mlp", "hidden_sizes", hidden_sizes, defaults.hidden_sizes, mlp);
  problems.check_applies(torso == "mlp" || !head_hidden_sizes.empty(), "activation", activation, defaults.activation,
                         "torso=mlp or head_hidden_sizes" + torso_is + " with no head_hidden_sizes");
  problems.check_applies(torso == "grid_cnn", "grid_channels", grid_channels, defaults.grid_channels, grid);
  problems.check_applies(torso == "grid_cnn", "grid_kernel_size", grid_kernel_size, defaults.grid_kernel_size, grid);
  problems.check_applies(torso == "grid_cnn", "grid_stride", grid_stride, defaults.grid_stride, grid);
  problems.check_applies(torso == "grid_cnn", "grid_features", grid_features, defaults.grid_features, grid);
  problems.check_applies(torso == "cnn", "cnn_features", cnn_features, defaults.cnn_features, cnn);
  problems.check_applies(torso == "cnn", "cnn_scale_input", cnn_scale_input, defaults.cnn_scale_input, cnn);
  problems.check_applies(action_kind == ActionKind::kContinuous, "init_log_std", init_log_std, defaults.init_log_std,
                         "continuous actions, and the actions are discrete");
  problems.check(recurrent.empty() || recurrent == "lstm" || recurrent == "gru", "recurrent", "\"" + recurrent + "\"",
                 "\"lstm\", \"gru\" or \"\" (none)");
  problems.check(recurrent_size >= 1, "recurrent_size", recurrent_size, ">= 1");
  problems.check_applies(!recurrent.empty(), "recurrent_size", recurrent_size, defaults.recurrent_size,
                         "a recurrent core (recurrent = \"lstm\" or \"gru\"), and there is none");
  bool positive_head_sizes = true;
  for (int64_t size : head_hidden_sizes) positive_head_sizes = positive_head_sizes && size >= 1;
  problems.check(positive_head_sizes, "head_hidden_sizes", head_hidden_sizes, "all >= 1");
  problems.check_applies(!recurrent.empty(), "head_hidden_sizes", head_hidden_sizes, defaults.head_hidden_sizes,
                         "a recurrent core (recurrent = \"lstm\" or \"gru\"), and there is none");
  problems.throw_if_any("network config (algo.<key>)");
}

GridCnnConfig ActorCriticConfig::grid_cnn() const {
  GridCnnConfig grid;
  grid.obs_shape = obs_shape;
  grid.channels = grid_channels;
  grid.kernel_size = grid_kernel_size;
  grid.stride = grid_stride;
  grid.features = grid_features;
  return grid;
}

const core::ConfigFields<ActorCriticConfig>& ActorCriticConfig::fields() {
  static const core::ConfigFields<ActorCriticConfig> kFields = {
      {"torso", &ActorCriticConfig::torso,
       "Network torso: mlp (vector observations), cnn (Nature-DQN, [C, H, W] pixels of at least 36x36) or "
       "grid_cnn (channel-last grids such as MinAtar's)"},
      {"shared_torso", &ActorCriticConfig::shared_torso, "One torso feeding both heads instead of one each"},
      {"grid_channels", &ActorCriticConfig::grid_channels,
       "grid_cnn: output channels of each convolution (MinAtar's network: [16])"},
      {"grid_kernel_size", &ActorCriticConfig::grid_kernel_size, "grid_cnn: convolution kernel size"},
      {"grid_stride", &ActorCriticConfig::grid_stride, "grid_cnn: convolution stride"},
      {"grid_features", &ActorCriticConfig::grid_features,
       "grid_cnn: width of the layer after the convolutions (MinAtar's network: 128)"},
      {"hidden_sizes", &ActorCriticConfig::hidden_sizes, "Hidden layer sizes of the actor and critic MLPs"},
      {"activation", &ActorCriticConfig::activation, "MLP activation: tanh or relu"},
      {"init_log_std", &ActorCriticConfig::init_log_std,
       "Continuous actions: initial log standard deviation of the Gaussian policy"},
      {"normalize_observations", &ActorCriticConfig::normalize_observations,
       "Normalise observations by their running mean and std, clipped to +-10 (Gymnasium's "
       "NormalizeObservation); the statistics are saved in checkpoints"},
      {"recurrent", &ActorCriticConfig::recurrent,
       "Memory after the torso: lstm or gru (each env's state carried from step to step, reset where an "
       "episode starts), or empty for none"},
      {"recurrent_size", &ActorCriticConfig::recurrent_size, "Cells of the recurrent core (with recurrent)"},
      {"orthogonal_init", &ActorCriticConfig::orthogonal_init,
       "Orthogonal initialisation as CleanRL's (gain sqrt(2) for torso layers, 0.01 for the policy head, 1 for the "
       "value head); false: PyTorch's defaults for every layer (Stable-Baselines3's ortho_init=False)"},
      {"head_hidden_sizes", &ActorCriticConfig::head_hidden_sizes,
       "With recurrent: hidden layers between the core and each head, with algo.activation (sb3-contrib "
       "RecurrentPPO's net_arch after its LSTM); empty: the heads read the core"},
  };
  return kFields;
}

torch::Tensor ActionDistribution::sample() const {
  return std::visit([](const auto& dist) { return dist.sample(); }, dist_);
}

torch::Tensor ActionDistribution::log_prob(const torch::Tensor& actions) const {
  return std::visit([&actions](const auto& dist) { return dist.log_prob(actions); }, dist_);
}

torch::Tensor ActionDistribution::entropy() const {
  return std::visit([](const auto& dist) { return dist.entropy(); }, dist_);
}

torch::Tensor ActionDistribution::mode() const {
  return std::visit([](const auto& dist) { return dist.mode().detach(); }, dist_);
}

ActorCriticImpl::ActorCriticImpl(ActorCriticConfig config) : config_(std::move(config)) {
  config_.validate();
  reset();
}

ActorCriticImpl::Torso ActorCriticImpl::make_torso(const std::string& name) {
  Torso torso;
  if (config_.torso == "cnn") {
    torso.cnn = register_module(name, CnnTorso(config_.obs_shape, config_.cnn_features, config_.cnn_scale_input));
  } else if (config_.torso == "grid_cnn") {
    torso.grid = register_module(name, GridCnnTorso(config_.grid_cnn()));
  } else {
    int64_t input_dim = 1;
    for (int64_t size : config_.obs_shape) {
      input_dim *= size;
    }
    torso.mlp = register_module(name, MlpTorso(input_dim, config_.hidden_sizes, config_.activation));
  }
  return torso;
}

void ActorCriticImpl::reset() {
  if (config_.shared_torso) {
    actor_torso_ = make_torso("torso");
    critic_torso_ = Torso{};
  } else {
    actor_torso_ = make_torso("actor_torso");
    critic_torso_ = make_torso("critic_torso");
  }
  int64_t features = actor_torso_.cnn    ? actor_torso_.cnn->output_dim()
                     : actor_torso_.grid ? actor_torso_.grid->output_dim()
                                         : actor_torso_.mlp->output_dim();
  actor_core_ = nullptr;
  critic_core_ = nullptr;
  if (recurrent()) {
    const std::string kind = config_.recurrent;
    actor_core_ = register_module(config_.shared_torso ? "core" : "actor_core",
                                  RecurrentCore(kind, features, config_.recurrent_size));
    if (!config_.shared_torso) {
      critic_core_ = register_module("critic_core", RecurrentCore(kind, features, config_.recurrent_size));
    }
    features = config_.recurrent_size;
  }
  actor_head_layers_ = nullptr;
  critic_head_layers_ = nullptr;
  if (recurrent() && !config_.head_hidden_sizes.empty()) {
    actor_head_layers_ =
        register_module("actor_head_layers", MlpTorso(features, config_.head_hidden_sizes, config_.activation));
    critic_head_layers_ =
        register_module("critic_head_layers", MlpTorso(features, config_.head_hidden_sizes, config_.activation));
    features = config_.head_hidden_sizes.back();
  }
  actor_head_ = register_module("actor_head", torch::nn::Linear(features, config_.action_dim));
  orthogonal_init(actor_head_, kPolicyHeadGain);
  critic_head_ = register_module("critic_head", torch::nn::Linear(features, 1));
  orthogonal_init(critic_head_, kValueHeadGain);
  if (!config_.orthogonal_init) pytorch_default_init(*this);
  if (config_.action_kind == ActionKind::kContinuous) {
    log_std_ = register_parameter("log_std", torch::full({config_.action_dim}, config_.init_log_std, torch::kFloat32));
  } else {
    log_std_ = torch::Tensor();
  }
  if (config_.normalize_observations) {
    RunningMeanStdConfig stats;
    stats.shape = config_.obs_shape;
    obs_rms_ = register_module("obs_rms", RunningMeanStd(stats));
  } else {
    obs_rms_ = nullptr;
  }
}

torch::Tensor ActorCriticImpl::run_torso(Torso& torso, const torch::Tensor& x) {
  if (torso.cnn) return torso.cnn->forward(x);
  if (torso.grid) return torso.grid->forward(x);
  return torso.mlp->forward(x);
}

torch::Tensor ActorCriticImpl::prepare(const torch::Tensor& obs) const {
  const auto& shape = config_.obs_shape;
  bool matches = obs.dim() == static_cast<int64_t>(shape.size()) + 1;
  for (size_t i = 0; matches && i < shape.size(); ++i) {
    matches = obs.size(static_cast<int64_t>(i) + 1) == shape[i];
  }
  if (!matches) {
    std::ostringstream message;
    message << "ActorCritic: expected observations [B, " << shape_string(shape).substr(1) << ", got " << obs.sizes();
    throw std::invalid_argument(message.str());
  }
  const torch::Tensor& weight = actor_head_->weight;
  torch::Tensor x = obs.to(weight.device(), weight.scalar_type());
  if (obs_rms_) x = obs_rms_->normalize(x);
  return config_.torso == "mlp" ? x.flatten(1) : x;
}

torch::Tensor ActorCriticImpl::actor_features(const torch::Tensor& x) {
  return fused_mlp() ? fused_mlp_stack(x, actor_torso_.mlp, nullptr) : run_torso(actor_torso_, x);
}

torch::Tensor ActorCriticImpl::critic_features(const torch::Tensor& x) {
  return config_.shared_torso ? actor_features(x) : run_torso(critic_torso_, x);
}

torch::Tensor ActorCriticImpl::head_output(torch::nn::Linear& head, const torch::Tensor& features) {
  if (!fused_mlp()) return head->forward(features);
  return fused_linear_stack(features, {head->weight}, {head->bias}, actor_torso_.mlp->activation(),
                            /*activate_last=*/false);
}

torch::Tensor ActorCriticImpl::actor_output(const torch::Tensor& x) {
  if (fused_mlp() && !config_.shared_torso) return fused_mlp_stack(x, actor_torso_.mlp, &actor_head_);
  return head_output(actor_head_, actor_features(x));
}

torch::Tensor ActorCriticImpl::critic_output(const torch::Tensor& x) {
  if (fused_mlp() && !config_.shared_torso) return fused_mlp_stack(x, critic_torso_.mlp, &critic_head_).squeeze(-1);
  return head_output(critic_head_, critic_features(x)).squeeze(-1);
}

ActionDistribution ActorCriticImpl::make_distribution(const torch::Tensor& head_out) const {
  if (config_.action_kind == ActionKind::kDiscrete) {
    return ActionDistribution(Categorical(head_out));
  }
  return ActionDistribution(DiagGaussian(head_out, log_std_));
}

void ActorCriticImpl::require_feed_forward(const char* method) const {
  if (recurrent()) {
    throw std::logic_error(std::string("ActorCritic::") + method + ": this network has memory (recurrent = \"" +
                           config_.recurrent + "\") and acts from each env's state: use the overload that takes it");
  }
}

PolicyOutput ActorCriticImpl::forward(const torch::Tensor& obs) {
  require_feed_forward("forward");
  const torch::Tensor x = prepare(obs);
  PolicyOutput out;
  torch::Tensor head_out;
  if (config_.shared_torso) {
    // One torso pass feeding both heads.
    const torch::Tensor h = actor_features(x);
    head_out = head_output(actor_head_, h);
    out.value = head_output(critic_head_, h).squeeze(-1);
  } else {
    head_out = actor_output(x);
    out.value = critic_output(x);
  }
  if (config_.action_kind == ActionKind::kDiscrete) {
    out.logits = head_out;
  } else {
    out.mean = head_out;
    out.log_std = log_std_;
  }
  return out;
}

ActionDistribution ActorCriticImpl::distribution(const torch::Tensor& obs) {
  require_feed_forward("distribution");
  return make_distribution(actor_output(prepare(obs)));
}

torch::Tensor ActorCriticImpl::value(const torch::Tensor& obs) {
  require_feed_forward("value");
  return critic_output(prepare(obs));
}

ActionDistribution ActorCriticImpl::distribution(const PolicyOutput& out) const {
  return make_distribution(out.logits.defined() ? out.logits : out.mean);
}

ActResult ActorCriticImpl::act(const torch::Tensor& obs, bool deterministic) {
  const PolicyOutput out = forward(obs);
  const ActionDistribution dist = distribution(out);
  ActResult result;
  result.action = deterministic ? dist.mode() : dist.sample();
  result.log_prob = dist.log_prob(result.action);
  result.value = out.value;
  return result;
}

ActionEvaluation ActorCriticImpl::evaluate(const torch::Tensor& obs, const torch::Tensor& actions) {
  const PolicyOutput out = forward(obs);
  if (out.logits.defined() && out.logits.dim() == 2 && actions.dim() == 1) {
    // The discrete case as one autograd node (categorical.h): the same values and gradients.
    const LogProbAndEntropy fused = categorical_log_prob_and_entropy(out.logits, actions);
    return ActionEvaluation{fused.log_prob, fused.entropy, out.value};
  }
  const ActionDistribution dist = make_distribution(out.logits.defined() ? out.logits : out.mean);
  ActionEvaluation result;
  result.log_prob = dist.log_prob(actions);
  result.entropy = dist.entropy();
  result.value = out.value;
  return result;
}

// ---- with memory ----

namespace {

// log pi(actions | head_out), entropy and the value, as evaluate() computes them.
ActionEvaluation evaluation_of(const ActionDistribution& dist, const torch::Tensor& head_out,
                               const torch::Tensor& actions, torch::Tensor value) {
  if (dist.is_discrete() && actions.dim() == 1) {
    const LogProbAndEntropy fused = categorical_log_prob_and_entropy(head_out, actions);
    return ActionEvaluation{fused.log_prob, fused.entropy, std::move(value)};
  }
  return ActionEvaluation{dist.log_prob(actions), dist.entropy(), std::move(value)};
}

}  // namespace

std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>> ActorCriticImpl::unpack_state(
    const core::TensorMap& state, int64_t batch) const {
  std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>> cores;
  if (state.empty()) {
    cores.first = actor_core_->initial_state(batch);
    if (critic_core_) cores.second = critic_core_->initial_state(batch);
    return cores;
  }
  const auto read = [&](const std::string& prefix, std::vector<torch::Tensor>& into) {
    for (const std::string& name : actor_core_->state_names()) {
      const auto found = state.find(prefix + name);
      if (found == state.end()) {
        throw std::invalid_argument("ActorCritic: the state has no \"" + prefix + name + "\" (" +
                                    std::to_string(state.size()) + " tensors given)");
      }
      into.push_back(found->second);
    }
  };
  read(critic_core_ ? "actor_" : "", cores.first);
  if (critic_core_) read("critic_", cores.second);
  return cores;
}

core::TensorMap ActorCriticImpl::pack_state(std::vector<torch::Tensor> actor, std::vector<torch::Tensor> critic) const {
  core::TensorMap state;
  const std::vector<std::string>& names = actor_core_->state_names();
  for (size_t i = 0; i < names.size(); ++i) {
    state[(critic_core_ ? "actor_" : "") + names[i]] = std::move(actor[i]);
    if (critic_core_) state["critic_" + names[i]] = std::move(critic[i]);
  }
  return state;
}

core::TensorMap ActorCriticImpl::initial_state(int64_t batch) const {
  auto [actor, critic] = unpack_state({}, batch);
  return pack_state(std::move(actor), std::move(critic));
}

torch::Tensor ActorCriticImpl::actor_head_on_core(const torch::Tensor& h) {
  return actor_head_->forward(actor_head_layers_ ? actor_head_layers_->forward(h) : h);
}

torch::Tensor ActorCriticImpl::critic_head_on_core(const torch::Tensor& h) {
  return critic_head_->forward(critic_head_layers_ ? critic_head_layers_->forward(h) : h).squeeze(-1);
}

RecurrentPolicyOutput ActorCriticImpl::forward(const torch::Tensor& obs, const core::TensorMap& state,
                                               const torch::Tensor& starts) {
  if (!recurrent()) throw std::logic_error("ActorCritic::forward: a state was given to a network without memory");
  const torch::Tensor x = prepare(obs);
  auto [actor_state, critic_state] = unpack_state(state, x.size(0));
  const torch::Tensor actor_h = actor_core_->step(run_torso(actor_torso_, x), starts, actor_state);
  const torch::Tensor critic_h =
      critic_core_ ? critic_core_->step(run_torso(critic_torso_, x), starts, critic_state) : actor_h;
  RecurrentPolicyOutput result;
  const torch::Tensor head_out = actor_head_on_core(actor_h);
  if (config_.action_kind == ActionKind::kDiscrete) {
    result.out.logits = head_out;
  } else {
    result.out.mean = head_out;
    result.out.log_std = log_std_;
  }
  result.out.value = critic_head_on_core(critic_h);
  result.state = pack_state(std::move(actor_state), std::move(critic_state));
  return result;
}

RecurrentActResult ActorCriticImpl::act(const torch::Tensor& obs, const core::TensorMap& state,
                                        const torch::Tensor& starts, bool deterministic) {
  RecurrentPolicyOutput forwarded = forward(obs, state, starts);
  const ActionDistribution dist = distribution(forwarded.out);
  RecurrentActResult result;
  result.act.action = deterministic ? dist.mode() : dist.sample();
  result.act.log_prob = dist.log_prob(result.act.action);
  result.act.value = forwarded.out.value;
  result.state = std::move(forwarded.state);
  return result;
}

torch::Tensor ActorCriticImpl::value(const torch::Tensor& obs, const core::TensorMap& state,
                                     const torch::Tensor& starts) {
  if (!recurrent()) throw std::logic_error("ActorCritic::value: a state was given to a network without memory");
  const torch::Tensor x = prepare(obs);
  auto [actor_state, critic_state] = unpack_state(state, x.size(0));
  std::vector<torch::Tensor>& own = critic_core_ ? critic_state : actor_state;
  return critic_head_on_core(critic_core()->step(run_torso(critic_torso(), x), starts, own));
}

ActionEvaluation ActorCriticImpl::evaluate_sequence(const torch::Tensor& obs, const torch::Tensor& actions,
                                                    const torch::Tensor& starts, const core::TensorMap& initial_state) {
  if (!recurrent()) throw std::logic_error("ActorCritic::evaluate_sequence: this network has no memory");
  const int64_t steps = obs.size(0);
  const int64_t batch = obs.size(1);
  // The torsos see every step at once; only the cores go step by step.
  const torch::Tensor x = prepare(obs.flatten(0, 1));
  auto [actor_state, critic_state] = unpack_state(initial_state, batch);
  const torch::Tensor actor_h =
      actor_core_->unroll(run_torso(actor_torso_, x).unflatten(0, {steps, batch}), starts, actor_state).flatten(0, 1);
  const torch::Tensor critic_h =
      critic_core_
          ? critic_core_->unroll(run_torso(critic_torso_, x).unflatten(0, {steps, batch}), starts, critic_state)
                .flatten(0, 1)
          : actor_h;
  const torch::Tensor head_out = actor_head_on_core(actor_h);
  return evaluation_of(make_distribution(head_out), head_out, actions.flatten(0, 1), critic_head_on_core(critic_h));
}

torch::Tensor ActorCriticImpl::final_values_sequence(const torch::Tensor& obs, const torch::Tensor& final_obs,
                                                     const torch::Tensor& truncated, const torch::Tensor& starts,
                                                     const core::TensorMap& initial_state) {
  if (!recurrent()) throw std::logic_error("ActorCritic::final_values_sequence: this network has no memory");
  const int64_t steps = obs.size(0);
  const int64_t batch = obs.size(1);
  torch::Tensor values = torch::zeros(truncated.sizes(), truncated.options());
  const torch::Tensor truncated_steps = truncated.gt(0.0).any(1).nonzero().squeeze(1).cpu();
  if (truncated_steps.numel() == 0) return values;
  torch::NoGradGuard no_grad;
  const torch::Tensor x = prepare(obs.flatten(0, 1));
  auto [actor_state, critic_state] = unpack_state(initial_state, batch);
  std::vector<torch::Tensor>& state = critic_core_ ? critic_state : actor_state;
  const int64_t* step_index = truncated_steps.data_ptr<int64_t>();
  const std::vector<int64_t> wanted(step_index, step_index + truncated_steps.numel());
  std::vector<std::vector<torch::Tensor>> states_after;
  critic_core()->unroll(run_torso(critic_torso(), x).unflatten(0, {steps, batch}), starts, state, wanted,
                        &states_after);
  for (int64_t i = 0; i < truncated_steps.numel(); ++i) {
    const int64_t t = step_index[i];
    std::vector<torch::Tensor> ended = states_after[static_cast<size_t>(t)];
    const torch::Tensor h = critic_core()->step(run_torso(critic_torso(), prepare(final_obs[t])), {}, ended);
    const torch::Tensor step_values = critic_head_on_core(h).to(values.scalar_type());
    values[t].copy_(torch::where(truncated[t].gt(0.0), step_values, torch::zeros_like(step_values)));
  }
  return values;
}

ActorCritic build_actor_critic(const ActorCriticConfig& config, torch::Device device) {
  ActorCritic model(config);
  model->to(device);
  return model;
}

void share_observation_statistics(ActorCritic& replica, const ActorCritic& primary) {
  const auto from = primary->named_buffers();
  for (auto& buffer : replica->named_buffers()) buffer.value().set_data(from[buffer.key()]);
}

void ActorCriticImpl::update_observation_stats(const torch::Tensor& obs) {
  if (obs_rms_) obs_rms_->update(obs);
}

}  // namespace concord::nn
