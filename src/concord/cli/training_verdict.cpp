#include "concord/cli/training_verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "concord/core/progress_bar.h"

namespace concord::cli {
namespace {

constexpr int64_t kReturnWindow = 100;  // core::EpisodeStats' default window

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", value);
  return text;
}

// A threshold as `concord envs` lists it: 475, -110, 0.5.
std::string threshold_text(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (size_t i = 0; i < names.size(); ++i) text += (i == 0 ? "" : ", ") + names[i];
  return text;
}

}  // namespace

void ReturnTrack::sample() {
  const std::optional<double> mean = stats_.recent_mean_return();
  if (!mean) return;
  if (!first_) first_ = mean;
  last_ = mean;
  best_ = best_ ? std::max(*best_, *mean) : *mean;
}

int64_t ReturnTrack::window() const { return std::min(stats_.count(), kReturnWindow); }

std::string counted(int64_t count, const std::string& singular, const std::string& plural) {
  return core::format_count(count) + " " + (count == 1 ? singular : plural);
}

bool never_left_start(double first, double best, std::optional<double> threshold) {
  const double margin =
      threshold && *threshold > first ? 0.1 * (*threshold - first) : std::max(0.1 * std::abs(first), 0.5);
  return best - first < margin;
}

std::vector<SummaryLine> training_verdict(const VerdictFacts& facts) {
  std::vector<SummaryLine> lines;
  const ReturnTrack& returns = facts.returns;
  if (returns.last()) {
    lines.push_back({"return", "last " + number(*returns.last()) + ", best " + number(*returns.best()) + ", first " +
                                   number(*returns.first()) + " (mean of the latest " +
                                   (returns.window() == returns.episodes()
                                        ? counted(returns.window(), "episode", "episodes")
                                        : core::format_count(returns.window()) + " of " +
                                              counted(returns.episodes(), "episode", "episodes")) +
                                   (facts.updates > 0 ? ", at each update)" : ")")});
  } else {
    lines.push_back({"return", "no episode ended in " + counted(facts.steps, "env step", "env steps")});
  }
  if (facts.reward_threshold) {
    std::string verdict = threshold_text(*facts.reward_threshold);
    if (!returns.best()) {
      verdict += ": not reached (no episode ended)";
    } else if (*returns.best() >= *facts.reward_threshold) {
      verdict += ": reached";
    } else {
      // Training episodes act with exploration (sampled actions, an actor's epsilon): under Ape-X
      // an agent whose greedy policy scores 500 can fall short here, so say where to look.
      verdict += ": not reached in training (best " + number(*returns.best()) +
                 "; training explores, concord eval measures the greedy policy)";
    }
    lines.push_back({"threshold", verdict});
  }
  const std::string schedule = facts.update_schedule.empty() ? "" : " (" + facts.update_schedule + ")";
  const std::string sooner = facts.sooner_settings.empty() ? "" : " or lower " + facts.sooner_settings;
  if (facts.updates == 0) {
    lines.push_back({"warning", "the learner made no update in " + counted(facts.steps, "env step", "env steps") +
                                    schedule + ", so the agent is untrained: train for more steps (--total-timesteps)" +
                                    sooner});
    return lines;
  }
  if (facts.updates < kFewUpdates) {
    lines.push_back({"warning", "the learner made only " + counted(facts.updates, "update", "updates") + " in " +
                                    counted(facts.steps, "env step", "env steps") + schedule +
                                    ", so the agent has barely trained: train for more steps (--total-timesteps)" +
                                    sooner});
    return lines;
  }
  if (returns.first() && returns.best() &&
      never_left_start(*returns.first(), *returns.best(), facts.reward_threshold)) {
    std::string change = "train for more steps (--total-timesteps)";
    if (!facts.presets.empty()) {
      change += " or start from a shipped preset for this env (--config " + joined(facts.presets) + ")";
    } else {
      change += " or tune the algorithm (concord config algo)";
    }
    lines.push_back({"warning", "the mean return never left the untrained policy's level (first " +
                                    number(*returns.first()) + ", best " + number(*returns.best()) +
                                    "), so the agent learned nothing visible: " + change});
  }
  return lines;
}

std::vector<std::string> presets_not_given(const std::vector<std::string>& presets,
                                           const std::vector<std::string>& config_files) {
  std::vector<std::string> left;
  for (const std::string& preset : presets) {
    const bool given = std::any_of(config_files.begin(), config_files.end(), [&](const std::string& file) {
      return std::filesystem::path(file).stem().string() == preset;
    });
    if (!given) left.push_back(preset);
  }
  return left;
}

}  // namespace concord::cli
