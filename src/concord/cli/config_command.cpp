#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "concord/cli/commands.h"
#include "concord/cli/run_config.h"
#include "concord/core/did_you_mean.h"

namespace concord::cli {
namespace {

// The part of the TOML text for `section` and the sections below it ("policy" prints every
// [policy.*]); the top level is the section "".
std::string section_toml(const core::Config& config, const std::string& section) {
  std::set<std::string> sections;
  for (const auto& [key, entry] : config.schema().entries()) {
    for (size_t dot = key.find('.'); dot != std::string::npos; dot = key.find('.', dot + 1)) {
      sections.insert(key.substr(0, dot));
    }
  }
  if (sections.count(section) == 0) {
    const std::vector<std::string> names(sections.begin(), sections.end());
    throw core::ConfigError("unknown config section '" + section + "'" + core::did_you_mean(section, names) +
                            " (sections: run, log, env, train, algo.<name>, policy.<name>, explore, sync, comm, eval, "
                            "fit, gan, rollout)");
  }
  std::istringstream all(config.to_toml());
  std::ostringstream out;
  bool inside = false;
  std::string line;
  while (std::getline(all, line)) {
    if (line.size() > 2 && line.front() == '[' && line.back() == ']') {
      const std::string name = line.substr(1, line.size() - 2);
      inside = name == section || name.rfind(section + ".", 0) == 0;
      if (inside && out.tellp() > 0) out << "\n";
    }
    if (inside && !line.empty()) out << line << "\n";
  }
  return out.str();
}

}  // namespace

void add_config_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand(
      "config", "Print the resolved configuration (defaults, files, --set) as TOML, every key with its doc");
  auto flags = std::make_shared<RunFlags>();
  auto section = std::make_shared<std::string>();
  command->add_option("section", *section,
                      "Print only this section and those below it, e.g. policy.central_inference, algo.ppo, env");
  add_run_flags(*command, *flags);
  command->callback([flags, section] {
    const core::Config config = resolve_config(*flags);
    std::cout << (section->empty() ? config.to_toml() : section_toml(config, *section));
  });
}

}  // namespace concord::cli
