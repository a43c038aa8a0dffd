// The bonus beta / sqrt(n(phi(s))) on a worked example (the batch is counted before its bonus is
// read, as in Algorithm 1 of Tang et al.), checkpoints, the registry's config keys and errors.
#include <cmath>
#include <memory>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/core/config.h"
#include "concord/envs/space.h"
#include "concord/explore/ae_sim_hash.h"
#include "concord/explore/bonus_registry.h"
#include "concord/explore/count_bonus.h"
#include "concord/explore/exact_counter.h"
#include "concord/explore/sim_hash.h"

namespace concord::explore {
namespace {

CountBonus one_hot_bonus(double beta) {
  return CountBonus(std::make_unique<SimHash>(/*input_dim=*/4, /*bits=*/32, /*seed=*/1),
                    std::make_unique<ExactCounter>(32), beta);
}

TEST(CountBonus, IsBetaOverTheSquareRootOfVisitsCountingTheBatchFirst) {
  CountBonus bonus = one_hot_bonus(/*beta=*/0.5);
  const torch::Tensor s1 = torch::tensor({1.0f, 0.0f, 0.0f, 0.0f});
  const torch::Tensor s2 = torch::tensor({0.0f, 1.0f, 0.0f, 0.0f});
  // Batch (s1, s1, s2): n(s1) = 2, n(s2) = 1 once the batch is counted.
  const torch::Tensor first = bonus.visit(torch::stack({s1, s1, s2}));
  const float root_half = static_cast<float>(0.5 / std::sqrt(2.0));
  EXPECT_TRUE(torch::allclose(first, torch::tensor({root_half, root_half, 0.5f})));
  // Then (s2, s1): n(s2) = 2, n(s1) = 3.
  const torch::Tensor second = bonus.visit(torch::stack({s2, s1}));
  EXPECT_TRUE(torch::allclose(second, torch::tensor({root_half, static_cast<float>(0.5 / std::sqrt(3.0))})));
}

TEST(CountBonus, SavesAndRestoresHashAndCounts) {
  CountBonus original = one_hot_bonus(0.1);
  original.visit(torch::eye(4));
  original.visit(torch::eye(4));
  core::Checkpoint checkpoint;
  original.save(checkpoint);
  EXPECT_EQ(checkpoint.tensors.count("explore/hash/projection"), 1u);

  CountBonus restored(std::make_unique<SimHash>(4, 32, /*seed=*/99), std::make_unique<ExactCounter>(32), 0.1);
  restored.load(checkpoint);
  // Third visit of each state in both.
  EXPECT_TRUE(torch::allclose(restored.visit(torch::eye(4)), original.visit(torch::eye(4))));
  EXPECT_NEAR(restored.visit(torch::eye(4))[0].item<double>(), 0.1 / 2.0, 1e-7);  // fourth visit
}

core::Config explore_config() {
  core::ConfigSchema schema;
  schema.declare("run.seed", int64_t{1}, "seed");
  declare_explore_keys(schema);
  return core::Config(schema);
}

TEST(BonusRegistry, NoneIsTheDefaultAndBuildsNothing) {
  const core::Config config = explore_config();
  EXPECT_EQ(config.get_string("explore.bonus"), "none");
  EXPECT_EQ(make_bonus(config, envs::Space::box({2}, -1.0f, 1.0f)), nullptr);
}

TEST(BonusRegistry, BuildsSimHashAndAeSimHashWithEitherCounter) {
  for (const char* name : {"simhash", "ae_simhash"}) {
    for (const char* counter : {"sketch", "exact"}) {
      core::Config config = explore_config();
      config.set("explore.bonus", std::string(name), "test");
      config.set("explore.counter", std::string(counter), "test");
      config.set("explore.sketch.table_size", int64_t{1009}, "test");
      config.set("explore.simhash.k", int64_t{16}, "test");
      std::unique_ptr<Bonus> bonus = make_bonus(config, envs::Space::box({2}, -1.0f, 1.0f));
      ASSERT_NE(bonus, nullptr) << name;
      const torch::Tensor values = bonus->visit(torch::rand({8, 2}));
      EXPECT_EQ(values.size(0), 8);
      EXPECT_TRUE(torch::all(values <= 0.01 + 1e-7).item<bool>()) << name << " " << counter;
    }
  }
}

TEST(BonusRegistry, AnUnknownBonusOrCounterIsOneClearError) {
  core::Config config = explore_config();
  config.set("explore.bonus", std::string("simhas"), "test");
  try {
    make_bonus(config, envs::Space::box({2}, -1.0f, 1.0f));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(),
                 "unknown exploration bonus 'simhas' for explore.bonus: did you mean simhash? (known: none, simhash, "
                 "ae_simhash)");
  }
  config.set("explore.bonus", std::string("simhash"), "test");
  config.set("explore.counter", std::string("bloom"), "test");
  EXPECT_THROW(make_bonus(config, envs::Space::box({2}, -1.0f, 1.0f)), std::invalid_argument);
  EXPECT_THROW(config.apply_override("explore.simhash.bits=16"), core::ConfigError);
}

TEST(AeSimHash, CodesAreBinaryAndTheLossFallsWhileLearning) {
  torch::manual_seed(3);
  AeSimHashConfig ae;
  ae.code_size = 8;
  ae.hidden_sizes = {32};
  ae.learning_rate = 3e-3;
  AeSimHash hash(envs::Space::box({6}, 0.0f, 1.0f), ae, /*bits=*/16, /*seed=*/1);
  const torch::Tensor states = torch::eye(6);
  hash.learn(states);
  const double first_loss = hash.last_loss();
  for (int i = 0; i < 300; ++i) hash.learn(states);
  EXPECT_LT(hash.last_loss(), first_loss);
  const torch::Tensor codes = hash.codes(states);
  EXPECT_EQ(codes.sizes(), (std::vector<int64_t>{6, 16}));
  EXPECT_TRUE(torch::all(codes.le(1)).item<bool>());

  core::Checkpoint checkpoint;
  hash.save(checkpoint, "explore/hash/");
  AeSimHash restored(envs::Space::box({6}, 0.0f, 1.0f), ae, 16, /*seed=*/2);
  restored.load(checkpoint, "explore/hash/");
  EXPECT_TRUE(torch::equal(restored.codes(states), codes));

  // Adam's moments travel too: one more step of the restored copy equals one of the original.
  torch::manual_seed(9);
  hash.learn(states);
  torch::manual_seed(9);
  restored.learn(states);
  core::Checkpoint original_after;
  core::Checkpoint restored_after;
  hash.save(original_after, "p/");
  restored.save(restored_after, "p/");
  int compared = 0;
  for (const auto& [name, tensor] : original_after.tensors) {
    if (name.rfind("p/ae/", 0) != 0 || name == "p/ae/optimizer") continue;
    ++compared;
    EXPECT_TRUE(torch::equal(tensor, restored_after.tensors.at(name))) << name;
  }
  EXPECT_GT(compared, 0);

  checkpoint.tensors.erase("explore/hash/ae/optimizer");
  EXPECT_THROW(restored.load(checkpoint, "explore/hash/"), core::CheckpointError);
}

TEST(AeSimHash, RejectsBadSettingsListingThemAll) {
  AeSimHashConfig ae;
  ae.code_size = 0;
  ae.learning_rate = -1.0;
  try {
    AeSimHash(envs::Space::box({2}, 0.0f, 1.0f), ae, 16, 1);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("code_size=0"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("learning_rate"), std::string::npos);
  }
}

}  // namespace
}  // namespace concord::explore
