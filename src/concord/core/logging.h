#pragma once

#include <string>

namespace concord::core {

// Sets up spdlog's default logger: messages at `level` and above go to stderr (so they never mix
// with a program's table output on stdout) and, when `log_file` is not empty, to that file too.
// `level` is one of trace, debug, info, warn, error, off; anything else throws
// std::invalid_argument naming it. Safe to call again, e.g. once a run directory exists.
void init_logging(const std::string& level, const std::string& log_file = "");

}  // namespace concord::core
