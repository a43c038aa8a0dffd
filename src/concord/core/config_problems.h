#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace concord::core {

// Collects the problems of a config struct's validate() and throws them as one
// std::invalid_argument, so a user sees every bad value at once:
//
//   ConfigProblems problems;
//   problems.check(gamma >= 0.0 && gamma <= 1.0, "gamma", gamma, "in [0, 1]");
//   problems.throw_if_any("algo.ppo config");  // "invalid algo.ppo config: gamma=1.5 must be in [0, 1]"
//
// `what` names the config section, so that with each problem's field it names the key.
class ConfigProblems {
 public:
  // Records "<field>=<value> must be <requirement>" unless `ok`; `value` is printed with
  // operator<< (a list of integers as [a, b]).
  template <typename T>
  void check(bool ok, const char* field, const T& value, const char* requirement) {
    if (ok) return;
    std::ostringstream out;
    out << field << "=";
    print(out, value);
    out << " must be " << requirement;
    problems_.push_back(out.str());
  }

  // Records "<field>=<value> applies only to <scope>: leave it at its default <default>" when
  // `value` was changed from its default although the field does not apply (another torso's
  // layers, say), which would otherwise be ignored without a word.
  template <typename T>
  void check_applies(bool applies, const char* field, const T& value, const T& default_value,
                     const std::string& scope) {
    if (applies || value == default_value) return;
    std::ostringstream out;
    out << std::boolalpha << field << "=";
    print(out, value);
    out << " applies only to " << scope << ": leave it at its default ";
    print(out, default_value);
    problems_.push_back(out.str());
  }

  // Records a problem worded otherwise; it should name the field and print the value.
  void add(std::string problem) { problems_.push_back(std::move(problem)); }

  bool empty() const { return problems_.empty(); }

  // Throws std::invalid_argument "invalid <what>: <problem>; <problem>" if any were recorded.
  void throw_if_any(const std::string& what) const;

 private:
  template <typename T>
  static void print(std::ostream& out, const T& value) {
    if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
      out << "[";
      for (size_t i = 0; i < value.size(); ++i) out << (i == 0 ? "" : ", ") << value[i];
      out << "]";
    } else {
      out << value;
    }
  }

  std::vector<std::string> problems_;
};

// `config` after its validate() (which throws on bad values) passed: for constructors' member
// initialisers, so a component is never built from a bad config.
template <typename Config>
Config validated(Config config) {
  config.validate();
  return config;
}

}  // namespace concord::core
