#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace concord::launch {

// Starts a set of local processes and supervises them until all have ended:
//
//   start every child (own process group, stdin /dev/null, stdout/stderr through pipes)
//     -> relay output line by line, each line prefixed "[rank i] "
//     -> first child to fail (non-zero status or a signal), or a signal to the supervisor:
//          SIGTERM (or the received signal) to every running child's process group
//          -> grace period -> SIGKILL to the groups still running
//     -> every child reaped -> result
//
// Each child leads its own process group so that the terminal's Ctrl-C reaches only the
// supervisor, which forwards it exactly once, and so that stopping a child also stops what it
// started (a shell's `sleep`). Children get SIGTERM if the supervisor itself dies
// (PR_SET_PDEATHSIG), so a killed launcher leaves no orphans behind.
//
// Every wait is bounded: by the grace period after a stop begins, then by a fixed time after
// SIGKILL. Installs its own handlers for SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD and ignores
// SIGPIPE while supervise() runs, restoring the previous ones before it returns; so at most one
// supervise() may run at a time in a process.

// One process to start: argv[0] is searched in PATH (as execvp does); `environment` is set on
// top of the supervisor's own environment, overriding variables of the same name.
struct ChildSpec {
  std::string name;  // how messages refer to the child, e.g. "rank 1"
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> environment;
};

struct SupervisorOptions {
  // How long children have to exit after SIGTERM (or a forwarded signal) before SIGKILL.
  std::chrono::milliseconds grace_period{std::chrono::seconds(10)};
  // Relay each child's stdout/stderr through pipes, every line prefixed "[<name>] ". When false,
  // children write straight to the supervisor's stdout and stderr (a terminal stays a terminal).
  bool prefix_output = true;
  // Asked when child `index` (into the children given to supervise()) fails while the run is
  // going: true lets the others go on, the failure logged as a warning and not failing the run
  // (rank 0's policy drops a dead actor). Unset: every failure stops the run.
  std::function<bool(std::size_t index)> tolerates_failure;
  // Asked when child `index` is the first to fail and stops the run: text appended to the failure
  // line, e.g. " (rank 1 stalled: ...)" from what the ranks declared (launch::read_stalled_ranks).
  std::function<std::string(std::size_t index)> explain_failure;
};

struct SupervisionResult {
  bool success = false;  // every child started and exited with status 0
  // Why not, in one line: "rank 1 (pid 4242) exited with status 3", "cannot start 'foo': No such
  // file or directory", "interrupted by SIGINT; rank 0 (pid 4241) was killed by signal 2 (SIGINT)".
  std::string failure;
  // The signal forwarded to the children when one stopped a run whose every child then exited
  // with status 0 or 128 + that signal (a clean stop), else 0; `success` is then true.
  int stop_signal = 0;
  // The signal the supervisor received and forwarded, whether or not the stop was clean; else 0.
  int received_signal = 0;
};

// Runs `children` to completion as described above and reports how they ended. Failures of
// children are results, not exceptions; throws std::runtime_error only if the supervisor cannot
// set itself up (no pipes, no fork).
SupervisionResult supervise(const std::vector<ChildSpec>& children, const SupervisorOptions& options);

}  // namespace concord::launch
