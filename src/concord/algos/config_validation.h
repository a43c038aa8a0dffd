#pragma once

#include <sstream>
#include <string>
#include <vector>

// How the learners' configs (A2cConfig, PpoConfig, ...) validate themselves.

namespace concord::algos {

// Collects "field=value must be ..." problems of a config's validate() and throws them as one
// std::invalid_argument, so a user sees every bad hyperparameter at once:
//
//   ConfigProblems problems;
//   problems.check(gamma >= 0.0 && gamma <= 1.0, "gamma", gamma, "in [0, 1]");
//   problems.throw_if_any("PpoConfig");  // "invalid PpoConfig: gamma=1.5 must be in [0, 1]"
class ConfigProblems {
 public:
  // Records the problem unless `ok`; `value` is printed with operator<<.
  template <typename T>
  void check(bool ok, const char* field, const T& value, const char* requirement) {
    if (ok) return;
    std::ostringstream out;
    out << field << "=" << value << " must be " << requirement;
    problems_.push_back(out.str());
  }

  // Throws std::invalid_argument "invalid <what>: <problem>; <problem>" if any were recorded.
  void throw_if_any(const std::string& what) const;

 private:
  std::vector<std::string> problems_;
};

// `config` after its validate() (which throws on bad values) passed: for constructors' member
// initialisers, so a learner is never built from a bad config.
template <typename Config>
Config validated(Config config) {
  config.validate();
  return config;
}

}  // namespace concord::algos
