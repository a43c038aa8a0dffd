#pragma once

// What the MinAtar games' tests share: stepping a game by action index, and reading cells of
// its channel-last observation.

#include <cstdint>
#include <vector>

#include "concord/envs/env.h"
#include "concord/envs/minatar/minatar_game.h"

namespace concord::envs::minatar::testing {

inline Action action(int64_t index) {
  Action a;
  a.index = index;
  return a;
}

// No sticky actions, ramping on, all six actions: a step does exactly what its action says,
// unless the game itself draws (a spawn).
inline MinAtarOptions deterministic() { return {0.0, true, false}; }

// Whether cell (row, column) of `channel` is set in an observation with `channels` channels.
inline bool lit(const std::vector<uint8_t>& obs, int channels, int row, int column, int channel) {
  return obs[static_cast<size_t>((row * kGridSize + column) * channels + channel)] == 1;
}

// How many cells of `channel` are set.
inline int count(const std::vector<uint8_t>& obs, int channels, int channel) {
  int total = 0;
  for (int cell = 0; cell < kGridSize * kGridSize; ++cell) total += obs[static_cast<size_t>(cell * channels + channel)];
  return total;
}

// A game reset with `seed`, and the observation its steps write.
template <typename Game>
struct GameHarness {
  explicit GameHarness(MinAtarOptions options = deterministic(), uint64_t seed = 1)
      : env(options), obs(static_cast<size_t>(kGridSize * kGridSize * Game::kChannels)) {
    env.reset(seed, obs.data());
  }
  StepResult step(int64_t index) { return env.step(action(index), obs.data()); }
  bool cell(int row, int column, int channel) const { return lit(obs, Game::kChannels, row, column, channel); }
  int count(int channel) const { return testing::count(obs, Game::kChannels, channel); }

  Game env;
  std::vector<uint8_t> obs;
};

}  // namespace concord::envs::minatar::testing
