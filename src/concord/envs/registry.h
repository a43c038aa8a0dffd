#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "concord/core/registry.h"
#include "concord/envs/env.h"

namespace concord::envs {

using EnvFactory = std::function<std::unique_ptr<Env>()>;

// Environments by id ("CartPole-v1", ...). The built-in environments are listed in registry.cpp,
// one line each; programs may add their own with add().
class Registry {
 public:
  // The process-wide registry, holding the built-in environments.
  static Registry& global();

  // Throws std::invalid_argument if the id is already registered.
  void add(const std::string& id, EnvFactory factory) { factories_.add(id, std::move(factory)); }
  bool contains(const std::string& id) const { return factories_.contains(id); }
  // Throws std::invalid_argument naming the id and listing the known ones when it is unknown.
  std::unique_ptr<Env> make(const std::string& id) const { return factories_.at(id)(); }
  // In registration order.
  std::vector<std::string> ids() const { return factories_.names(); }

 private:
  core::Registry<EnvFactory> factories_{"environment"};
};

// Shorthand for Registry::global().make(id).
std::unique_ptr<Env> make_env(const std::string& id);

}  // namespace concord::envs
