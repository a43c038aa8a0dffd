#include "concord/cli/config_error_keys.h"

#include <cctype>

namespace concord::cli {
namespace {

bool is_field(const std::string& text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

}  // namespace

std::string with_config_keys(const std::string& message, const core::ConfigSchema& schema,
                             const std::vector<std::string>& sections) {
  const std::string kInvalid = "invalid ";
  const std::size_t colon = message.find(": ");
  if (message.compare(0, kInvalid.size(), kInvalid) != 0 || colon == std::string::npos) return message;
  std::string problems = message.substr(colon + 2);
  std::string result;
  bool renamed = false;
  std::size_t start = 0;
  while (start <= problems.size()) {
    std::size_t end = problems.find("; ", start);
    if (end == std::string::npos) end = problems.size();
    std::string problem = problems.substr(start, end - start);
    const std::size_t equals = problem.find('=');
    const std::string field = equals == std::string::npos ? "" : problem.substr(0, equals);
    if (is_field(field)) {
      for (const std::string& section : sections) {
        if (schema.contains(section + field)) {
          problem = section + problem;
          renamed = true;
          break;
        }
      }
    }
    result += (result.empty() ? "" : "; ") + problem;
    start = end + 2;
  }
  return renamed ? result : message;
}

}  // namespace concord::cli
