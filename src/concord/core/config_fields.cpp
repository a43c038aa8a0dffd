#include "concord/core/config_fields.h"

#include <limits>

namespace concord::core {

int get_int_in_range(const Config& config, const std::string& key) {
  const int64_t value = config.get_int(key);
  constexpr int64_t kLowest = std::numeric_limits<int>::min();
  constexpr int64_t kHighest = std::numeric_limits<int>::max();
  if (value < kLowest || value > kHighest) {
    throw ConfigError("config key '" + key + "' = " + std::to_string(value) + " is out of range: it must lie in [" +
                      std::to_string(kLowest) + ", " + std::to_string(kHighest) + "]");
  }
  return static_cast<int>(value);
}

}  // namespace concord::core
