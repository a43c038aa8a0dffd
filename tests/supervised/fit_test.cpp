// A short fit per strategy on the real MNIST digits (installed by scripts/setup.sh) clearly
// learns: test accuracy far above chance (10%) within seconds.
#include "concord/supervised/fit.h"

#include <ostream>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/sync/sync_registry.h"

namespace concord::supervised {
namespace {

core::Config fit_test_config() {
  core::ConfigSchema schema;
  schema.declare("run.seed", int64_t{1}, "seed");
  declare_fit_keys(schema);
  sync::declare_sync_keys(schema);
  return core::Config(schema);
}

const data::MnistSplit& mnist() {
  static const data::MnistSplit split = data::load_mnist(data::default_data_dir());
  return split;
}

struct StrategyCase {
  std::string strategy;
  std::vector<std::string> overrides;
  double min_accuracy = 0.8;  // chance is 0.1
};

// ctest lists the case by its strategy, not by the struct's bytes.
void PrintTo(const StrategyCase& test_case, std::ostream* out) { *out << test_case.strategy; }

class FitStrategyTest : public ::testing::TestWithParam<StrategyCase> {};

TEST_P(FitStrategyTest, LearnsWellAboveChance) {
  torch::set_num_threads(1);
  core::Config config = fit_test_config();
  config.set("fit.strategy", GetParam().strategy, "test");
  config.set("fit.steps", int64_t{250}, "test");
  config.set("fit.eval_interval", int64_t{250}, "test");
  for (const auto& assignment : GetParam().overrides) config.apply_override(assignment, "test");
  const FitConfig fit = fit_config_from(config);
  std::vector<FitRecord> records;
  FitCallbacks callbacks;
  callbacks.on_evaluation = [&](const FitRecord& record) { records.push_back(record); };
  const FitResult result = fit_with_threads(fit, config, mnist(), callbacks);
  EXPECT_GT(result.final.test.accuracy, GetParam().min_accuracy) << GetParam().strategy;
  EXPECT_FALSE(records.empty());
  EXPECT_GT(result.final.sync.bytes, 0);
  EXPECT_GT(result.final.sync.rounds, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Strategies, FitStrategyTest,
    ::testing::Values(StrategyCase{"sync", {}}, StrategyCase{"local_sgd", {"sync.local_sgd.local_steps=4"}},
                      StrategyCase{"easgd", {"sync.easgd.tau=4"}},
                      StrategyCase{"gossip", {}},
                      StrategyCase{"fedavg", {"fit.fedavg.rounds=10", "fit.eval_interval=10",
                                              "fit.fedavg.local_epochs=2"}},
                      // Two digits per client: ten rounds learn, more slowly than IID.
                      StrategyCase{"fedavg",
                                   {"fit.fedavg.rounds=10", "fit.eval_interval=10", "fit.fedavg.partition=non_iid", "fit.fedavg.local_epochs=2",
                                    "fit.fedavg.client_fraction=0.2"},
                                   0.5}),
    [](const ::testing::TestParamInfo<StrategyCase>& test_case) {
      return test_case.param.strategy + std::to_string(test_case.index);
    });

// Stopping at a target accuracy stops every worker at the same evaluation.
TEST(FitTest, StopsAtTheTargetAccuracy) {
  core::Config config = fit_test_config();
  config.set("fit.steps", int64_t{2000}, "test");
  config.set("fit.eval_interval", int64_t{25}, "test");
  config.set("fit.target_accuracy", 0.6, "test");
  const FitResult result = fit_with_threads(fit_config_from(config), config, mnist(), {});
  EXPECT_GT(result.steps_to_target, 0);
  EXPECT_EQ(result.final.step, result.steps_to_target);
  EXPECT_LT(result.final.step, 2000);
}

TEST(FitTest, UnknownStrategyIsRefused) {
  core::Config config = fit_test_config();
  config.set("fit.strategy", std::string("telepathy"), "test");
  EXPECT_THROW(fit_with_threads(fit_config_from(config), config, mnist(), {}), std::invalid_argument);
}

}  // namespace
}  // namespace concord::supervised
