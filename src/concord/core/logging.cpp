#include "concord/core/logging.h"

#include <memory>
#include <stdexcept>
#include <vector>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace concord::core {

void init_logging(const std::string& level, const std::string& log_file) {
  const spdlog::level::level_enum parsed = spdlog::level::from_str(level);
  // spdlog maps unknown names to "off"; a typo must not silence the logs.
  if (parsed == spdlog::level::off && level != "off") {
    throw std::invalid_argument("unknown log level '" + level + "' (expected trace, debug, info, warn, error or off)");
  }
  std::vector<spdlog::sink_ptr> sinks;
  sinks.push_back(std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  if (!log_file.empty()) {
    sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>(log_file, /*truncate=*/false));
  }
  auto logger = std::make_shared<spdlog::logger>("concord", sinks.begin(), sinks.end());
  logger->set_level(parsed);
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] %v");
  // Every line reaches the OS as it is logged: a run killed with SIGKILL keeps its log up to that
  // moment. Lines are few (no per-step logging), so this costs nothing measurable.
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
}

}  // namespace concord::core
