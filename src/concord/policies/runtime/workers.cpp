#include "concord/policies/runtime/workers.h"

#include <sstream>
#include <stdexcept>
#include <utility>

#include "concord/core/timer.h"
#include "concord/core/torch_thread.h"
#include "concord/policies/policy.h"

namespace concord::policies::runtime {

Workers::Workers(std::string policy, double timeout_seconds, std::string timeout_key)
    : policy_(std::move(policy)),
      timeout_seconds_(timeout_seconds),
      timeout_(core::steady_duration(timeout_seconds)),
      timeout_key_(std::move(timeout_key)) {}

Workers::~Workers() {
  stop();
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

std::function<void()> Workers::guarded(std::string name, std::function<void()> body) {
  {
    std::lock_guard<std::mutex> lock(running_mutex_);
    ++running_;
  }
  return [this, name = std::move(name), body = std::move(body)] {
    struct Ended {
      Workers& workers;
      ~Ended() {
        {
          std::lock_guard<std::mutex> lock(workers.running_mutex_);
          --workers.running_;
        }
        workers.ended_.notify_all();
      }
    } ended{*this};
    try {
      body();
    } catch (const Stopped&) {
    } catch (const TimedOut&) {
      fail(std::current_exception());
    } catch (const NonFiniteMetric&) {
      fail(std::current_exception());
    } catch (const std::exception& error) {
      const std::string who = name.empty() ? "" : name + " failed: ";
      fail(std::make_exception_ptr(std::runtime_error("policy '" + policy_ + "': " + who + error.what())));
    } catch (...) {
      fail(std::make_exception_ptr(
          std::runtime_error("policy '" + policy_ + "': " + (name.empty() ? "a thread" : name) + " failed")));
    }
  };
}

void Workers::start(std::string name, uint64_t seed, std::function<void()> body) {
  launch(core::torch_thread(seed, guarded(std::move(name), std::move(body))));
}

void Workers::start(std::string name, at::Generator generator, std::function<void()> body) {
  launch(core::torch_thread(std::move(generator), guarded(std::move(name), std::move(body))));
}

void Workers::launch(std::thread thread) { threads_.push_back(std::move(thread)); }

void Workers::on_stop(std::function<void()> wake) {
  std::lock_guard<std::mutex> lock(wake_mutex_);
  if (woken_) {
    wake();
    return;
  }
  wakes_.push_back(std::move(wake));
}

void Workers::stop() {
  stopping_.store(true);
  std::lock_guard<std::mutex> lock(wake_mutex_);
  if (woken_) return;
  woken_ = true;
  for (const auto& wake : wakes_) wake();
}

void Workers::fail(std::exception_ptr error) {
  failure_.record(std::move(error));
  stop();
}

bool Workers::wait_for_end(Duration slice) {
  std::unique_lock<std::mutex> lock(running_mutex_);
  return ended_.wait_for(lock, slice, [&] { return running_ == 0; });
}

void Workers::join() {
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  failure_.rethrow_if_any();
}

void Workers::run(const std::function<void()>& here) {
  try {
    here();
  } catch (const Stopped&) {
  } catch (...) {
    fail(std::current_exception());
  }
  stop_and_join();
}

void Workers::timed_out(const std::string& waiter, const std::string& what) const {
  if (stopping()) throw Stopped{};
  std::ostringstream text;
  text << "policy '" << policy_ << "': " << waiter << " waited " << timeout_seconds_ << " s for " << what << " (raise "
       << timeout_key_ << " if the machine is just slow)";
  throw TimedOut(text.str());
}

}  // namespace concord::policies::runtime
