#pragma once

#include <string>

namespace concord::envs::mujoco {

// Where the shipped MJCF models (assets/mujoco/ in the source tree) are found at run time, first
// match wins: $CONCORD_MUJOCO_MODEL_DIR; assets/mujoco beside or above the running program or the
// library this code is linked into (build/..., an installed Python package); the source tree this
// was built from. Throws std::runtime_error naming the places tried when none holds `file`.
std::string shipped_model(const std::string& file);

}  // namespace concord::envs::mujoco
