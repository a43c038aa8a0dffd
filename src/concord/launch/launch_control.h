#pragma once

#include <filesystem>

namespace concord::launch {

// How a rank tells `concord launch` something the launcher cannot know from the command line.
// The launcher names a file in a directory of its own (mode 0700) in this variable; a rank
// writes it, and the launcher reads it when it has to decide.
inline constexpr const char* kLaunchControlVariable = "CONCORD_LAUNCH_CONTROL";

// Rank 0 declares that the run goes on when another rank fails (actor_processes with
// on_actor_failure = "continue" drops a dead actor), so that the launcher does not stop the
// others. Does nothing outside `concord launch`; never throws (the launcher then stops the run on
// a failure, as it would anyway).
void declare_other_ranks_may_fail();

// The launcher's side: whether `control_file` holds that declaration.
bool other_ranks_may_fail(const std::filesystem::path& control_file);

}  // namespace concord::launch
