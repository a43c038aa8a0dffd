#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "concord/core/config.h"

namespace concord::core {

// config.get_int(key) as an int; throws ConfigError naming the key when it does not fit.
int get_int_in_range(const Config& config, const std::string& key);

// One config key of a component, declared beside the component's config struct: the key under
// the component's prefix, the member it is read into, and a one-line doc. Its default is the
// member's value in a default-constructed struct, so no default is written twice.
//
//   struct HogwildConfig {
//     int workers = 2;
//     static const ConfigFields<HogwildConfig>& fields();   // {{"workers", &HogwildConfig::workers, "..."}}
//   };
//   declare_config<HogwildConfig>(schema, "policy.hogwild.");    // policy.hogwild.workers = 2
//   read_config<HogwildConfig>(config, "policy.hogwild.")        // -> HogwildConfig
//
// An int member is declared as an int key and read with a range check.
template <typename Struct>
class ConfigField {
 public:
  // Value is double, int64_t, int, bool, std::string or std::vector<int64_t>.
  // `former`, if set, is a name the key had before (ConfigSchema::declare_former_name): still
  // accepted, with a note.
  template <typename Value>
  ConfigField(const char* key, Value Struct::*member, const char* doc, const char* former = nullptr)
      : key_(key),
        doc_(doc),
        former_(former),
        declare_([member](ConfigSchema& schema, const std::string& name, const Struct& defaults, const char* text) {
          schema.declare(name, as_config_value(defaults.*member), text);
        }),
        read_([member](const Config& config, const std::string& name, Struct& into) {
          into.*member = read_value<Value>(config, name);
        }) {}

  const char* key() const { return key_; }
  const char* doc() const { return doc_; }
  // Declares prefix + key() with the member's value in `defaults`.
  void declare(ConfigSchema& schema, const std::string& prefix, const Struct& defaults) const {
    declare_(schema, prefix + key_, defaults, doc_);
    if (former_ != nullptr) schema.declare_former_name(prefix + former_, prefix + key_);
  }
  // Reads prefix + key() into the member of `into`.
  void read(const Config& config, const std::string& prefix, Struct& into) const { read_(config, prefix + key_, into); }

 private:
  // Each field keeps the code for its own member type only: visiting a variant of every member
  // type would compile (and warn about) reads of, say, a vector out of a struct of two ints.
  template <typename Value>
  static ConfigValue as_config_value(const Value& value) {
    if constexpr (std::is_same_v<Value, int>) {
      return int64_t{value};
    } else {
      static_assert(std::is_same_v<Value, double> || std::is_same_v<Value, int64_t> || std::is_same_v<Value, bool> ||
                        std::is_same_v<Value, std::string> || std::is_same_v<Value, std::vector<int64_t>>,
                    "a config field is a double, int64_t, int, bool, std::string or std::vector<int64_t>");
      return value;
    }
  }

  template <typename Value>
  static Value read_value(const Config& config, const std::string& name) {
    if constexpr (std::is_same_v<Value, double>) {
      return config.get_double(name);
    } else if constexpr (std::is_same_v<Value, int64_t>) {
      return config.get_int(name);
    } else if constexpr (std::is_same_v<Value, int>) {
      return get_int_in_range(config, name);
    } else if constexpr (std::is_same_v<Value, bool>) {
      return config.get_bool(name);
    } else if constexpr (std::is_same_v<Value, std::string>) {
      return config.get_string(name);
    } else {
      return config.get_int_list(name);
    }
  }

  const char* key_;
  const char* doc_;
  const char* former_;  // nullptr: the key was never renamed
  std::function<void(ConfigSchema&, const std::string&, const Struct&, const char*)> declare_;
  std::function<void(const Config&, const std::string&, Struct&)> read_;
};

template <typename Struct>
using ConfigFields = std::vector<ConfigField<Struct>>;

// Declares prefix + field.key() for every field, with its value in `defaults` as the default.
// Throws std::logic_error if a key is already declared.
template <typename Struct>
void declare_fields(ConfigSchema& schema, const std::string& prefix, const ConfigFields<Struct>& fields,
                    const Struct& defaults = Struct()) {
  for (const ConfigField<Struct>& field : fields) field.declare(schema, prefix, defaults);
}

// `into` with every field read from prefix + field.key() of `config`; members without a field
// keep their value in `into`.
template <typename Struct>
Struct read_fields(const Config& config, const std::string& prefix, const ConfigFields<Struct>& fields,
                   Struct into = Struct()) {
  for (const ConfigField<Struct>& field : fields) field.read(config, prefix, into);
  return into;
}

// The same for a struct that lists its own fields in `static const ConfigFields<Struct>& fields()`.
template <typename Struct>
void declare_config(ConfigSchema& schema, const std::string& prefix) {
  declare_fields(schema, prefix, Struct::fields());
}

template <typename Struct>
Struct read_config(const Config& config, const std::string& prefix) {
  return read_fields(config, prefix, Struct::fields());
}

}  // namespace concord::core
