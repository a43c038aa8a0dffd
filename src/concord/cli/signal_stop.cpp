#include "concord/cli/signal_stop.h"

#include <unistd.h>

#include <atomic>

#include "concord/core/stop_request.h"

namespace concord::cli {
namespace {

// A handler may only touch lock-free atomics (and call async-signal-safe functions).
std::atomic<int> caught_signal{0};
std::atomic<bool> exit_before_update{false};
std::atomic<bool> updated{false};

void record_signal(int signal_number) {
  if (exit_before_update.load() && !updated.load()) {
    static const char message[] = "concord: stopped by a signal before the first update: nothing to save\n";
    const ssize_t written = write(STDERR_FILENO, message, sizeof(message) - 1);
    (void)written;
    _exit(128 + signal_number);
  }
  caught_signal = signal_number;
  core::request_stop(signal_number);  // for waits below the run's loop (a Python env's step)
}

}  // namespace

SignalStop::SignalStop() {
  caught_signal = 0;
  core::clear_stop_request();
  struct sigaction action {};
  action.sa_handler = record_signal;
  sigemptyset(&action.sa_mask);
  // SA_RESTART: a signal must not make a blocking read or wait in the run fail with EINTR.
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &previous_interrupt_);
  sigaction(SIGTERM, &action, &previous_terminate_);
}

SignalStop::~SignalStop() {
  sigaction(SIGINT, &previous_interrupt_, nullptr);
  sigaction(SIGTERM, &previous_terminate_, nullptr);
  core::clear_stop_request();
}

int SignalStop::signal() const { return caught_signal.load(); }

void SignalStop::exit_at_once_before_first_update() { exit_before_update = true; }

void SignalStop::first_update_done() { updated = true; }

}  // namespace concord::cli
