#include "concord/core/registry.h"

namespace concord::core {

std::invalid_argument unknown_name_error(const std::string& kind, const std::string& key, const std::string& name,
                                         const std::vector<std::string>& known) {
  std::string message = "unknown " + kind + " '" + name + "'";
  if (!key.empty()) message += " for " + key;
  message += " (known: ";
  for (size_t i = 0; i < known.size(); ++i) message += (i == 0 ? "" : ", ") + known[i];
  return std::invalid_argument(message + ")");
}

}  // namespace concord::core
