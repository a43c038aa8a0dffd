#include <algorithm>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "concord/cli/commands.h"
#include "concord/envs/registry.h"

namespace concord::cli {

void add_envs_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand("envs", "List the registered environments with their spaces");
  command->callback([] {
    struct Row {
      std::string id, observation, action, max_steps, threshold;
    };
    std::vector<Row> rows{{"id", "observation space", "action space", "max steps", "solved at"}};
    for (const std::string& id : envs::Registry::global().ids()) {
      std::unique_ptr<envs::Env> env;
      try {
        env = envs::make_env(id);
      } catch (const std::invalid_argument& error) {
        // An env that cannot be made without settings (MuJoCo/Custom-v0 needs its model file):
        // its row says what it needs instead of failing the whole list.
        const std::string what = error.what();
        const size_t colon = what.find(": ");
        rows.push_back({id, "(" + (colon == std::string::npos ? what : what.substr(colon + 2)) + ")", "", "", ""});
        continue;
      }
      const envs::EnvSpec& spec = env->spec();
      rows.push_back({id, spec.observation_space.to_string(), spec.action_space.to_string(),
                      std::to_string(spec.max_episode_steps),
                      spec.reward_threshold ? std::to_string(static_cast<int>(*spec.reward_threshold)) : "-"});
    }
    size_t widths[4] = {0, 0, 0, 0};
    for (const Row& row : rows) {
      widths[0] = std::max(widths[0], row.id.size());
      widths[1] = std::max(widths[1], row.observation.size());
      widths[2] = std::max(widths[2], row.action.size());
      widths[3] = std::max(widths[3], row.max_steps.size());
    }
    for (const Row& row : rows) {
      std::printf("%-*s  %-*s  %-*s  %*s  %s\n", static_cast<int>(widths[0]), row.id.c_str(),
                  static_cast<int>(widths[1]), row.observation.c_str(), static_cast<int>(widths[2]), row.action.c_str(),
                  static_cast<int>(widths[3]), row.max_steps.c_str(), row.threshold.c_str());
    }
  });
}

}  // namespace concord::cli
