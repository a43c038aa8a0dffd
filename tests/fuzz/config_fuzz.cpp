// libFuzzer target: the TOML config reader, its schema checks, `--set key=value` overrides, and the
// validation of a config struct read from it.
//
// Input: a TOML document; every line that starts with "--set " is taken out of it and applied,
// in order, as an override after the document is merged (as `concord train --config f --set ...`
// does). Expected failures are ConfigError (bad key, type or syntax) and std::invalid_argument
// (a value the component refuses): `concord` prints either as one line. Anything else escaping,
// a crash or UB is a finding, and so is a resolved config that to_toml() cannot write back to the
// same values (`concord config` prints it, and a run directory keeps it as config.toml).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "concord/core/config.h"
#include "concord/core/config_fields.h"
#include "concord/core/config_problems.h"
#include "concord/supervised/gan_config.h"

namespace {

using concord::core::Config;
using concord::core::ConfigError;
using concord::core::ConfigSchema;

// Every member type a ConfigField supports, so that read_fields() exercises each conversion,
// including the range check of an int member.
struct FuzzComponent {
  int workers = 2;
  int64_t steps = 100;
  double rate = 0.5;
  bool enabled = true;
  std::string mode = "fast";
  std::vector<int64_t> hidden = {64, 64};

  static const concord::core::ConfigFields<FuzzComponent>& fields() {
    static const concord::core::ConfigFields<FuzzComponent> kFields = {
        {"workers", &FuzzComponent::workers, "threads"}, {"steps", &FuzzComponent::steps, "steps"},
        {"rate", &FuzzComponent::rate, "rate"},          {"enabled", &FuzzComponent::enabled, "on or off"},
        {"mode", &FuzzComponent::mode, "fast or slow"},  {"hidden", &FuzzComponent::hidden, "layer sizes"},
    };
    return kFields;
  }

  void validate() const {
    concord::core::ConfigProblems problems;
    problems.check(workers >= 1, "workers", workers, ">= 1");
    problems.check(rate > 0.0 && rate <= 1.0, "rate", rate, "in (0, 1]");
    problems.check(mode == "fast" || mode == "slow", "mode", mode, "fast or slow");
    problems.check(!hidden.empty(), "hidden", hidden, "non-empty");
    problems.throw_if_any("fuzz.component config");
  }
};

// A schema shaped like Concord's: sections, nested sections, top-level keys, and every value type.
ConfigSchema fuzz_schema() {
  ConfigSchema schema;
  schema.declare("run.seed", int64_t{1}, "Seed");
  schema.declare("run.root", std::string("runs"), "Run directory root");
  schema.declare("run.progress_interval_seconds", 5.0, "Seconds between progress lines");
  schema.declare("log.csv", true, "Write metrics.csv");
  schema.declare("env.id", std::string("CartPole-v1"), "Environment id");
  schema.declare("env.num_envs", int64_t{16}, "Environments");
  schema.declare("algo.ppo.hidden_sizes", std::vector<int64_t>{64, 64}, "Hidden layer sizes");
  schema.declare("algo.ppo.gamma", 0.99, "Discount");
  schema.declare("comm.interface", std::string(""), "Network interface");
  schema.declare("top_level", int64_t{0}, "A key outside any section");
  concord::core::declare_config<FuzzComponent>(schema, "fuzz.component.");
  concord::supervised::declare_gan_keys(schema);
  return schema;
}

// Reading what to_toml() wrote must give the same config: same digest, and the same value of
// every key. Failing to read it back at all is as much a bug as reading other values.
void check_round_trip(const Config& config) {
  const std::string text = config.to_toml();
  Config again(config.schema());
  again.merge_toml(text, "to_toml()");  // any exception here escapes: a finding
  for (const auto& [key, entry] : config.schema().entries()) {
    const auto& before = config.get(key);
    const auto& after = again.get(key);
    // NaN compares unequal to itself; the digest compares its text.
    const bool nan = std::holds_alternative<double>(before) && std::get<double>(before) != std::get<double>(before);
    if (before.index() != after.index() || (!nan && before != after)) {
      std::fprintf(stderr, "config_fuzz: '%s' does not survive to_toml():\n%s\n", key.c_str(), text.c_str());
      std::abort();
    }
  }
  if (again.digest() != config.digest()) {
    std::fprintf(stderr, "config_fuzz: digest changes through to_toml():\n%s\n", text.c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ConfigSchema schema = fuzz_schema();
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  std::string document;
  std::vector<std::string> overrides;
  size_t start = 0;
  while (start <= input.size()) {
    size_t end = input.find('\n', start);
    if (end == std::string_view::npos) end = input.size();
    const std::string_view line = input.substr(start, end - start);
    if (line.rfind("--set ", 0) == 0) {
      overrides.emplace_back(line.substr(6));
    } else {
      document.append(line);
      if (end < input.size()) document.push_back('\n');
    }
    start = end + 1;
  }

  Config config(schema);
  try {
    config.merge_toml(document, "'fuzz.toml'");
  } catch (const ConfigError&) {
    // A rejected document must leave the config as it was.
    if (config.digest() != Config(schema).digest()) std::abort();
  }
  for (const std::string& assignment : overrides) {
    try {
      config.apply_override(assignment);
    } catch (const ConfigError&) {
    }
  }
  check_round_trip(config);

  try {
    concord::core::read_config<FuzzComponent>(config, "fuzz.component.").validate();
  } catch (const ConfigError&) {
  } catch (const std::invalid_argument&) {
  }
  try {
    const auto gan = concord::supervised::gan_config_from(config);
    // What was accepted is what the config says, not a truncation of it.
    if (gan.pairs != config.get_int("gan.pairs")) std::abort();
  } catch (const ConfigError&) {
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
