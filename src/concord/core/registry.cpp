#include "concord/core/registry.h"

#include "concord/core/did_you_mean.h"

namespace concord::core {

std::string joined_names(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

std::invalid_argument unknown_name_error(const std::string& kind, const std::string& key, const std::string& name,
                                         const std::vector<std::string>& known) {
  std::string message = "unknown " + kind + " '" + name + "'";
  if (!key.empty()) message += " for " + key;
  const std::vector<std::string> close = similar_names(name, known, 1);
  if (!close.empty()) message += ": did you mean " + close.front() + "?";
  return std::invalid_argument(message + " (known: " + joined_names(known) + ")");
}

}  // namespace concord::core
