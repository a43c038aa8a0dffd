#include "concord/core/config.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace concord::core {
namespace {

ConfigSchema test_schema() {
  ConfigSchema schema;
  schema.declare("seed", int64_t{1}, "Run seed");
  schema.declare("env.id", std::string("CartPole-v1"), "Environment id");
  schema.declare("env.num_envs", int64_t{8}, "Number of environments");
  schema.declare("algo.learning_rate", 2.5e-4, "Adam step size");
  schema.declare("algo.anneal_lr", true, "Anneal the learning rate");
  schema.declare("algo.hidden", std::vector<int64_t>{64, 64}, "Hidden layer sizes");
  return schema;
}

std::filesystem::path write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("concord_config_test_" + name);
  std::ofstream(path) << text;
  return path;
}

TEST(Config, StartsFromDefaults) {
  Config config(test_schema());
  EXPECT_EQ(config.get_int("seed"), 1);
  EXPECT_EQ(config.get_string("env.id"), "CartPole-v1");
  EXPECT_DOUBLE_EQ(config.get_double("algo.learning_rate"), 2.5e-4);
  EXPECT_TRUE(config.get_bool("algo.anneal_lr"));
  EXPECT_EQ(config.get_int_list("algo.hidden"), (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(config.origin("env.id"), "default");
}

TEST(Config, FileThenOverridesTakePrecedence) {
  Config config(test_schema());
  const auto path = write_temp("layers.toml", "seed = 3\n[env]\nid = \"Acrobot-v1\"\nnum_envs = 4\n");
  config.merge_file(path.string());
  EXPECT_EQ(config.get_int("seed"), 3);
  EXPECT_EQ(config.get_string("env.id"), "Acrobot-v1");
  config.apply_override("env.num_envs=16");
  config.apply_override("env.id=Pendulum-v1");
  config.apply_override("algo.learning_rate=1");  // an int where a float is declared is fine
  config.apply_override("algo.hidden=[32, 16, 8]");
  EXPECT_EQ(config.get_int("env.num_envs"), 16);
  EXPECT_EQ(config.get_string("env.id"), "Pendulum-v1");
  EXPECT_DOUBLE_EQ(config.get_double("algo.learning_rate"), 1.0);
  EXPECT_EQ(config.get_int_list("algo.hidden"), (std::vector<int64_t>{32, 16, 8}));
  EXPECT_EQ(config.origin("seed"), "'" + path.string() + "'");
  EXPECT_EQ(config.origin("env.num_envs"), "--set");
}

TEST(Config, UnknownKeyInFileNamesKeyAndFile) {
  Config config(test_schema());
  const auto path = write_temp("unknown.toml", "[env]\nnum_env = 4\n");
  try {
    config.merge_file(path.string());
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("'env.num_env'"), std::string::npos) << message;
    EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  }
  EXPECT_EQ(config.get_int("env.num_envs"), 8);
}

TEST(Config, UnknownSectionAndOverrideKeyAreErrors) {
  Config config(test_schema());
  EXPECT_THROW(config.merge_toml("[nope]\n", "inline"), ConfigError);
  try {
    config.apply_override("num_envs=4");
    FAIL();
  } catch (const ConfigError& error) {
    EXPECT_STREQ(error.what(), "unknown config key 'num_envs' in --set (did you mean env.num_envs?)");
  }
}

TEST(Config, WrongTypesAreErrors) {
  Config config(test_schema());
  EXPECT_THROW(config.apply_override("env.num_envs=abc"), ConfigError);
  EXPECT_THROW(config.apply_override("env.num_envs=2.5"), ConfigError);
  EXPECT_THROW(config.apply_override("algo.anneal_lr=1"), ConfigError);
  EXPECT_THROW(config.apply_override("algo.hidden=[1, 2.5]"), ConfigError);
  EXPECT_THROW(config.apply_override("novalue"), ConfigError);
  EXPECT_THROW(config.merge_toml("seed = \"x\"", "inline"), ConfigError);
  try {
    config.apply_override("env.num_envs=abc");
  } catch (const ConfigError& error) {
    EXPECT_STREQ(error.what(), "config key 'env.num_envs' in --set must be int, got 'abc'");
  }
}

TEST(Config, MissingAndUnparsableFiles) {
  Config config(test_schema());
  EXPECT_THROW(config.merge_file("/nonexistent/concord.toml"), ConfigError);
  const auto path = write_temp("broken.toml", "seed = = 3\n");
  try {
    config.merge_file(path.string());
    FAIL();
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("line 1"), std::string::npos) << error.what();
  }
}

TEST(Config, BadFileLeavesConfigUnchanged) {
  Config config(test_schema());
  EXPECT_THROW(config.merge_toml("seed = 5\nbogus = 1\n", "inline"), ConfigError);
  EXPECT_EQ(config.get_int("seed"), 1);
}

TEST(Config, ResolvedTomlRoundTripsAndDigestTracksValues) {
  Config config(test_schema());
  config.apply_override("algo.learning_rate=0.1");
  config.apply_override("env.id=Weird \"quoted\" id");
  const std::string text = config.to_toml();
  EXPECT_NE(text.find("# Adam step size\nlearning_rate = 0.1\n"), std::string::npos) << text;
  Config reread(test_schema());
  reread.merge_toml(text, "resolved");
  EXPECT_EQ(reread.get_string("env.id"), "Weird \"quoted\" id");
  EXPECT_DOUBLE_EQ(reread.get_double("algo.learning_rate"), 0.1);
  EXPECT_EQ(reread.digest(), config.digest());
  reread.apply_override("seed=2");
  EXPECT_NE(reread.digest(), config.digest());
}

// Found by tests/fuzz/config_fuzz: a bare word with a byte that is not UTF-8 (--set env.id=$'\xf7')
// was taken as is, and to_toml() wrote it as U+00F7, which reads back as other bytes.
TEST(Config, StringsThatAreNotUtf8AreRefused) {
  Config config(test_schema());
  EXPECT_THROW(config.apply_override("env.id=Cart\xf7Pole"), ConfigError);
  EXPECT_THROW(config.set("env.id", std::string("\xc0\xaf"), "--env"), ConfigError);  // overlong '/'
  EXPECT_EQ(config.get_string("env.id"), "CartPole-v1");
  config.apply_override("env.id=Cart\xc3\xb7Pole");  // U+00F7 spelled in UTF-8 is fine
  Config reread(test_schema());
  reread.merge_toml(config.to_toml(), "resolved");
  EXPECT_EQ(reread.get_string("env.id"), "Cart\xc3\xb7Pole");
}

// Found with tests/fuzz/config_fuzz: to_toml() and digest() threw std::out_of_range ("stod") for a
// subnormal value, so `--set algo.learning_rate=1e-310` ended a run with "error: stod".
TEST(Config, SubnormalFloatsRoundTrip) {
  Config config(test_schema());
  config.apply_override("algo.learning_rate=1e-310");
  Config reread(test_schema());
  reread.merge_toml(config.to_toml(), "resolved");
  EXPECT_EQ(reread.get_double("algo.learning_rate"), 1e-310);
  EXPECT_EQ(reread.digest(), config.digest());
}

TEST(ConfigSchema, DuplicateDeclarationIsALogicError) {
  ConfigSchema schema;
  schema.declare("a", int64_t{1}, "");
  EXPECT_THROW(schema.declare("a", int64_t{2}, ""), std::logic_error);
}

}  // namespace
}  // namespace concord::core
