#include "concord/core/config.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <sstream>

#include <toml++/toml.h>

#include "concord/core/did_you_mean.h"

namespace concord::core {
namespace {

// Converts one TOML node into a value of the same type as `like`, or throws ConfigError.
ConfigValue convert_node(const toml::node& node, const ConfigValue& like, const std::string& key,
                         const std::string& source) {
  auto mismatch = [&](const std::string& got) {
    return ConfigError("config key '" + key + "' in " + source + " must be " + config_type_name(like) + ", got " + got);
  };
  auto node_type = [](const toml::node& n) -> std::string {
    if (n.is_integer()) return "int";
    if (n.is_floating_point()) return "float";
    if (n.is_boolean()) return "bool";
    if (n.is_string()) return "string";
    if (n.is_array()) return "array";
    if (n.is_table()) return "table";
    return "other";
  };
  if (std::holds_alternative<bool>(like)) {
    if (auto v = node.value_exact<bool>()) return *v;
  } else if (std::holds_alternative<int64_t>(like)) {
    if (auto v = node.value_exact<int64_t>()) return *v;
  } else if (std::holds_alternative<double>(like)) {
    if (node.is_floating_point()) return node.as_floating_point()->get();
    if (node.is_integer()) return static_cast<double>(node.as_integer()->get());
  } else if (std::holds_alternative<std::string>(like)) {
    if (auto v = node.value_exact<std::string>()) return *v;
  } else if (std::holds_alternative<std::vector<int64_t>>(like)) {
    if (const toml::array* array = node.as_array()) {
      std::vector<int64_t> list;
      for (const toml::node& element : *array) {
        auto v = element.value_exact<int64_t>();
        if (!v) throw mismatch("an array holding " + node_type(element));
        list.push_back(*v);
      }
      return list;
    }
  }
  throw mismatch(node_type(node));
}

// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool is_utf8(const std::string& text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const int length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
    if (length == 0 || i + length > text.size()) return false;
    uint32_t code = length == 1 ? lead : lead & (0x7F >> length);
    for (int k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      code = (code << 6) | (next & 0x3F);
    }
    const uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < smallest[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return false;
    i += length;
  }
  return true;
}

// A string value a TOML file can hold, so that to_toml() writes it back unchanged: TOML text is
// UTF-8, and to_toml() would write a stray byte as the code point of the same number.
void require_utf8(const std::string& text, const std::string& key, const std::string& source) {
  if (!is_utf8(text)) throw ConfigError("config key '" + key + "' in " + source + " must be UTF-8 text");
}

std::string format_value(const ConfigValue& value) {
  std::ostringstream out;
  std::visit(
      [&out](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          out << (v ? "true" : "false");
        } else if constexpr (std::is_same_v<T, int64_t>) {
          out << v;
        } else if constexpr (std::is_same_v<T, double>) {
          // Shortest text that reads back to the same double, always with a decimal point.
          std::ostringstream number;
          number << std::setprecision(17) << v;
          for (int precision = 1; precision <= 17; ++precision) {
            std::ostringstream shorter;
            shorter << std::setprecision(precision) << v;
            // strtod, not stod: stod throws std::out_of_range for a subnormal such as 1e-310.
            if (std::strtod(shorter.str().c_str(), nullptr) == v) {
              number.str(shorter.str());
              break;
            }
          }
          std::string text = number.str();
          if (std::isfinite(v) && text.find_first_of(".eE") == std::string::npos) text += ".0";
          if (std::isinf(v)) text = v > 0 ? "inf" : "-inf";
          if (std::isnan(v)) text = "nan";
          out << text;
        } else if constexpr (std::is_same_v<T, std::string>) {
          toml::value<std::string> as_toml{v};
          out << as_toml;
        } else {
          out << "[";
          for (size_t i = 0; i < v.size(); ++i) out << (i ? ", " : "") << v[i];
          out << "]";
        }
      },
      value);
  return out.str();
}

}  // namespace

std::string config_type_name(const ConfigValue& value) {
  switch (value.index()) {
    case 0:
      return "bool";
    case 1:
      return "int";
    case 2:
      return "float";
    case 3:
      return "string";
    default:
      return "list of int";
  }
}

void ConfigSchema::declare(const std::string& key, ConfigValue default_value, const std::string& doc) {
  if (!entries_.emplace(key, Entry{std::move(default_value), doc}).second) {
    throw std::logic_error("config key '" + key + "' is declared twice");
  }
}

void ConfigSchema::declare_former_name(const std::string& former, const std::string& key) {
  if (entries_.count(former) > 0 || !former_names_.emplace(former, key).second) {
    throw std::logic_error("config key '" + former + "' cannot be a former name of '" + key + "': it is taken");
  }
}

const std::string* ConfigSchema::renamed(const std::string& name) const {
  const auto it = former_names_.find(name);
  return it == former_names_.end() ? nullptr : &it->second;
}

const ConfigSchema::Entry& ConfigSchema::at(const std::string& key) const {
  auto it = entries_.find(key);
  if (it == entries_.end()) throw ConfigError("unknown config key '" + key + "'");
  return it->second;
}

Config::Config(ConfigSchema schema) : schema_(std::move(schema)) {
  for (const auto& [key, entry] : schema_.entries()) {
    values_[key] = entry.default_value;
    origins_[key] = "default";
  }
}

std::string Config::current_name(const std::string& name, const std::string& source) {
  const std::string* key = schema_.renamed(name);
  if (key == nullptr) return name;
  const std::string note =
      "config key '" + name + "' in " + source + " is now called '" + *key + "'; the old name is still accepted";
  if (std::find(notes_.begin(), notes_.end(), note) == notes_.end()) notes_.push_back(note);
  return *key;
}

const ConfigSchema::Entry& Config::entry_for(const std::string& key, const std::string& source) const {
  if (!schema_.contains(key)) {
    // Suggest keys that share the last component, the usual typo being the section.
    std::string leaf = key.substr(key.rfind('.') == std::string::npos ? 0 : key.rfind('.') + 1);
    std::string hint;
    for (const auto& [known, entry] : schema_.entries()) {
      const std::string known_leaf = known.substr(known.rfind('.') == std::string::npos ? 0 : known.rfind('.') + 1);
      if (known_leaf == leaf) hint += (hint.empty() ? "" : ", ") + known;
    }
    if (!hint.empty()) {
      throw ConfigError("unknown config key '" + key + "' in " + source + " (did you mean " + hint + "?)");
    }
    // Otherwise a key spelt nearly right: algo.ppo.learning_rte.
    std::vector<std::string> keys;
    for (const auto& [known, entry] : schema_.entries()) keys.push_back(known);
    throw ConfigError("unknown config key '" + key + "' in " + source + did_you_mean(key, keys));
  }
  return schema_.at(key);
}

void Config::merge_file(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) {
    throw ConfigError("config file '" + path + "' does not exist or is not a file");
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) throw ConfigError("config file '" + path + "' could not be read");
  merge_toml(text.str(), "'" + path + "'");
}

void Config::merge_toml(const std::string& text, const std::string& source) {
  toml::table table;
  try {
    table = toml::parse(text, source);
  } catch (const toml::parse_error& error) {
    std::ostringstream message;
    message << "config " << source << " line " << error.source().begin.line << ": " << error.description();
    throw ConfigError(message.str());
  }
  // Collect every value before assigning any, so a bad file leaves the config unchanged.
  std::vector<std::pair<std::string, ConfigValue>> updates;
  std::function<void(const toml::table&, const std::string&)> walk = [&](const toml::table& current,
                                                                         const std::string& prefix) {
    for (const auto& [raw_key, node] : current) {
      const std::string key = current_name(prefix + std::string(raw_key.str()), source);
      if (node.is_table() && !schema_.contains(key)) {
        bool known_section = false;
        for (const auto& entry : schema_.entries()) {
          known_section = known_section || entry.first.rfind(key + ".", 0) == 0;
        }
        if (!known_section) throw ConfigError("unknown config section [" + key + "] in " + source);
        walk(*node.as_table(), key + ".");
        continue;
      }
      const auto& entry = entry_for(key, source);
      updates.emplace_back(key, convert_node(node, entry.default_value, key, source));
    }
  };
  walk(table, "");
  for (auto& [key, value] : updates) {
    values_[key] = std::move(value);
    origins_[key] = source;
  }
}

void Config::apply_override(const std::string& assignment, const std::string& source) {
  const auto equals = assignment.find('=');
  if (equals == std::string::npos || equals == 0) {
    throw ConfigError(source + " expects key=value, got '" + assignment + "'");
  }
  const std::string key = current_name(assignment.substr(0, equals), source);
  const std::string raw_value = assignment.substr(equals + 1);
  const auto& entry = entry_for(key, source);
  toml::table parsed;
  bool parsed_ok = true;
  try {
    parsed = toml::parse("value = " + raw_value);
  } catch (const toml::parse_error&) {
    parsed_ok = false;
  }
  if (std::holds_alternative<std::string>(entry.default_value) && (!parsed_ok || !parsed["value"].is_string())) {
    require_utf8(raw_value, key, source);
    values_[key] = raw_value;  // a bare word such as CartPole-v1
  } else if (!parsed_ok) {
    throw ConfigError("config key '" + key + "' in " + source + " must be " + config_type_name(entry.default_value) +
                      ", got '" + raw_value + "'");
  } else {
    values_[key] = convert_node(*parsed.get("value"), entry.default_value, key, source);
  }
  origins_[key] = source;
}

void Config::set(const std::string& name, ConfigValue value, const std::string& source) {
  const std::string key = current_name(name, source);
  const auto& entry = entry_for(key, source);
  if (std::holds_alternative<double>(entry.default_value) && std::holds_alternative<int64_t>(value)) {
    value = static_cast<double>(std::get<int64_t>(value));
  }
  if (value.index() != entry.default_value.index()) {
    throw ConfigError("config key '" + key + "' in " + source + " must be " + config_type_name(entry.default_value) +
                      ", got " + config_type_name(value));
  }
  if (const auto* text = std::get_if<std::string>(&value)) require_utf8(*text, key, source);
  values_[key] = std::move(value);
  origins_[key] = source;
}

const ConfigValue& Config::get(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) throw ConfigError("unknown config key '" + key + "'");
  return it->second;
}

template <typename T>
static const T& get_as(const Config& config, const std::string& key) {
  const ConfigValue& value = config.get(key);
  if (!std::holds_alternative<T>(value)) {
    throw ConfigError("config key '" + key + "' holds " + config_type_name(value) + ", read as another type");
  }
  return std::get<T>(value);
}

bool Config::get_bool(const std::string& key) const { return get_as<bool>(*this, key); }
int64_t Config::get_int(const std::string& key) const { return get_as<int64_t>(*this, key); }
double Config::get_double(const std::string& key) const { return get_as<double>(*this, key); }
std::string Config::get_string(const std::string& key) const { return get_as<std::string>(*this, key); }
std::vector<int64_t> Config::get_int_list(const std::string& key) const {
  return get_as<std::vector<int64_t>>(*this, key);
}

const std::string& Config::origin(const std::string& key) const {
  auto it = origins_.find(key);
  if (it == origins_.end()) throw ConfigError("unknown config key '" + key + "'");
  return it->second;
}

std::string Config::to_toml() const {
  // Group keys by section (everything before the last dot); top-level keys come first.
  std::map<std::string, std::vector<std::string>> sections;
  for (const auto& [key, value] : values_) {
    const auto dot = key.rfind('.');
    sections[dot == std::string::npos ? "" : key.substr(0, dot)].push_back(key);
  }
  std::ostringstream out;
  for (const auto& [section, keys] : sections) {
    if (!section.empty()) out << "\n[" << section << "]\n";
    for (const std::string& key : keys) {
      const auto dot = key.rfind('.');
      const std::string leaf = dot == std::string::npos ? key : key.substr(dot + 1);
      const std::string& doc = schema_.at(key).doc;
      if (!doc.empty()) out << "# " << doc << "\n";
      out << leaf << " = " << format_value(values_.at(key)) << "\n";
    }
  }
  return out.str();
}

std::string Config::digest() const {
  // FNV-1a over "key=value\n" lines: stable across runs and platforms, unlike std::hash.
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (const auto& [key, value] : values_) {
    for (char c : key + "=" + format_value(value) + "\n") {
      hash ^= static_cast<unsigned char>(c);
      hash *= 0x100000001b3ULL;
    }
  }
  std::ostringstream out;
  out << std::hex << std::setw(16) << std::setfill('0') << hash;
  return out.str();
}

}  // namespace concord::core
