#include "concord/algos/algorithm_registry.h"

#include <stdexcept>
#include <type_traits>
#include <utility>
#include <variant>

#include "concord/algos/a2c.h"
#include "concord/algos/ppo.h"

namespace concord::algos {
namespace {

// A config struct field bound to the key algo.<algorithm>.<key>: the key's default is the
// struct's, and make_learner reads the key back into the field.
template <typename Config>
struct Field {
  const char* key;
  std::variant<double Config::*, int64_t Config::*, bool Config::*, std::string Config::*> member;
  const char* doc;
};

const std::vector<Field<PpoConfig>>& ppo_fields() {
  static const std::vector<Field<PpoConfig>> fields = {
      {"learning_rate", &PpoConfig::learning_rate,
       "Adam step size (the initial one when annealed)"},
      {"num_steps", &PpoConfig::num_steps, "Steps of each environment per rollout (T)"},
      {"anneal_lr", &PpoConfig::anneal_lr, "Decay the learning rate linearly to 0 over training"},
      {"gamma", &PpoConfig::gamma, "Discount factor"},
      {"gae_lambda", &PpoConfig::gae_lambda, "GAE lambda"},
      {"num_minibatches", &PpoConfig::num_minibatches, "Minibatches per epoch"},
      {"update_epochs", &PpoConfig::update_epochs, "Passes over each rollout"},
      {"norm_adv", &PpoConfig::norm_adv, "Normalise advantages within each minibatch"},
      {"clip_coef", &PpoConfig::clip_coef, "Surrogate (and value) clipping coefficient"},
      {"clip_vloss", &PpoConfig::clip_vloss, "Clip the value loss around the rollout's values"},
      {"ent_coef", &PpoConfig::ent_coef, "Entropy bonus coefficient"},
      {"vf_coef", &PpoConfig::vf_coef, "Value loss coefficient"},
      {"max_grad_norm", &PpoConfig::max_grad_norm, "Gradient-norm clipping threshold"},
      {"target_kl", &PpoConfig::target_kl,
       "Stop an update's epochs once approx_kl exceeds this (0 = off)"},
      {"adam_eps", &PpoConfig::adam_eps, "Adam epsilon"},
      {"normalize_reward", &PpoConfig::normalize_reward,
       "Scale rewards by the running std of the discounted return, clipped to +-10 (Gymnasium's NormalizeReward)"},
  };
  return fields;
}

const std::vector<Field<A2cConfig>>& a2c_fields() {
  static const std::vector<Field<A2cConfig>> fields = {
      {"learning_rate", &A2cConfig::learning_rate,
       "Optimiser step size (the initial one when annealed)"},
      {"num_steps", &A2cConfig::num_steps, "Steps of each environment per rollout (T)"},
      {"anneal_lr", &A2cConfig::anneal_lr, "Decay the learning rate linearly to 0 over training"},
      {"gamma", &A2cConfig::gamma, "Discount factor"},
      {"gae_lambda", &A2cConfig::gae_lambda, "1: plain n-step returns; < 1: GAE with this lambda"},
      {"optimizer", &A2cConfig::optimizer, "rmsprop or adam"},
      {"rmsprop_alpha", &A2cConfig::rmsprop_alpha, "RMSprop smoothing constant"},
      {"optimizer_eps", &A2cConfig::optimizer_eps, "RMSprop / Adam epsilon"},
      {"norm_adv", &A2cConfig::norm_adv, "Normalise advantages over each batch"},
      {"ent_coef", &A2cConfig::ent_coef, "Entropy bonus coefficient"},
      {"vf_coef", &A2cConfig::vf_coef, "Value loss coefficient"},
      {"max_grad_norm", &A2cConfig::max_grad_norm, "Gradient-norm clipping threshold"},
      {"vtrace", &A2cConfig::vtrace,
       "V-trace targets and advantages, correcting for policy lag (e.g. central_inference)"},
      {"vtrace_rho_bar", &A2cConfig::vtrace_rho_bar, "V-trace importance-ratio clip (rho bar)"},
      {"vtrace_c_bar", &A2cConfig::vtrace_c_bar, "V-trace trace-cutting clip (c bar)"},
      {"normalize_reward", &A2cConfig::normalize_reward,
       "Scale rewards by the running std of the discounted return, clipped to +-10 (Gymnasium's NormalizeReward)"},
  };
  return fields;
}

template <typename Config, const std::vector<Field<Config>>& (*fields)()>
void declare_keys(core::ConfigSchema& schema, const std::string& prefix) {
  const Config defaults;
  for (const Field<Config>& field : fields()) {
    std::visit(
        [&](auto member) { schema.declare(prefix + field.key, defaults.*member, field.doc); },
        field.member);
  }
}

template <typename Config, const std::vector<Field<Config>>& (*fields)()>
Config read_keys(const core::Config& config, const std::string& prefix) {
  Config result;
  for (const Field<Config>& field : fields()) {
    const std::string key = prefix + field.key;
    std::visit(
        [&](auto member) {
          using Value = std::remove_reference_t<decltype(result.*member)>;
          if constexpr (std::is_same_v<Value, double>) {
            result.*member = config.get_double(key);
          } else if constexpr (std::is_same_v<Value, int64_t>) {
            result.*member = config.get_int(key);
          } else if constexpr (std::is_same_v<Value, bool>) {
            result.*member = config.get_bool(key);
          } else {
            result.*member = config.get_string(key);
          }
        },
        field.member);
  }
  return result;
}

template <typename LearnerT, typename Config, const std::vector<Field<Config>>& (*fields)()>
std::unique_ptr<Learner> make(const core::Config& config, const std::string& prefix,
                              nn::ActorCriticConfig network, torch::Device device) {
  Config algorithm_config = read_keys<Config, fields>(config, prefix);
  algorithm_config.network = std::move(network);
  return std::make_unique<LearnerT>(std::move(algorithm_config), device);
}

struct Algorithm {
  const char* name;
  void (*declare)(core::ConfigSchema& schema, const std::string& prefix);
  std::unique_ptr<Learner> (*make)(const core::Config& config, const std::string& prefix,
                                   nn::ActorCriticConfig network, torch::Device device);
};

// The registry: one line per algorithm, sorted by name.
const Algorithm kAlgorithms[] = {
    {"a2c", declare_keys<A2cConfig, a2c_fields>, make<A2c, A2cConfig, a2c_fields>},
    {"ppo", declare_keys<PpoConfig, ppo_fields>, make<Ppo, PpoConfig, ppo_fields>},
};

std::string prefix_of(const Algorithm& algorithm) {
  return std::string("algo.") + algorithm.name + ".";
}

nn::ActorCriticConfig network_config(const core::Config& config,
                                     const envs::Space& observation_space,
                                     const envs::Space& action_space) {
  if (observation_space.is_discrete()) {
    throw std::invalid_argument("make_learner: observation space " + observation_space.to_string() +
                                " is not supported (a Box is needed)");
  }
  nn::ActorCriticConfig network;
  network.obs_shape = observation_space.shape();
  if (network.obs_shape.empty()) network.obs_shape = {1};  // a scalar Box
  if (action_space.is_discrete()) {
    network.action_kind = nn::ActionKind::kDiscrete;
    network.action_dim = action_space.n();
  } else {
    network.action_kind = nn::ActionKind::kContinuous;
    network.action_dim = action_space.flat_size();
  }
  network.hidden_sizes = config.get_int_list("algo.hidden_sizes");
  network.activation = config.get_string("algo.activation");
  network.init_log_std = config.get_double("algo.init_log_std");
  network.normalize_observations = config.get_bool("algo.normalize_observations");
  return network;
}

}  // namespace

void declare_algorithm_keys(core::ConfigSchema& schema) {
  const nn::ActorCriticConfig network;
  schema.declare("algo.hidden_sizes", network.hidden_sizes,
                 "Hidden layer sizes of the actor and critic MLPs");
  schema.declare("algo.activation", network.activation, "MLP activation: tanh or relu");
  schema.declare("algo.init_log_std", network.init_log_std,
                 "Continuous actions: initial log standard deviation of the Gaussian policy");
  schema.declare("algo.normalize_observations", network.normalize_observations,
                 "Normalise observations by their running mean and std, clipped to +-10 (Gymnasium's "
                 "NormalizeObservation); the statistics are saved in checkpoints");
  for (const Algorithm& algorithm : kAlgorithms) algorithm.declare(schema, prefix_of(algorithm));
}

std::vector<std::string> algorithm_names() {
  std::vector<std::string> names;
  for (const Algorithm& algorithm : kAlgorithms) names.emplace_back(algorithm.name);
  return names;
}

std::unique_ptr<Learner> make_learner(const std::string& name, const core::Config& config,
                                      const envs::Space& observation_space,
                                      const envs::Space& action_space, torch::Device device) {
  for (const Algorithm& algorithm : kAlgorithms) {
    if (name == algorithm.name) {
      return algorithm.make(config, prefix_of(algorithm),
                            network_config(config, observation_space, action_space), device);
    }
  }
  std::string known;
  for (const std::string& known_name : algorithm_names()) {
    known += (known.empty() ? "" : ", ") + known_name;
  }
  throw std::invalid_argument("unknown algorithm '" + name + "' (known: " + known + ")");
}

}  // namespace concord::algos
