// An env that calls an interpreter (EnvSpec::calls_interpreter, as Python envs do) runs under the
// policies whose model runs on one thread; every other policy refuses it in one line that names
// the ones that can.
#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/algos/algorithm_registry.h"
#include "concord/comm/thread_group.h"
#include "concord/envs/registry.h"
#include "concord/policies/policy_registry.h"

namespace concord::policies {
namespace {

constexpr const char* kEnvId = "test/Interpreted-v0";

// A one-step bandit whose spec says it calls an interpreter.
class InterpretedEnv final : public envs::FloatEnv {
 public:
  InterpretedEnv()
      : envs::FloatEnv(envs::EnvSpec{kEnvId, envs::Space::box({1}, -1.0f, 1.0f), envs::Space::discrete(2), 0,
                                     std::nullopt, /*calls_interpreter=*/true}) {}

 private:
  void reset_state(float* observation) override { observation[0] = 1.0f; }
  envs::StepResult step_state(const envs::Action& action, float* observation) override {
    observation[0] = 1.0f;
    return {static_cast<float>(action.index), true, false};
  }
};

class InterpreterEnvTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!envs::Registry::global().contains(kEnvId)) {
      envs::Registry::global().add(kEnvId, [] { return std::make_unique<InterpretedEnv>(); });
    }
  }

  InterpreterEnvTest() : config_(schema()) {
    env_.env_id = kEnvId;
    env_.num_envs = 4;
    learner_ = algos::as_on_policy(
        algos::make_learner("a2c", config_, envs::Space::box({1}, -1.0f, 1.0f), envs::Space::discrete(2)));
  }

  static core::ConfigSchema schema() {
    core::ConfigSchema result;
    algos::declare_algorithm_keys(result);
    declare_policy_keys(result);
    return result;
  }

  core::Config config_;
  envs::VectorEnvConfig env_;
  std::unique_ptr<algos::OnPolicyLearner> learner_;
};

TEST_F(InterpreterEnvTest, OneThreadPoliciesTrainIt) {
  for (const std::string name : {"single", "sync_vector"}) {
    std::unique_ptr<Policy> policy = make_policy(name, PolicyContext{config_, env_, *learner_, torch::kCPU});
    TrainingState state;
    policy->train(state, 64, int64_t{1} << 40, TrainingCallbacks{});
    EXPECT_GE(state.global_step, 64) << name;
  }
}

TEST_F(InterpreterEnvTest, OtherPoliciesRefuseItInOneLine) {
  auto communicator = comm::ThreadGroup(1).communicator(0);
  for (const std::string& name : policy_names()) {
    if (name == "single" || name == "sync_vector") continue;
    try {
      make_policy(name, PolicyContext{config_, env_, *learner_, torch::kCPU, communicator.get()});
      ADD_FAILURE() << name << " accepted an env that calls an interpreter";
    } catch (const std::invalid_argument& error) {
      EXPECT_EQ(std::string(error.what()),
                "policy '" + name + "' cannot train " + kEnvId +
                    ", an environment that calls Python (it steps envs from concurrent threads or other processes); "
                    "use train.policy single or sync_vector");
    }
  }
}

}  // namespace
}  // namespace concord::policies
