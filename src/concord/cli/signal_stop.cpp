#include "concord/cli/signal_stop.h"

#include <atomic>

namespace concord::cli {
namespace {

// A handler may only touch a lock-free atomic.
std::atomic<int> caught_signal{0};

void record_signal(int signal_number) { caught_signal = signal_number; }

}  // namespace

SignalStop::SignalStop() {
  caught_signal = 0;
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
}

int SignalStop::signal() const { return caught_signal.load(); }

}  // namespace concord::cli
