// The same algorithm code under every distribution policy that can run it: short runs must
// learn CartPole-v1 (deterministic evaluation well above a random policy's ~22) on 2 of 3 seeds. Also the
// registry's refusals, which must name the setting to change.
#include <numeric>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "learning_outcome.h"
#include "policies/learning_runs.h"

#include "concord/algos/algorithm_registry.h"
#include "concord/policies/policy_registry.h"
#include "concord/policies/runtime/evaluation.h"

namespace concord::policies {
namespace {

core::ConfigSchema schema() {
  core::ConfigSchema result;
  algos::declare_algorithm_keys(result);
  declare_policy_keys(result);
  return result;
}

// Settings that learn CartPole in seconds: PPO with few, large-step epochs; A2C with 5-step
// rollouts (the algorithms' own tuned values are in configs/).
core::Config fast_config(const std::string& algo) {
  core::Config config(schema());
  if (algo == "ppo") {
    config.apply_override("algo.ppo.num_steps=32");
    config.apply_override("algo.ppo.num_minibatches=2");
    config.apply_override("algo.ppo.update_epochs=4");
    config.apply_override("algo.ppo.learning_rate=3e-3");
    config.apply_override("algo.ppo.gamma=0.98");
    config.apply_override("algo.ppo.gae_lambda=0.8");
    config.apply_override("algo.ppo.ent_coef=0.0");
  }
  return config;
}

envs::VectorEnvConfig cartpole(int num_envs, int threads, uint64_t seed = 7) {
  envs::VectorEnvConfig env;
  env.env_id = "CartPole-v1";
  env.num_envs = num_envs;
  env.num_threads = threads;
  env.seed = seed;
  return env;
}

// The shipped configs (configs/ppo_cartpole.toml, configs/a2c_cartpole.toml: RL Zoo's tuned
// hyperparameters, 8 envs), read from the files so that the tests follow them: their [algo]
// tables, env.num_envs and train.total_timesteps. What these cases used before (PPO's fast settings
// above for 60,000 steps, A2C's defaults on 16 envs for 150,000) missed the bar on 12 and 6 of 20
// seed-kernel runs in the sweep of bench/RESULTS.md; the shipped ones reached 500 on all 36 tried
// (seeds 1-6, three kernels).
struct Case {
  std::string policy;
  std::string algo;
  int num_envs;
  int env_threads;
  int64_t steps;
  std::vector<std::string> overrides;
  // A config under configs/ whose [algo] tables replace fast_config's settings (read once, when
  // the case is made); overrides go on top.
  std::optional<testing::Shipped> shipped_config;
};

// A case that trains configs/<file> as shipped, plus `overrides`.
Case shipped_case(const std::string& policy, int env_threads, const std::string& file,
                  std::vector<std::string> overrides = {}) {
  const testing::Shipped config = testing::shipped(file);
  return Case{policy, config.algo, config.num_envs, env_threads, config.total_timesteps, std::move(overrides), config};
}

void PrintTo(const Case& c, std::ostream* out) { *out << c.policy << " / " << c.algo; }

class PolicyLearning : public ::testing::TestWithParam<Case> {};

// The deterministic evaluation return of one training run from `seed`.
double train_and_evaluate(const Case& c, uint64_t seed) {
  torch::manual_seed(seed);
  core::Config config = fast_config(c.algo);
  if (c.shipped_config) {
    config = core::Config(schema());
    config.merge_toml(c.shipped_config->algo_tables, "the [algo] tables of configs/" + c.shipped_config->file);
  }
  for (const std::string& assignment : c.overrides) config.apply_override(assignment);
  const envs::VectorEnvConfig env = cartpole(c.num_envs, c.env_threads, seed);
  const envs::Space observations = envs::Space::box({4}, -1.0f, 1.0f);
  std::unique_ptr<algos::OnPolicyLearner> learner =
      algos::as_on_policy(algos::make_learner(c.algo, config, observations, envs::Space::discrete(2)));
  std::unique_ptr<Policy> policy = make_policy(c.policy, PolicyContext{config, env, *learner, torch::kCPU});

  TrainingState state;
  int64_t episodes = 0;
  TrainingCallbacks callbacks;
  callbacks.on_episode = [&](double, int64_t) { ++episodes; };
  policy->train(state, c.steps, /*checkpoint_interval_steps=*/int64_t{1} << 40, callbacks);
  EXPECT_GE(state.global_step, c.steps);
  EXPECT_GT(state.updates, 0);
  EXPECT_GT(episodes, 0);

  envs::VectorEnvConfig eval_env = env;
  eval_env.seed = 99 + seed;
  const std::vector<double> returns = runtime::evaluate_episodes(*learner, eval_env, 10);
  return std::accumulate(returns.begin(), returns.end(), 0.0) / static_cast<double>(returns.size());
}

TEST_P(PolicyLearning, ReturnRisesWellAboveRandom) {
  const Case& c = GetParam();
  // Threaded policies' runs depend on scheduling too (hogwild's interleaving, central_inference's
  // lag), so their bar is lower; both are far above a random policy's ~22.
  const bool threaded = c.policy == "hogwild" || c.policy == "central_inference";
  EXPECT_TRUE(test::learns([&](uint64_t seed) { return train_and_evaluate(c, seed); },
                           test::LearningBar{threaded ? 100.0 : 150.0}))
      << c.policy << " / " << c.algo;
}

INSTANTIATE_TEST_SUITE_P(
    EveryCompatiblePair, PolicyLearning,
    ::testing::Values(
        shipped_case("single", 1, "ppo_cartpole.toml"), shipped_case("sync_vector", 2, "ppo_cartpole.toml"),
        shipped_case("single", 1, "a2c_cartpole.toml"), shipped_case("sync_vector", 2, "a2c_cartpole.toml"),
        // One update of lag: PPO's ratio corrects it, A2C needs V-trace.
        shipped_case("async_learner", 1, "ppo_cartpole.toml"),
        shipped_case("async_learner", 1, "a2c_cartpole.toml", {"algo.a2c.vtrace=true"}),
        Case{"hogwild", "a2c", 8, 1, 150'000, {"policy.hogwild.workers=2"}, std::nullopt},
        // The shipped PPO config (20 epochs per update), each of 2 workers with the
        // config's 8 envs: the batch that config is tuned for.
        Case{"hogwild", "ppo", 8, 1, 100'000, {"policy.hogwild.workers=2"}, testing::shipped("ppo_cartpole.toml")},
        // Lagged experience: V-trace corrects A2C; backpressure (a short training queue)
        // keeps the lag near 10 updates.
        Case{"central_inference",
             "a2c",
             16,
             1,
             120'000,
             {"policy.central_inference.agents=8", "policy.central_inference.training_batch=2",
              "policy.central_inference.queue_capacity=8", "algo.a2c.vtrace=true", "algo.a2c.optimizer=\"adam\"",
              "algo.a2c.learning_rate=1e-3", "algo.a2c.num_steps=16", "algo.a2c.ent_coef=0.0",
              "algo.a2c.anneal_lr=true"},
             std::nullopt},
        Case{"central_inference",
             "ppo",
             16,
             1,
             100'000,
             {"policy.central_inference.agents=8", "policy.central_inference.training_batch=2",
              "policy.central_inference.queue_capacity=8"},
             std::nullopt}),
    [](const ::testing::TestParamInfo<Case>& param_info) {
      return param_info.param.policy + "_" + param_info.param.algo;
    });

std::string refusal(const std::string& policy, const std::string& algo, const envs::VectorEnvConfig& env,
                    const std::vector<std::string>& overrides = {}) {
  core::Config config = fast_config(algo);
  for (const std::string& assignment : overrides) config.apply_override(assignment);
  std::unique_ptr<algos::OnPolicyLearner> learner = algos::as_on_policy(
      algos::make_learner(algo, config, envs::Space::box({4}, -1.0f, 1.0f), envs::Space::discrete(2)));
  try {
    make_policy(policy, PolicyContext{config, env, *learner, torch::kCPU});
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "";
}

TEST(PolicyRegistry, RefusesWhatCannotWorkAndSaysWhy) {
  EXPECT_EQ(refusal("gossip", "a2c", cartpole(4, 1)),
            "unknown policy 'gossip' (known: single, sync_vector, hogwild, central_inference, async_learner, "
            "multi_learner, actor_processes, apex, seed_rl)");
  EXPECT_NE(refusal("single", "a2c", cartpole(4, 2)).find("use policy 'sync_vector'"), std::string::npos);
  // PPO's default update is 4 epochs x 4 minibatches, each a lock-free step.
  EXPECT_EQ(refusal("hogwild", "ppo", cartpole(4, 1), {"algo.ppo.num_minibatches=4"}), "");
  // Each worker steps env.num_envs envs, so any count works.
  EXPECT_EQ(refusal("hogwild", "a2c", cartpole(5, 1)), "");
  EXPECT_NE(refusal("hogwild", "a2c", cartpole(4, 2)).find("set env.num_threads = 1"), std::string::npos);
  EXPECT_NE(refusal("async_learner", "a2c", cartpole(4, 1)).find("set algo.a2c.vtrace = true"), std::string::npos);
  EXPECT_EQ(refusal("async_learner", "a2c", cartpole(4, 1), {"algo.a2c.vtrace=true"}), "");
  EXPECT_EQ(refusal("async_learner", "a2c", cartpole(4, 1), {"policy.async_learner.max_policy_lag=0"}), "");
}

TEST(PolicyRegistry, NamesAreTheRegistryLines) {
  EXPECT_EQ(policy_names(),
            (std::vector<std::string>{"single", "sync_vector", "hogwild", "central_inference", "async_learner",
                                      "multi_learner", "actor_processes", "apex", "seed_rl"}));
}

TEST(PolicyRegistry, RoundsPerUpdateComeFromThePolicysOwnConfig) {
  core::ConfigSchema schema;
  declare_policy_keys(schema);
  core::Config config(schema);
  config.apply_override("policy.central_inference.agents=4");
  config.apply_override("policy.central_inference.training_batch=6");
  EXPECT_EQ(rounds_per_update("central_inference", config), 2);
  config.apply_override("policy.central_inference.training_batch=0");
  EXPECT_EQ(rounds_per_update("central_inference", config), 1);
  for (const std::string& name : policy_names()) {
    if (name != "central_inference") EXPECT_EQ(rounds_per_update(name, config), 1) << name;
  }
}

}  // namespace
}  // namespace concord::policies
