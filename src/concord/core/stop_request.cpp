#include "concord/core/stop_request.h"

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <utility>

namespace concord::core {
namespace {

std::atomic<int> stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "a signal handler writes it");

std::mutex note_mutex;
std::string checkpoint_note;  // guarded by note_mutex
std::mutex last_resort_mutex;
std::function<void()> last_resort_save;  // guarded by last_resort_mutex

}  // namespace

int requested_stop_signal() { return stop_signal.load(std::memory_order_relaxed); }

void request_stop(int signal_number) { stop_signal.store(signal_number, std::memory_order_relaxed); }

void clear_stop_request() { stop_signal.store(0, std::memory_order_relaxed); }

void set_run_checkpoint_note(std::string note) {
  const std::lock_guard<std::mutex> lock(note_mutex);
  checkpoint_note = std::move(note);
}

std::string run_checkpoint_note() {
  const std::lock_guard<std::mutex> lock(note_mutex);
  return checkpoint_note;
}

void set_last_resort_checkpoint(std::function<void()> save) {
  const std::lock_guard<std::mutex> lock(last_resort_mutex);
  last_resort_save = std::move(save);
}

std::string save_last_resort_checkpoint() {
  {
    const std::lock_guard<std::mutex> lock(last_resort_mutex);
    const std::function<void()> save = std::exchange(last_resort_save, nullptr);
    if (save) save();
  }
  return run_checkpoint_note();
}

}  // namespace concord::core
