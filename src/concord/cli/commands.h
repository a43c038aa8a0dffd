#pragma once

namespace CLI {
class App;
}

namespace concord::cli {

// Each subcommand adds itself to the top-level app; its callback runs the command and throws
// on failure (main() turns any exception into one error line and a non-zero exit).
void add_envs_command(CLI::App& app);
void add_config_command(CLI::App& app);
void add_rollout_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_launch_command(CLI::App& app);
void add_fit_command(CLI::App& app);

}  // namespace concord::cli
