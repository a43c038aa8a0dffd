#include "concord/core/config_problems.h"

#include <stdexcept>

namespace concord::core {

void ConfigProblems::throw_if_any(const std::string& what) const {
  if (problems_.empty()) return;
  std::string message = "invalid " + what + ":";
  for (const std::string& problem : problems_) message += " " + problem + ";";
  message.pop_back();
  throw std::invalid_argument(message);
}

}  // namespace concord::core
