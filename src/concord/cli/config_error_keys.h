#pragma once

#include <string>
#include <vector>

#include "concord/core/config.h"

namespace concord::cli {

// A component's validate() knows its fields but not the section they were read from, so it says
// "invalid PpoConfig: num_steps=-5 must be >= 1" (core::ConfigProblems). This returns the same
// problems with the keys the user wrote: "algo.ppo.num_steps=-5 must be >= 1". Each problem's
// field is looked up under `sections` in order ("algo.ppo.", "algo."), the first whose key the
// schema has winning; a problem whose field is under none, or a message not of that form, is
// kept as it was.
std::string with_config_keys(const std::string& message, const core::ConfigSchema& schema,
                             const std::vector<std::string>& sections);

}  // namespace concord::cli
