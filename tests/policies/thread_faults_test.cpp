// Faults under every policy that runs threads, through the runtime they share
// (policies/runtime/workers.h): an environment that throws on one of a run's threads ends the run,
// on the calling thread, with one line naming the policy and the thread, and no thread left behind.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include <torch/torch.h>

#include "concord/algos/algorithm_registry.h"
#include "concord/algos/on_policy_learner.h"
#include "concord/core/config.h"
#include "concord/policies/policy_registry.h"
#include "envs/fake_env.h"
#include "hang_guard.h"

namespace concord::policies {
namespace {

struct Case {
  std::string policy;
  std::string algo;
  std::string thread;  // the thread that steps the run's first env, as the error names it
};

void PrintTo(const Case& c, std::ostream* out) { *out << c.policy << " / " << c.algo; }

class ThreadFaults : public ::testing::TestWithParam<Case> {};

TEST_P(ThreadFaults, AnEnvThatThrowsEndsTheRunInOneLineNamingThePolicyAndTheThread) {
  const Case& c = GetParam();
  core::ConfigSchema schema;
  algos::declare_algorithm_keys(schema);
  declare_policy_keys(schema);
  core::Config config(schema);
  config.apply_override("algo.hidden_sizes=[8]");
  config.apply_override("policy.hogwild.workers=2");
  config.apply_override("policy.central_inference.agents=2");
  config.apply_override("policy.apex.actors=2");
  envs::testing::FakeEnvOptions options;
  options.throw_at_step = 40;
  options.throw_instance = 1;  // instance 0 is the one make_policy makes to read the env's spec
  envs::VectorEnvConfig env;
  env.env_id = envs::testing::register_fake_env(options);
  env.num_envs = 4;
  std::unique_ptr<algos::Learner> learner =
      algos::make_learner(c.algo, config, envs::Space::box({4}, -1e9f, 1e9f), envs::Space::discrete(3));
  std::unique_ptr<Policy> policy = make_policy(c.policy, PolicyContext{config, env, *learner, torch::kCPU});

  std::string error;
  test::ends_within(std::chrono::seconds(60), "a run whose env throws", [&] {
    TrainingState state;
    try {
      policy->train(state, int64_t{1} << 40, int64_t{1} << 40, TrainingCallbacks{});
    } catch (const std::runtime_error& thrown) {
      error = thrown.what();
    }
  });
  EXPECT_THAT(error, ::testing::StartsWith("policy '" + c.policy + "': " + c.thread + " failed: "));
  EXPECT_THAT(error, ::testing::HasSubstr("FakeEnv: planned failure"));
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

INSTANTIATE_TEST_SUITE_P(
    EveryThreadedPolicy, ThreadFaults,
    ::testing::Values(Case{"hogwild", "a2c", "worker 0"}, Case{"hogwild", "dqn", "worker 0"},
                      Case{"central_inference", "a2c", "agent 0"}, Case{"central_inference", "dqn", "agent 0"},
                      Case{"async_learner", "ppo", "the collector"}, Case{"async_learner", "dqn", "the collector"},
                      Case{"apex", "dqn", "actor 0 of 2"}),
    [](const ::testing::TestParamInfo<Case>& info) { return info.param.policy + "_" + info.param.algo; });

}  // namespace
}  // namespace concord::policies
