#include "concord/algos/algorithm_registry.h"

#include <stdexcept>
#include <type_traits>
#include <utility>

#include "concord/algos/a2c.h"
#include "concord/algos/dqn.h"
#include "concord/algos/ppo.h"
#include "concord/algos/sac.h"
#include "concord/core/config_fields.h"
#include "concord/core/registry.h"

namespace concord::algos {
namespace {

// An algorithm as the registry sees it: its keys under algo.<name>. and how to build its Learner.
struct Algorithm {
  void (*declare)(core::ConfigSchema& schema, const std::string& prefix);
  std::unique_ptr<Learner> (*make)(const core::Config& config, const std::string& prefix, nn::ActorCriticConfig network,
                                   torch::Device device);
  int64_t (*rollout_steps)(const core::Config& config, const std::string& prefix);
};

// An on-policy algorithm's config has num_steps, the T of its rollouts; one that learns from a
// replay has none.
template <typename Config, typename = void>
struct HasRollouts : std::false_type {};
template <typename Config>
struct HasRollouts<Config, std::void_t<decltype(Config::num_steps)>> : std::true_type {};

// The Algorithm of a Learner built from its config struct, whose field table gives the keys.
template <typename LearnerT, typename Config>
Algorithm algorithm() {
  return {core::declare_config<Config>,
          [](const core::Config& config, const std::string& prefix, nn::ActorCriticConfig network,
             torch::Device device) -> std::unique_ptr<Learner> {
            Config algorithm_config = core::read_config<Config>(config, prefix);
            algorithm_config.network = std::move(network);
            return std::make_unique<LearnerT>(std::move(algorithm_config), device);
          },
          [](const core::Config& config, const std::string& prefix) -> int64_t {
            if constexpr (HasRollouts<Config>::value) {
              return core::read_config<Config>(config, prefix).num_steps;
            } else {
              return 0;
            }
          }};
}

// The registry: one line per algorithm, sorted by name.
core::Registry<Algorithm> make_registry() {
  core::Registry<Algorithm> registry("algorithm");
  registry.add("a2c", algorithm<A2c, A2cConfig>());
  registry.add("dqn", algorithm<Dqn, DqnConfig>());
  registry.add("ppo", algorithm<Ppo, PpoConfig>());
  registry.add("sac", algorithm<Sac, SacConfig>());
  return registry;
}

const core::Registry<Algorithm>& algorithms() {
  static const core::Registry<Algorithm> registry = make_registry();
  return registry;
}

std::string prefix_of(const std::string& name) { return "algo." + name + "."; }

// The network keys every algorithm shares.
const std::string kNetworkPrefix = "algo.";

nn::ActorCriticConfig network_config(const core::Config& config, const envs::Space& observation_space,
                                     const envs::Space& action_space) {
  if (observation_space.is_discrete()) {
    throw std::invalid_argument("make_learner: observation space " + observation_space.to_string() +
                                " is not supported (a Box is needed)");
  }
  nn::ActorCriticConfig network = core::read_config<nn::ActorCriticConfig>(config, kNetworkPrefix);
  network.obs_shape = observation_space.shape();
  if (network.obs_shape.empty()) network.obs_shape = {1};  // a scalar Box
  if (action_space.is_discrete()) {
    network.action_kind = nn::ActionKind::kDiscrete;
    network.action_dim = action_space.n();
  } else {
    network.action_kind = nn::ActionKind::kContinuous;
    network.action_dim = action_space.flat_size();
    network.action_low.assign(action_space.low().begin(), action_space.low().end());
    network.action_high.assign(action_space.high().begin(), action_space.high().end());
  }
  return network;
}

}  // namespace

void declare_algorithm_keys(core::ConfigSchema& schema) {
  core::declare_config<nn::ActorCriticConfig>(schema, kNetworkPrefix);
  for (const auto& [name, algorithm] : algorithms().entries()) algorithm.declare(schema, prefix_of(name));
}

std::vector<std::string> algorithm_names() { return algorithms().names(); }

std::unique_ptr<Learner> make_learner(const std::string& name, const core::Config& config,
                                      const envs::Space& observation_space, const envs::Space& action_space,
                                      torch::Device device) {
  const Algorithm& algorithm = algorithms().at(name);
  return algorithm.make(config, prefix_of(name), network_config(config, observation_space, action_space), device);
}

}  // namespace concord::algos

namespace concord::algos {

int64_t rollout_steps(const std::string& name, const core::Config& config) {
  return algorithms().at(name).rollout_steps(config, prefix_of(name));
}

}  // namespace concord::algos
