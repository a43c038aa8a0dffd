#include "concord/core/config_fields.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "concord/core/config_problems.h"

namespace concord::core {
namespace {

struct ExampleConfig {
  double rate = 0.25;
  int64_t steps = 128;
  int workers = 3;
  bool enabled = true;
  std::string mode = "fast";
  std::vector<int64_t> sizes{64, 32};
  int unlisted = 7;  // no field: read_config leaves it alone

  static const ConfigFields<ExampleConfig>& fields() {
    static const ConfigFields<ExampleConfig> kFields = {
        {"rate", &ExampleConfig::rate, "A rate"},
        {"steps", &ExampleConfig::steps, "Steps"},
        {"workers", &ExampleConfig::workers, "Worker threads"},
        {"enabled", &ExampleConfig::enabled, "On or off"},
        {"mode", &ExampleConfig::mode, "fast or slow"},
        {"sizes", &ExampleConfig::sizes, "Layer sizes"},
    };
    return kFields;
  }

  void validate() const {
    ConfigProblems problems;
    problems.check(rate > 0.0, "rate", rate, "> 0");
    problems.check(workers >= 1, "workers", workers, ">= 1");
    bool positive = true;
    for (const int64_t size : sizes) positive = positive && size >= 1;
    problems.check(positive, "sizes", sizes, "all >= 1");
    problems.throw_if_any("example config");
  }
};

Config example_config() {
  ConfigSchema schema;
  declare_config<ExampleConfig>(schema, "example.");
  return Config(schema);
}

TEST(ConfigFields, DeclaresEveryFieldWithTheStructDefaultAndDoc) {
  ConfigSchema schema;
  declare_config<ExampleConfig>(schema, "example.");
  EXPECT_EQ(schema.entries().size(), 6u);
  EXPECT_EQ(std::get<double>(schema.at("example.rate").default_value), 0.25);
  EXPECT_EQ(std::get<int64_t>(schema.at("example.steps").default_value), 128);
  EXPECT_EQ(std::get<int64_t>(schema.at("example.workers").default_value), 3);  // an int is an int key
  EXPECT_TRUE(std::get<bool>(schema.at("example.enabled").default_value));
  EXPECT_EQ(std::get<std::string>(schema.at("example.mode").default_value), "fast");
  EXPECT_EQ(std::get<std::vector<int64_t>>(schema.at("example.sizes").default_value), (std::vector<int64_t>{64, 32}));
  EXPECT_EQ(schema.at("example.workers").doc, "Worker threads");
  EXPECT_THROW(declare_config<ExampleConfig>(schema, "example."), std::logic_error);
}

TEST(ConfigFields, ReadsBackWhatWasSet) {
  Config config = example_config();
  config.apply_override("example.rate=0.5");
  config.apply_override("example.steps=16");
  config.apply_override("example.workers=8");
  config.apply_override("example.enabled=false");
  config.apply_override("example.mode=slow");
  config.apply_override("example.sizes=[4]");
  const ExampleConfig read = read_config<ExampleConfig>(config, "example.");
  EXPECT_EQ(read.rate, 0.5);
  EXPECT_EQ(read.steps, 16);
  EXPECT_EQ(read.workers, 8);
  EXPECT_FALSE(read.enabled);
  EXPECT_EQ(read.mode, "slow");
  EXPECT_EQ(read.sizes, (std::vector<int64_t>{4}));
  EXPECT_EQ(read.unlisted, 7);

  const ExampleConfig defaults = read_config<ExampleConfig>(example_config(), "example.");
  EXPECT_EQ(defaults.rate, ExampleConfig().rate);
  EXPECT_EQ(defaults.workers, ExampleConfig().workers);
  EXPECT_EQ(defaults.sizes, ExampleConfig().sizes);
}

TEST(ConfigFields, AnIntOutOfRangeIsRefusedNamingTheKey) {
  Config config = example_config();
  config.apply_override("example.workers=4294967296");
  try {
    read_config<ExampleConfig>(config, "example.");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("'example.workers' = 4294967296 is out of range"), std::string::npos)
        << error.what();
  }
  config.apply_override("example.workers=-2147483648");
  EXPECT_EQ(read_config<ExampleConfig>(config, "example.").workers, -2147483648LL);
}

// A renamed key: the former name still sets it, from a file, --set or code, each time with one
// note naming where it was written and the new name; the schema and the TOML written know only
// the new name, and the former name cannot be declared again.
struct RenamedConfig {
  int actors = 2;
  static const ConfigFields<RenamedConfig>& fields() {
    static const ConfigFields<RenamedConfig> kFields = {{"actors", &RenamedConfig::actors, "Actors", "workers"}};
    return kFields;
  }
};

TEST(ConfigFields, AFormerNameStillSetsTheKeyWithANoteNamingTheNewOne) {
  ConfigSchema schema;
  declare_config<RenamedConfig>(schema, "policy.p.");
  EXPECT_FALSE(schema.contains("policy.p.workers"));
  ASSERT_NE(schema.renamed("policy.p.workers"), nullptr);
  EXPECT_EQ(*schema.renamed("policy.p.workers"), "policy.p.actors");
  EXPECT_THROW(schema.declare("policy.p.actors", int64_t{1}, "again"), std::logic_error);
  EXPECT_THROW(schema.declare_former_name("policy.p.workers", "policy.p.actors"), std::logic_error);

  Config config(schema);
  config.apply_override("policy.p.workers=5");
  EXPECT_EQ(read_config<RenamedConfig>(config, "policy.p.").actors, 5);
  ASSERT_EQ(config.notes().size(), 1u);
  EXPECT_EQ(config.notes()[0],
            "config key 'policy.p.workers' in --set is now called 'policy.p.actors'; the old name is still accepted");
  config.apply_override("policy.p.workers=6");  // the same note is not repeated
  EXPECT_EQ(config.notes().size(), 1u);
  config.merge_toml("[policy.p]\nworkers = 7\n", "'old.toml'");
  EXPECT_EQ(read_config<RenamedConfig>(config, "policy.p.").actors, 7);
  config.set("policy.p.workers", int64_t{8}, "--flag");
  EXPECT_EQ(read_config<RenamedConfig>(config, "policy.p.").actors, 8);
  ASSERT_EQ(config.notes().size(), 3u);
  EXPECT_NE(config.notes()[1].find("in 'old.toml'"), std::string::npos);
  EXPECT_EQ(config.to_toml().find("workers"), std::string::npos);
  EXPECT_EQ(config.origin("policy.p.actors"), "--flag");
  // The new name sets it without a note.
  config.apply_override("policy.p.actors=9");
  EXPECT_EQ(config.notes().size(), 3u);
}

TEST(ConfigProblems, ListsEveryBadValueAtOnce) {
  ExampleConfig bad;
  bad.rate = -1.0;
  bad.workers = 0;
  bad.sizes = {8, 0};
  try {
    bad.validate();
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(),
                 "invalid example config: rate=-1 must be > 0; workers=0 must be >= 1; sizes=[8, 0] must be all >= 1");
  }
  EXPECT_NO_THROW(ExampleConfig().validate());

  ConfigProblems worded;
  worded.add("mode must be \"fast\" or \"slow\", got \"warp\"");
  EXPECT_FALSE(worded.empty());
  EXPECT_THROW(worded.throw_if_any("example config"), std::invalid_argument);
  EXPECT_EQ(validated(ExampleConfig()).steps, 128);
}

}  // namespace
}  // namespace concord::core
