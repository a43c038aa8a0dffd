#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "concord/core/episode_stats.h"

namespace concord::cli {

// The mean return over the recent episodes (core::EpisodeStats' window of 100) as a run saw it
// at each update: at the first update where an episode had ended (the untrained policy's level:
// on-policy learners act with their initial network until then, off-policy ones at random until
// learning_starts), at the last, and the best. Fed every ended episode (TrainingCallbacks'
// on_episode) and sampled at every update; finish() samples once more, so that a run with no
// update still has its episodes' mean.
class ReturnTrack {
 public:
  void add_episode(double episode_return, int64_t episode_length) { stats_.add(episode_return, episode_length); }
  void sample();
  void finish() { sample(); }

  int64_t episodes() const { return stats_.count(); }
  // The episodes the last mean is over: min(episodes, 100).
  int64_t window() const;
  std::optional<double> first() const { return first_; }
  std::optional<double> last() const { return last_; }
  std::optional<double> best() const { return best_; }

 private:
  core::EpisodeStats stats_;
  std::optional<double> first_;
  std::optional<double> last_;
  std::optional<double> best_;
};

// What the verdict at the end of `concord train` is drawn from.
struct VerdictFacts {
  int64_t steps = 0;                       // env steps of the run (its total, also after a resume)
  int64_t updates = 0;                     // learner updates of the run (its total)
  ReturnTrack returns;                     // as this process saw them
  std::optional<double> reward_threshold;  // the env's (envs::EnvSpec), where it has one
  // When updates come, as a user can change it: "its first comes after algo.dqn.learning_starts=1000
  // env steps", "each takes algo.ppo.num_steps x env.num_envs = 512 env steps".
  std::string update_schedule;
  // The settings that make updates come sooner: "algo.dqn.learning_starts".
  std::string sooner_settings;
  // Shipped presets for this env ("ppo_mountain_car"), suggested when nothing was learned.
  std::vector<std::string> presets;
};

// One line of the summary: a label (the summary's left column) and its text.
struct SummaryLine {
  std::string label;
  std::string text;
};

// Fewer learner updates than this, and the run is said to have barely trained.
inline constexpr int64_t kFewUpdates = 10;

// The summary lines that judge a run: "return" (last and best mean over the recent episodes, and
// the level at the first update), "threshold" (the env's reward threshold and whether the best
// mean reached it), and a "warning" line for each thing to change: no or almost no updates (with
// the schedule and the settings that bring them sooner), or a return that never left the
// untrained policy's level (see returned_to_start).
std::vector<SummaryLine> training_verdict(const VerdictFacts& facts);

// Whether `best` stayed at the level of `first`: within a tenth of the way to the threshold
// where the env has one above `first`, else within a tenth of |first| (at least 0.5, a MinAtar
// reward being 1).
bool never_left_start(double first, double best, std::optional<double> threshold);

// `presets` less those the run was given (--config dqn_apex_cartpole or configs/dqn_apex_cartpole.toml):
// a warning should not suggest starting from the preset that just learned nothing.
std::vector<std::string> presets_not_given(const std::vector<std::string>& presets,
                                           const std::vector<std::string>& config_files);

// "1 update", "2 updates": `count` and the noun, plural unless count is 1 (count formatted
// with thousands separators).
std::string counted(int64_t count, const std::string& singular, const std::string& plural);

}  // namespace concord::cli
