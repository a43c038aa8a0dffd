#pragma once

#include <string>

namespace CLI {
class App;
}

namespace concord::cli {

// Each subcommand adds itself to the top-level app; its callback runs the command and throws
// on failure (main() turns any exception into one error line and a non-zero exit).
void add_envs_command(CLI::App& app);
void add_config_command(CLI::App& app);
void add_rollout_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_launch_command(CLI::App& app);
void add_fit_command(CLI::App& app);
void add_export_command(CLI::App& app);

// Thrown by a command that did its work but must not report success: a run that a signal stopped
// (its checkpoint written) ends with 128 + the signal's number, as a shell reports a process the
// signal killed, so a script or scheduler can tell an interrupted run from a finished one.
// main() returns `status` without printing an error line.
struct ExitStatus {
  int status;
};

// How the user can run this program again from where they are, for the commands a run prints
// ("evaluate with build/concord eval runs/..."): "concord" when that name on the PATH is this
// program, else its path relative to the working directory when it lies below it, else its full path.
std::string program_for_hints();

// The start of a command line that runs a program as this process was run: "concord launch -n 2 --
// " under `concord launch` (from the variables it sets: LOCAL_WORLD_SIZE, and GROUP_WORLD_SIZE for
// --nnodes), else "". A resume hint must keep it, or the run would go on as one process.
std::string launcher_for_hints(const std::string& program);

// The exit status of a command that signal `signal_number` stopped.
inline int signal_exit_status(int signal_number) { return 128 + signal_number; }

}  // namespace concord::cli
