#include "concord/envs/minatar/minatar_game.h"

#include <algorithm>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace concord::envs::minatar {
namespace {

EnvSpec make_spec(const std::string& game, int channels, const std::vector<int>& minimal_actions,
                  const MinAtarOptions& options) {
  MinAtarGame::validate(options);
  const int64_t actions = options.minimal_action_set ? static_cast<int64_t>(minimal_actions.size()) : kNumFullActions;
  return EnvSpec{MinAtarGame::id_for(game, options.minimal_action_set),
                 Space::box({kGridSize, kGridSize, channels}, 0.0f, 1.0f, Dtype::kUInt8), Space::discrete(actions),
                 /*max_episode_steps=*/0, std::nullopt};
}

}  // namespace

std::string MinAtarGame::id_for(const std::string& game, bool minimal_action_set) {
  return "MinAtar/" + game + (minimal_action_set ? "-v1" : "-v0");
}

void MinAtarGame::validate(const MinAtarOptions& options) {
  const double p = options.sticky_action_probability;
  if (!(p >= 0.0 && p <= 1.0)) {
    std::ostringstream message;
    message << "env.sticky_action_probability = " << p << " must lie in [0, 1]";
    throw std::invalid_argument(message.str());
  }
}

MinAtarGame::MinAtarGame(const std::string& game, int channels, std::vector<int> minimal_actions,
                         MinAtarOptions options)
    : ByteEnv(make_spec(game, channels, minimal_actions, options)), options_(options), channels_(channels) {
  if (options_.minimal_action_set) {
    action_set_ = std::move(minimal_actions);
  } else {
    action_set_.resize(kNumFullActions);
    std::iota(action_set_.begin(), action_set_.end(), 0);
  }
}

double MinAtarGame::uniform() { return core::uniform(rng(), 0.0, 1.0); }

int MinAtarGame::uniform_int(int n) { return static_cast<int>(core::uniform_index(rng(), n)); }

void MinAtarGame::reset_state(uint8_t* observation) {
  new_game();
  write(observation);
}

StepResult MinAtarGame::step_state(const Action& action, uint8_t* observation) {
  int chosen = full_action(action.index);
  if (uniform() < options_.sticky_action_probability) chosen = last_action_;
  last_action_ = chosen;
  const GameStep step = act(chosen);
  write(observation);
  StepResult result;
  result.reward = step.reward;
  result.terminated = step.terminal;
  return result;
}

void MinAtarGame::write(uint8_t* observation) const {
  std::fill_n(observation, kGridSize * kGridSize * channels_, uint8_t{0});
  Grid grid(observation, channels_);
  draw(grid);
}

}  // namespace concord::envs::minatar
