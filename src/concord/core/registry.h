#pragma once

#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace concord::core {

// "a, b, c": names as errors and help texts list them.
std::string joined_names(const std::vector<std::string>& names);

// "unknown <kind> '<name>' (known: a, b, c)", or with a config key "unknown <kind> '<name>' for
// <key> (known: a, b, c)": the one error for a name that nothing is registered under.
std::invalid_argument unknown_name_error(const std::string& kind, const std::string& key, const std::string& name,
                                         const std::vector<std::string>& known);

// Entries by name, in registration order: what a run can name (an algorithm, a policy, a sync
// strategy, an environment...). A registry is filled once, in one table of one line per entry,
// then only read; static self-registration is avoided because a static library drops the object
// files that nothing references, and their registrations with them.
//
//   const core::Registry<Factory> kinds("policy", {{"single", make_single}, {"hogwild", make_hogwild}});
//   kinds.at("hogwild")     -> make_hogwild
//   kinds.at("gossip")      -> std::invalid_argument "unknown policy 'gossip' (known: single, hogwild)"
//
// Reading is thread-safe; add() is not (fill a registry before sharing it).
template <typename Entry>
class Registry {
 public:
  // `kind` names an entry in errors ("policy"); `key`, if not empty, is the config key that names
  // one ("explore.bonus") and is quoted in the unknown-name error.
  explicit Registry(std::string kind, std::string key = "") : kind_(std::move(kind)), key_(std::move(key)) {}
  Registry(std::string kind, std::initializer_list<std::pair<std::string, Entry>> entries)
      : Registry(std::move(kind), "", entries) {}
  Registry(std::string kind, std::string key, std::initializer_list<std::pair<std::string, Entry>> entries)
      : Registry(std::move(kind), std::move(key)) {
    for (const auto& [name, entry] : entries) add(name, entry);
  }

  // Throws std::invalid_argument (a std::logic_error) if the name is already registered.
  void add(const std::string& name, Entry entry) {
    if (contains(name)) throw std::invalid_argument(kind_ + " '" + name + "' is already registered");
    entries_.emplace_back(name, std::move(entry));
  }

  bool contains(const std::string& name) const { return find(name) != nullptr; }

  // Throws unknown_name_error when nothing is registered under `name`.
  const Entry& at(const std::string& name) const {
    if (const Entry* entry = find(name)) return *entry;
    throw unknown_name_error(kind_, key_, name, names());
  }

  // In registration order.
  std::vector<std::string> names() const {
    std::vector<std::string> result;
    result.reserve(entries_.size());
    for (const auto& entry : entries_) result.push_back(entry.first);
    return result;
  }

  // (name, entry) pairs in registration order.
  const std::vector<std::pair<std::string, Entry>>& entries() const { return entries_; }

  const std::string& kind() const { return kind_; }

 private:
  // Linear: registries hold a handful of entries, and registration order is what users see.
  const Entry* find(const std::string& name) const {
    for (const auto& entry : entries_) {
      if (entry.first == name) return &entry.second;
    }
    return nullptr;
  }

  std::string kind_;
  std::string key_;
  std::vector<std::pair<std::string, Entry>> entries_;
};

}  // namespace concord::core
