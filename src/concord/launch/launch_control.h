#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace concord::launch {

// How a rank tells `concord launch` something the launcher cannot know from the command line.
// The launcher names a file in a directory of its own (mode 0700) in this variable; rank 0
// writes it, one declaration a line, and the launcher reads it when it has to decide.
inline constexpr const char* kLaunchControlVariable = "CONCORD_LAUNCH_CONTROL";

// Set by `concord launch --max-restarts` on the processes of a restarted group: the run directory
// that rank 0 of the group before declared, for the restarted command to continue from.
inline constexpr const char* kRestartRunDirVariable = "CONCORD_RESTART_RUN_DIR";

// Rank 0 declares that the run goes on when another rank fails (actor_processes with
// on_actor_failure = "continue" drops a dead actor), so that the launcher does not stop the
// others. Does nothing outside `concord launch`; never throws (the launcher then stops the run on
// a failure, as it would anyway).
void declare_other_ranks_may_fail();

// Rank 0 declares the run directory it writes checkpoints to, so that a restarted group can
// continue from them. Does nothing outside `concord launch`; never throws (a restart then starts
// afresh).
void declare_run_dir(const std::filesystem::path& run_dir);

// A rank declares the ranks it found stalled: a collective of its timed out, and they had never
// reached it (comm::ProcessGroupCommunicator reads every rank's progress from the store), so
// that the launcher names them rather than only the rank that noticed. Written beside the control
// file, one file per declaring rank. Does nothing outside `concord launch`; never throws.
void declare_stalled_ranks(int declaring_rank, const std::vector<int>& stalled, int64_t collective);

// What ranks declared so, in the launcher: " (rank 1 stalled: rank 0 timed out at collective 42,
// which rank 1 never reached; the likelier cause)", or "" where none did. clear_stalled_ranks
// removes the declarations (a restarted group declares afresh).
std::string read_stalled_ranks(const std::filesystem::path& control_file);
void clear_stalled_ranks(const std::filesystem::path& control_file);

// What rank 0 declared in `control_file`; false and "" where it declared nothing.
struct LaunchControl {
  bool other_ranks_may_fail = false;
  std::string run_dir;
};
LaunchControl read_launch_control(const std::filesystem::path& control_file);

// kRestartRunDirVariable, or "" when this process is not a restarted rank.
std::string restart_run_dir();

}  // namespace concord::launch
