#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "concord/envs/env.h"

namespace concord::envs {

using EnvFactory = std::function<std::unique_ptr<Env>()>;

// Environments by id ("CartPole-v1", ...). The built-in environments are listed in registry.cpp,
// one line each; programs may add their own with add().
class Registry {
 public:
  // The process-wide registry, holding the built-in environments.
  static Registry& global();

  void add(const std::string& id, EnvFactory factory);
  bool contains(const std::string& id) const;
  // Throws std::invalid_argument naming the id and listing the known ones when it is unknown.
  std::unique_ptr<Env> make(const std::string& id) const;
  std::vector<std::string> ids() const;

 private:
  std::vector<std::pair<std::string, EnvFactory>> entries_;
};

// Shorthand for Registry::global().make(id).
std::unique_ptr<Env> make_env(const std::string& id);

}  // namespace concord::envs
