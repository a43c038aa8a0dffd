#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "concord/cli/commands.h"
#include "concord/cli/run_config.h"

namespace concord::cli {

void add_config_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand("config", "Print the resolved configuration (defaults, files, --set) as TOML");
  auto flags = std::make_shared<RunFlags>();
  add_run_flags(*command, *flags);
  command->callback([flags] { std::cout << resolve_config(*flags).to_toml(); });
}

}  // namespace concord::cli
