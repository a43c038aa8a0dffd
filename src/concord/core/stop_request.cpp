#include "concord/core/stop_request.h"

#include <atomic>

namespace concord::core {
namespace {

std::atomic<int> stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "a signal handler writes it");

}  // namespace

int requested_stop_signal() { return stop_signal.load(std::memory_order_relaxed); }

void request_stop(int signal_number) { stop_signal.store(signal_number, std::memory_order_relaxed); }

void clear_stop_request() { stop_signal.store(0, std::memory_order_relaxed); }

}  // namespace concord::core
