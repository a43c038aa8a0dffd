#include "concord/core/registry.h"

#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace concord::core {
namespace {

TEST(Registry, LooksEntriesUpByName) {
  const Registry<int> registry("number", {{"one", 1}, {"two", 2}});
  EXPECT_EQ(registry.at("one"), 1);
  EXPECT_EQ(registry.at("two"), 2);
  EXPECT_TRUE(registry.contains("two"));
  EXPECT_FALSE(registry.contains("three"));
  EXPECT_EQ(registry.kind(), "number");
}

TEST(Registry, ListsNamesInRegistrationOrder) {
  Registry<int> registry("policy");
  registry.add("single", 0);
  registry.add("hogwild", 1);
  registry.add("central_inference", 2);
  registry.add("actor_processes", 3);
  EXPECT_EQ(registry.names(), (std::vector<std::string>{"single", "hogwild", "central_inference", "actor_processes"}));
  ASSERT_EQ(registry.entries().size(), 4u);
  EXPECT_EQ(registry.entries()[2].first, "central_inference");
  EXPECT_EQ(registry.entries()[2].second, 2);
}

TEST(Registry, AnUnknownNameIsOneErrorListingTheKnownOnes) {
  const Registry<int> algorithms("algorithm", {{"a2c", 0}, {"ppo", 1}});
  try {
    algorithms.at("x");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "unknown algorithm 'x' (known: a2c, ppo)");
  }

  // With the config key that names an entry.
  const Registry<int> bonuses("exploration bonus", "explore.bonus", {{"none", 0}, {"simhash", 1}});
  try {
    bonuses.at("simhas");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(),
                 "unknown exploration bonus 'simhas' for explore.bonus: did you mean simhash? (known: none, simhash)");
  }

  const Registry<int> empty("environment");
  EXPECT_THROW(empty.at(""), std::invalid_argument);
  EXPECT_STREQ(unknown_name_error("environment", "", "Foo-v0", {}).what(), "unknown environment 'Foo-v0' (known: )");
}

TEST(Registry, RefusesANameRegisteredTwice) {
  Registry<int> registry("environment", {{"CartPole-v1", 0}});
  try {
    registry.add("CartPole-v1", 1);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "environment 'CartPole-v1' is already registered");
  }
  EXPECT_EQ(registry.at("CartPole-v1"), 0);
  EXPECT_EQ(registry.names().size(), 1u);
}

}  // namespace
}  // namespace concord::core
