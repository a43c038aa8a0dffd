#pragma once

#include <functional>
#include <string>

namespace concord::core {

// The signal (SIGINT or SIGTERM) that asked this process to stop, for waits below the command
// layer that must end at once rather than at the run's next update: a Python env's step
// (python/python_env.cpp) polls it while it waits. cli::SignalStop's handler records it and
// clears it when the run ends; 0 while nothing asked. Lock-free, so a signal handler may call
// request_stop().
int requested_stop_signal();
void request_stop(int signal_number);
void clear_stop_request();

// What the training run of this process holds on disk, for a thread that ends the process without
// waiting for the run (python_env.cpp: an env call that cannot be interrupted): "the checkpoint
// PATH holds step N (update U)", "no checkpoint yet", or "" outside a run. The training session
// sets it as it starts and after each checkpoint it saves, and clears it when it ends.
void set_run_checkpoint_note(std::string note);
std::string run_checkpoint_note();

// The run's checkpoint of its last update, saved by a thread that is about to end the process while
// the run's own thread is stuck in an env call (so the learner is still): the session sets `save`
// for its length (an empty function clears it, waiting for a save under way). The first call of
// save_last_resort_checkpoint runs it; every call returns run_checkpoint_note() afterwards.
void set_last_resort_checkpoint(std::function<void()> save);
std::string save_last_resort_checkpoint();

}  // namespace concord::core
