#pragma once

namespace concord::core {

// The signal (SIGINT or SIGTERM) that asked this process to stop, for waits below the command
// layer that must end at once rather than at the run's next update: a Python env's step
// (python/python_env.cpp) polls it while it waits. cli::SignalStop's handler records it and
// clears it when the run ends; 0 while nothing asked. Lock-free, so a signal handler may call
// request_stop().
int requested_stop_signal();
void request_stop(int signal_number);
void clear_stop_request();

}  // namespace concord::core
