// What the five MinAtar games share through the registry and the vector engine: their ids and
// spaces, the settings a run passes them, and uint8 observations kept as uint8 end to end.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "concord/envs/minatar/minatar_game.h"
#include "concord/envs/registry.h"
#include "concord/envs/vector_env.h"

namespace concord::envs::minatar {
namespace {

struct Game {
  std::string name;
  int channels;
  int minimal_actions;
};

// MinAtar's channel counts and minimal action sets.
const std::vector<Game> kGames = {
    {"Asterix", 4, 5}, {"Breakout", 4, 3}, {"Freeway", 7, 3}, {"Seaquest", 10, 6}, {"SpaceInvaders", 6, 4}};

TEST(MinAtarRegistry, EveryGameIsRegisteredWithBothActionSets) {
  for (const Game& game : kGames) {
    const auto full = make_env("MinAtar/" + game.name + "-v0");
    const auto minimal = make_env("MinAtar/" + game.name + "-v1");
    const std::string box = "Box(0, 1, (10, 10, " + std::to_string(game.channels) + "), uint8)";
    EXPECT_EQ(full->spec().observation_space.to_string(), box) << game.name;
    EXPECT_EQ(minimal->spec().observation_space.to_string(), box) << game.name;
    EXPECT_EQ(full->spec().action_space.to_string(), "Discrete(6)") << game.name;
    EXPECT_EQ(minimal->spec().action_space.n(), game.minimal_actions) << game.name;
    EXPECT_EQ(full->spec().observation_space.byte_size(), 100 * game.channels) << game.name;
    EXPECT_EQ(full->spec().max_episode_steps, 0) << game.name;
  }
}

TEST(MinAtarRegistry, SettingsReachTheGameAndBadOnesAreRefusedByName) {
  EnvOptions options;
  options.sticky_action_probability = 0.25;
  options.difficulty_ramping = false;
  const auto env = make_env("MinAtar/Breakout-v1", options);
  const auto& game = dynamic_cast<const MinAtarGame&>(*env);
  EXPECT_EQ(game.options().sticky_action_probability, 0.25);
  EXPECT_FALSE(game.options().difficulty_ramping);
  EXPECT_TRUE(game.options().minimal_action_set);

  options.sticky_action_probability = 1.5;
  try {
    make_env("MinAtar/Breakout-v1", options);
    FAIL() << "a sticky-action probability of 1.5 was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(std::string(error.what()), "env.sticky_action_probability = 1.5 must lie in [0, 1]");
  }
  EnvOptions ramping;
  ramping.difficulty_ramping = true;
  try {
    make_env("CartPole-v1", ramping);
    FAIL() << "CartPole-v1 accepted env.difficulty_ramping";
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(std::string(error.what()), "env.difficulty_ramping is set, but CartPole-v1 has no such setting");
  }
  EXPECT_THROW(make_env("MinAtar/Pong-v0"), std::invalid_argument);
}

// env.max_episode_steps is every env's (Gymnasium's make(id, max_episode_steps=N)): MinAtar has no
// limit of its own, and without sticky actions a greedy policy can play one episode forever.
TEST(MinAtarRegistry, AnyEnvTakesATimeLimitInPlaceOfItsOwn) {
  EnvOptions options;
  options.max_episode_steps = 3;
  options.sticky_action_probability = 0.0;
  for (const std::string id : {"MinAtar/Breakout-v1", "CartPole-v1"}) {
    EnvOptions these = options;
    if (id == "CartPole-v1") these.sticky_action_probability.reset();
    const auto env = make_env(id, these);
    EXPECT_EQ(env->spec().max_episode_steps, 3) << id;
    std::vector<uint8_t> observation(static_cast<size_t>(env->spec().observation_space.byte_size()));
    env->reset(7, observation.data());
    const Action noop{0, nullptr};
    EXPECT_FALSE(env->step(noop, observation.data()).truncated) << id;
    EXPECT_FALSE(env->step(noop, observation.data()).truncated) << id;
    EXPECT_TRUE(env->step(noop, observation.data()).truncated) << id << ": the third step ends the episode";
  }
  EXPECT_EQ(make_env("MinAtar/Breakout-v1")->spec().max_episode_steps, 0) << "MinAtar's own: none";
  options.max_episode_steps = 0;
  try {
    make_env("CartPole-v1", options);
    FAIL() << "a limit of 0 steps was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(std::string(error.what()),
              "env.max_episode_steps = 0 must be >= 1 (leave it unset for the environment's own limit)");
  }
}

TEST(MinAtarRegistry, VectorEngineKeepsUint8Observations) {
  VectorEnvConfig config;
  config.env_id = "MinAtar/Seaquest-v0";
  config.num_envs = 6;
  config.num_threads = 2;
  config.seed = 3;
  VectorEnv env(config);
  EXPECT_EQ(env.obs_dim(), 1000);
  EXPECT_EQ(env.obs_bytes(), 1000);
  Batch batch = env.reset();
  EXPECT_EQ(batch.obs_dtype, Dtype::kUInt8);
  EXPECT_THROW(batch.observations_as<float>(), std::logic_error);
  std::vector<int64_t> actions(6);
  int64_t finals = 0;
  for (int step = 0; step < 3000; ++step) {
    // Dive and fire, so that episodes end (a sub that stays at the surface never dies).
    for (int64_t i = 0; i < 6; ++i) actions[static_cast<size_t>(i)] = (step + i) % 3 == 0 ? kDown : kFire;
    batch = env.step(actions.data());
    const uint8_t* rows = batch.observations_as<uint8_t>();
    for (int64_t i = 0; i < 6 * 1000; ++i) ASSERT_LE(rows[i], 1) << "step " << step;
    for (int64_t row = 0; row < 6; ++row) {
      if (!batch.has_final[row]) continue;
      ++finals;
      // The final observation is the ended episode's own: the player's sub is on screen.
      int64_t lit = 0;
      for (int64_t i = 0; i < 1000; ++i) lit += batch.final_observations_as<uint8_t>()[row * 1000 + i];
      EXPECT_GT(lit, 0);
    }
  }
  EXPECT_GT(finals, 0);
}

// A run's trajectory depends only on the seed and the actions: two engines with different
// thread counts see the same bytes.
TEST(MinAtarRegistry, ObservationsDependOnTheSeedNotOnThreads) {
  for (const Game& game : kGames) {
    std::vector<std::vector<uint8_t>> seen;
    for (const int threads : {1, 2}) {
      VectorEnvConfig config;
      config.env_id = "MinAtar/" + game.name + "-v0";
      config.num_envs = 4;
      config.num_threads = threads;
      config.seed = 11;
      VectorEnv env(config);
      env.reset();
      std::vector<uint8_t> bytes;
      std::vector<int64_t> actions(4);
      for (int step = 0; step < 200; ++step) {
        for (int64_t i = 0; i < 4; ++i) actions[static_cast<size_t>(i)] = (step * 7 + i * 3) % 6;
        const Batch batch = env.step(actions.data());
        const uint8_t* rows = batch.observations_as<uint8_t>();
        bytes.insert(bytes.end(), rows, rows + 4 * env.obs_bytes());
        for (int64_t row = 0; row < 4; ++row) bytes.push_back(static_cast<uint8_t>(batch.rewards[row]));
      }
      seen.push_back(std::move(bytes));
    }
    EXPECT_EQ(seen[0], seen[1]) << game.name;
  }
}

}  // namespace
}  // namespace concord::envs::minatar
