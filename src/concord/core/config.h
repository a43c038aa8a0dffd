#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace concord::core {

// A bad key, value or file. The message is one line and names the key and where it came from.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A scalar or a list of integers (e.g. hidden layer sizes): the value types a config key can hold.
using ConfigValue = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>>;

// Every key a program accepts, with its default and a one-line doc. Keys are dotted
// ("env.num_envs"), which in a TOML file is the table [env] with the key num_envs. A key's type
// is its default's type; an integer is accepted where a float is declared.
class ConfigSchema {
 public:
  struct Entry {
    ConfigValue default_value;
    std::string doc;
  };

  // Throws std::logic_error if the key is already declared: two components must not share one.
  void declare(const std::string& key, ConfigValue default_value, const std::string& doc);
  // A name `key` had before it was renamed: still accepted wherever a key is written, as `key`,
  // with a note (Config::notes()). Throws std::logic_error if `former` is a key or already a
  // former name.
  void declare_former_name(const std::string& former, const std::string& key);
  bool contains(const std::string& key) const { return entries_.count(key) > 0; }
  const Entry& at(const std::string& key) const;
  const std::map<std::string, Entry>& entries() const { return entries_; }
  // The key a former name now is; nullptr if `name` is not one.
  const std::string* renamed(const std::string& name) const;

 private:
  std::map<std::string, Entry> entries_;
  std::map<std::string, std::string> former_names_;  // former name -> key
};

// A resolved configuration: the schema's defaults, then TOML files, then `--set key=value`
// overrides, each layer replacing the values it names. Unknown keys and values of the wrong
// type are errors naming the key and the file (or "--set"), never ignored.
class Config {
 public:
  explicit Config(ConfigSchema schema);

  // Merges a TOML file. Throws ConfigError for a missing or unparsable file, an unknown key or
  // a value of the wrong type; the message names the file.
  void merge_file(const std::string& path);
  // Merges TOML text; `source` names it in error messages.
  void merge_toml(const std::string& text, const std::string& source);
  // Applies "key=value"; the value is read as TOML (so 3, 0.5, true, [64, 64] work) and, for
  // string keys, a bare word is taken as the string.
  void apply_override(const std::string& assignment, const std::string& source = "--set");
  // Sets one key from code (e.g. a CLI flag), with the same type checks.
  void set(const std::string& key, ConfigValue value, const std::string& source);

  bool get_bool(const std::string& key) const;
  int64_t get_int(const std::string& key) const;
  double get_double(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  std::vector<int64_t> get_int_list(const std::string& key) const;
  const ConfigValue& get(const std::string& key) const;
  // Where the current value of a key came from: "default", a file path, "--set", a flag.
  const std::string& origin(const std::string& key) const;

  const ConfigSchema& schema() const { return schema_; }
  // One line for each former key name written so far (ConfigSchema::declare_former_name), saying
  // where and what it is now called, for the program to show; in the order they were met.
  const std::vector<std::string>& notes() const { return notes_; }
  // The resolved configuration as a TOML document, one table per section, each key preceded by
  // its doc as a comment. Reading it back with merge_toml yields the same values.
  std::string to_toml() const;
  // A stable hex digest of the resolved values, to check that several ranks agree.
  std::string digest() const;

 private:
  const ConfigSchema::Entry& entry_for(const std::string& key, const std::string& source) const;
  // `name`, or the key it is a former name of (with a note saying so).
  std::string current_name(const std::string& name, const std::string& source);

  ConfigSchema schema_;
  std::vector<std::string> notes_;
  std::map<std::string, ConfigValue> values_;
  std::map<std::string, std::string> origins_;
};

// "int", "float", "bool", "string" or "list of int": the type name used in error messages.
std::string config_type_name(const ConfigValue& value);

}  // namespace concord::core
