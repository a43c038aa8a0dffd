#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "concord/envs/env.h"

namespace concord::envs::minatar {

// MinAtar (Young & Tian 2019, arXiv:1903.03176): five Atari-like games on a 10x10 grid, each
// observed as Box(0, 1, (10, 10, channels), uint8), one binary channel per kind of object.
inline constexpr int kGridSize = 10;

// MinAtar's full action set, in its order; every game reads actions in this numbering.
enum FullAction : int { kNoop = 0, kLeft = 1, kUp = 2, kRight = 3, kDown = 4, kFire = 5 };
inline constexpr int kNumFullActions = 6;

// What every game takes from config.
struct MinAtarOptions {
  // With this probability the previous action is repeated instead of the chosen one (MinAtar's
  // default 0.1). Must lie in [0, 1].
  double sticky_action_probability = 0.1;
  // Games speed up as they go on (MinAtar's default); off keeps the starting speeds.
  bool difficulty_ramping = true;
  // The -v1 ids: the action space is the game's minimal action set instead of all six.
  bool minimal_action_set = false;
};

// A game's step: MinAtar's act() returns (reward, terminal).
struct GameStep {
  float reward = 0.0f;
  bool terminal = false;
};

// The observation of one game state, channel-last like MinAtar's state(): cell (row, column) of
// channel c is observation[(row * 10 + column) * channels + c]. Rows count from the top.
class Grid {
 public:
  Grid(uint8_t* observation, int channels) : observation_(observation), channels_(channels) {}
  // Sets the cell; coordinates outside the grid are ignored (objects partly off screen).
  void set(int row, int column, int channel) {
    if (row < 0 || row >= kGridSize || column < 0 || column >= kGridSize) return;
    observation_[(row * kGridSize + column) * channels_ + channel] = 1;
  }

 private:
  uint8_t* observation_;
  int channels_;
};

// What the five games share: their ids and spaces, sticky actions, the -v1 action mapping, and
// writing the observation. A game implements new_game(), act() and draw() on its own state.
//
// Sticky actions follow MinAtar's Environment.act(): one uniform draw per step decides whether
// the previous (full-set) action is repeated; the previous action starts at no-op and is kept
// across episodes, as MinAtar keeps it. Episodes end only through the game's own terminal
// (Freeway's time limit included), so the spec has no max_episode_steps.
class MinAtarGame : public ByteEnv {
 public:
  // "MinAtar/Breakout-v0" (all six actions) or "-v1" (the minimal set).
  static std::string id_for(const std::string& game, bool minimal_action_set);
  // Throws std::invalid_argument naming env.sticky_action_probability and its value when it lies
  // outside [0, 1].
  static void validate(const MinAtarOptions& options);

  const MinAtarOptions& options() const { return options_; }
  // The full-set action that index `action` of this env's action space stands for.
  int full_action(int64_t action) const { return action_set_[static_cast<size_t>(action)]; }
  // The full-set action the last step carried out (after stickiness).
  int last_action() const { return last_action_; }

 protected:
  // `minimal_actions` lists the game's minimal action set in full-set numbering, in MinAtar's order.
  MinAtarGame(const std::string& game, int channels, std::vector<int> minimal_actions, MinAtarOptions options);

  // Draws a fresh game state from rng().
  virtual void new_game() = 0;
  // Advances the game one step with a full-set action (already made sticky).
  virtual GameStep act(int action) = 0;
  // Marks every object of the current state on a zeroed grid.
  virtual void draw(Grid& grid) const = 0;

  bool ramping() const { return options_.difficulty_ramping; }
  // A uniform draw in [0, 1), numpy's rand().
  double uniform();
  // A uniform integer in [0, n), numpy's randint(n).
  int uniform_int(int n);

 private:
  void reset_state(uint8_t* observation) final;
  StepResult step_state(const Action& action, uint8_t* observation) final;
  void write(uint8_t* observation) const;

  MinAtarOptions options_;
  int channels_;
  std::vector<int> action_set_;
  int last_action_ = kNoop;
};

}  // namespace concord::envs::minatar
