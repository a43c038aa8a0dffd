#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "concord/core/config.h"

namespace concord::core {

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
struct ConfigField {
  using Member = std::variant<double Struct::*, int64_t Struct::*, int Struct::*, bool Struct::*, std::string Struct::*,
                              std::vector<int64_t> Struct::*>;
  const char* key;
  Member member;
  const char* doc;
};

template <typename Struct>
using ConfigFields = std::vector<ConfigField<Struct>>;

// config.get_int(key) as an int; throws ConfigError naming the key when it does not fit.
int get_int_in_range(const Config& config, const std::string& key);

// Declares prefix + field.key for every field, with its value in `defaults` as the default.
// Throws std::logic_error if a key is already declared.
template <typename Struct>
void declare_fields(ConfigSchema& schema, const std::string& prefix, const ConfigFields<Struct>& fields,
                    const Struct& defaults = Struct()) {
  for (const ConfigField<Struct>& field : fields) {
    std::visit(
        [&](auto member) {
          using Value = std::remove_reference_t<decltype(defaults.*member)>;
          if constexpr (std::is_same_v<std::remove_const_t<Value>, int>) {
            schema.declare(prefix + field.key, int64_t{defaults.*member}, field.doc);
          } else {
            schema.declare(prefix + field.key, defaults.*member, field.doc);
          }
        },
        field.member);
  }
}

// `into` with every field read from prefix + field.key of `config`; members without a field keep
// their value in `into`.
template <typename Struct>
Struct read_fields(const Config& config, const std::string& prefix, const ConfigFields<Struct>& fields,
                   Struct into = Struct()) {
  for (const ConfigField<Struct>& field : fields) {
    const std::string key = prefix + field.key;
    std::visit(
        [&](auto member) {
          using Value = std::remove_reference_t<decltype(into.*member)>;
          if constexpr (std::is_same_v<Value, double>) {
            into.*member = config.get_double(key);
          } else if constexpr (std::is_same_v<Value, int64_t>) {
            into.*member = config.get_int(key);
          } else if constexpr (std::is_same_v<Value, int>) {
            into.*member = get_int_in_range(config, key);
          } else if constexpr (std::is_same_v<Value, bool>) {
            into.*member = config.get_bool(key);
          } else if constexpr (std::is_same_v<Value, std::string>) {
            into.*member = config.get_string(key);
          } else {
            into.*member = config.get_int_list(key);
          }
        },
        field.member);
  }
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
