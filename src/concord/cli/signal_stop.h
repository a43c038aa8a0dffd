#pragma once

#include <signal.h>

namespace concord::cli {

// While alive, SIGINT and SIGTERM ask a training run to stop instead of ending the process: the
// run polls requested() from should_stop, finishes the update under way and writes its
// checkpoint. The handlers it displaced (SIG_DFL for the CLI, Python's own inside the module) are
// restored when it is destroyed, so that the caller then reports the signal its own way (the
// Python module raises KeyboardInterrupt). The flag is process-wide, as signal dispositions are:
// one SignalStop at a time.
class SignalStop {
 public:
  SignalStop();
  ~SignalStop();
  SignalStop(const SignalStop&) = delete;
  SignalStop& operator=(const SignalStop&) = delete;

  bool requested() const { return signal() != 0; }
  // The signal that asked to stop (SIGINT or SIGTERM), or 0 while none has.
  int signal() const;

  // The command-line program's choice: a signal before the run's first update ends the process at
  // once (one line on stderr, status 128 + the signal), for there is nothing to save yet, and
  // setting up thousands of envs or the first rollout may take minutes before the run would
  // look at the flag. The Python module keeps the flag alone, so that Python raises
  // KeyboardInterrupt as usual.
  static void exit_at_once_before_first_update();
  // The run completed an update: from now on a signal asks it to stop at the next one.
  static void first_update_done();

 private:
  struct sigaction previous_interrupt_ {};
  struct sigaction previous_terminate_ {};
};

}  // namespace concord::cli
