// A Python object with Gymnasium's Env API behind the engine's Env interface. Every call into
// Python takes the GIL itself: the engine steps envs on its own threads (env.num_threads) and
// training releases the GIL for its whole length, so no caller can be relied on to hold it.
//
// Every reset() and step() is bounded (env.step_timeout_seconds) and gives way to a stop signal,
// without handing the call to another thread (that cost a thread switch a call):
//
//   engine thread: publishes "a call of env E began at t" in its CallWatch (two atomic stores),
//                  calls Python itself under the GIL, and marks the call ended, still under it
//   watchdog:      one thread per extension module, awake every kPoll; a call past its limit, or
//                  running when SIGINT or SIGTERM came (core/stop_request.h), is stopped: an
//                  exception is raised in its thread (PyThreadState_SetAsyncExc: TimeoutError or
//                  KeyboardInterrupt), and on Python's main thread a signal of our own also wakes
//                  a blocking call (time.sleep, a socket) whose retry runs our Python handler,
//                  which raises the same.
//
// The call then ends through Python's own error path, and the engine thread throws (one line
// naming the env and the limit, or envs::EnvInterrupted): the run ends as for any failing env,
// with the checkpoint of its last update, and the env refuses every later call. A call that does
// not end within kGrace of that (C code that holds the GIL, a blocking call on a thread other than
// Python's main one, which retries after EINTR) cannot be interrupted: the watchdog writes one
// line naming the env, the limit and what the run's checkpoint holds (core::run_checkpoint_note),
// and ends the process (status 1, or 128 + the signal).
#include "python_env.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cxxabi.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "concord/core/stop_request.h"
#include "concord/envs/env.h"
#include "concord/envs/registry.h"

namespace concord::python {
namespace {

using Clock = std::chrono::steady_clock;
// A Python object that may be released from any thread, also after the interpreter has finished
// (static registries outlive it; then the reference is leaked rather than touched).
using SharedObject = std::shared_ptr<py::object>;

SharedObject share(py::object object) {
  return SharedObject(new py::object(std::move(object)), [](py::object* held) {
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    delete held;
  });
}

// "ValueError: message" of the Python exception being handled, on one line.
std::string python_error_text(const py::error_already_set& error) {
  std::string text = py::str(error.type().attr("__name__"));
  const std::string message = py::str(error.value());
  if (!message.empty()) text += ": " + message;
  for (char& c : text) {
    if (c == '\n') c = ' ';
  }
  return text;
}

std::vector<float> flat_bounds(const py::handle& bounds, const std::vector<int64_t>& shape) {
  py::module_ numpy = py::module_::import("numpy");
  py::tuple py_shape(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) py_shape[i] = py::int_(shape[i]);
  const auto values = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(
      numpy.attr("broadcast_to")(numpy.attr("asarray")(bounds, "float32"), py_shape));
  if (!values) throw py::error_already_set();
  return std::vector<float>(values.data(), values.data() + values.size());
}

std::string seconds_text(double seconds) {
  std::ostringstream out;
  out << seconds;
  return out.str();
}

const char* signal_name(int signal_number) {
  switch (signal_number) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    default:
      return "a stop signal";
  }
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

constexpr std::chrono::milliseconds kPoll{50};    // the watchdog's period
constexpr std::chrono::milliseconds kGrace{400};  // from the exception raised in a call to the process's end
constexpr int kTimedOut = 0xff;                   // a stopped call's reason, beside a signal's number

// Threads that may still touch Python after the watchdog let go of them: those raising an exception
// in a stopped call (they wait for the GIL). The interpreter's exit waits for them (at most
// kExitWait): a thread that takes the GIL once the interpreter finalises is ended there.
std::atomic<int> background_python{0};
constexpr std::chrono::seconds kExitWait{2};

void wait_for_background_python() {
  py::gil_scoped_release release;
  const Clock::time_point deadline = Clock::now() + kExitWait;
  while (background_python.load() > 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Registers wait_for_background_python with Python's atexit, once per module; with the GIL.
void wait_for_background_python_at_exit() {
  static const bool registered = [] {
    py::module_::import("atexit").attr("register")(py::cpp_function(&wait_for_background_python));
    return true;
  }();
  (void)registered;
}

// "environment 'ID': METHOD ", the start of every line about a call of an env.
std::string call_text(const std::string& id, const char* method) { return "environment '" + id + "': " + method + " "; }

// The text of a call stopped for `reason`: "environment 'ID': step() did not return within
// env.step_timeout_seconds = T s" or "… had not returned when SIGINT arrived".
std::string stopped_text(const std::string& id, const char* method, double limit_seconds, int reason) {
  const std::string where = call_text(id, method);
  if (reason == kTimedOut) {
    return where + "did not return within env.step_timeout_seconds = " + seconds_text(limit_seconds) + " s";
  }
  return where + "had not returned when " + signal_name(reason) + " arrived";
}

PyObject* exception_for(int reason) { return reason == kTimedOut ? PyExc_TimeoutError : PyExc_KeyboardInterrupt; }

// One thread's bounded Python env calls, one at a time: `seq` is odd while a call runs (the engine
// thread raises it without the GIL, and lowers it again under the GIL once Python has returned),
// and `fired` names the call the watchdog stopped ((seq << 8) | reason). The other fields describe
// the running call; the watchdog reads them as a seqlock's reader does.
struct CallWatch {
  std::atomic<uint64_t> seq{0};
  std::atomic<uint64_t> fired{0};
  std::atomic<int64_t> started_ns{0};
  std::atomic<int64_t> limit_ns{0};
  std::atomic<double> limit_seconds{0.0};
  std::atomic<bool> stop_on_signal{false};
  std::atomic<const std::string*> env_id{nullptr};
  std::atomic<const char*> method{nullptr};
  std::atomic<int> main_thread{-1};  // whether this is Python's main thread; -1 until its first call
  const unsigned long python_ident = PyThread_get_thread_ident();
  const pthread_t thread = pthread_self();

  // Starts a call; returns its seq, or 0 for a call made from inside another (that one's bound holds).
  uint64_t begin(const std::string* id, const char* what, double seconds, bool on_signal) {
    if ((seq.load(std::memory_order_relaxed) & 1U) != 0) return 0;
    std::atomic_thread_fence(std::memory_order_release);  // a reader that sees these sees the last call's end
    started_ns.store(now_ns(), std::memory_order_relaxed);
    limit_ns.store(static_cast<int64_t>(seconds * 1e9), std::memory_order_relaxed);
    limit_seconds.store(seconds, std::memory_order_relaxed);
    stop_on_signal.store(on_signal, std::memory_order_relaxed);
    env_id.store(id, std::memory_order_relaxed);
    method.store(what, std::memory_order_relaxed);
    return seq.fetch_add(1, std::memory_order_release) + 1;
  }

  // The reason call `call_seq` was stopped for, or 0.
  int fired_reason(uint64_t call_seq) const {
    const uint64_t stopped = fired.load();
    return (stopped >> 8U) == call_seq ? static_cast<int>(stopped & 0xffU) : 0;
  }

  // The running call's reason to stop, when it was stopped: for the signal handler below.
  int running_call_stopped() const {
    const uint64_t now = seq.load();
    return (now & 1U) != 0 ? fired_reason(now) : 0;
  }
};

// The calling thread's CallWatch (enlisted with the watchdog at its first call).
CallWatch& my_watch();
CallWatch* my_watch_if_any();

// Python's main thread blocks in time.sleep (or a socket, a lock) until a signal's handler raises:
// the watchdog sends it this module's own real-time signal, whose Python handler raises the
// stopped call's exception and does nothing at any other time. 0 until installed (on the first
// call from the main thread), or where every candidate signal is taken.
std::atomic<int> wake_signal{0};

void on_wake_signal(int /*signal_number*/, const py::object& /*frame*/) {
  const CallWatch* watch = my_watch_if_any();
  const int reason = watch == nullptr ? 0 : watch->running_call_stopped();
  if (reason == 0) return;
  const std::string text =
      stopped_text(*watch->env_id.load(), watch->method.load(), watch->limit_seconds.load(), reason);
  PyErr_SetString(exception_for(reason), text.c_str());
  throw py::error_already_set();
}

// With the GIL, on the main thread: installs on_wake_signal on the highest real-time signal that
// neither Python nor the process handles yet (each extension module takes its own).
void install_wake_signal() {
  static bool tried = false;
  if (tried) return;
  tried = true;
  try {
    py::module_ signal_module = py::module_::import("signal");
    const py::object default_handler = signal_module.attr("SIG_DFL");
    for (int number = SIGRTMAX - 1; number > SIGRTMIN + 4; --number) {
      struct sigaction current {};
      if (sigaction(number, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) continue;  // NOLINT
      if (!signal_module.attr("getsignal")(number).is(default_handler)) continue;
      signal_module.attr("signal")(number, py::cpp_function(&on_wake_signal));
      wake_signal = number;
      return;
    }
  } catch (const py::error_already_set&) {
    // No wake-up: a blocking call on the main thread is then ended with the process (kGrace).
  }
}

// The watchdog: one thread per extension module, started by the first bounded call, kept for the
// process's life (leaked: a detached thread may still look at it while the process exits).
class Watchdog {
 public:
  static Watchdog& instance() {
    static Watchdog* const watchdog = new Watchdog();
    return *watchdog;
  }

  void enlist(const std::shared_ptr<CallWatch>& watch) {
    const std::lock_guard<std::mutex> lock(mutex_);
    watches_.push_back(watch);
  }

  void dismiss(const CallWatch* watch) {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto is_it = [watch](const auto& held) { return held.get() == watch; };
    watches_.erase(std::remove_if(watches_.begin(), watches_.end(), is_it), watches_.end());
    stopped_.erase(
        std::remove_if(stopped_.begin(), stopped_.end(), [watch](const Stopped& s) { return s.watch.get() == watch; }),
        stopped_.end());
  }

 private:
  struct Stopped {
    std::shared_ptr<CallWatch> watch;
    uint64_t seq;
    int reason;
    int64_t at_ns;
  };

  Watchdog() {
    std::thread([this] { watch_forever(); }).detach();
  }

  [[noreturn]] void watch_forever() {
    for (;;) {
      std::this_thread::sleep_for(kPoll);
      const std::lock_guard<std::mutex> lock(mutex_);
      const int64_t now = now_ns();
      const int signal_number = core::requested_stop_signal();
      for (const std::shared_ptr<CallWatch>& watch : watches_) check(watch, now, signal_number);
      for (auto it = stopped_.begin(); it != stopped_.end();) {
        if (it->watch->seq.load() != it->seq) {
          it = stopped_.erase(it);  // it ended: the engine thread goes on from there
        } else if (now - it->at_ns >= std::chrono::nanoseconds(kGrace).count()) {
          end_the_process(*it);
          it = stopped_.erase(it);  // it ended while the checkpoint was saved: the run goes on from there
        } else {
          ++it;
        }
      }
    }
  }

  void check(const std::shared_ptr<CallWatch>& watch, int64_t now, int signal_number) {
    const uint64_t seq = watch->seq.load(std::memory_order_acquire);
    if ((seq & 1U) == 0 || watch->fired_reason(seq) != 0) return;
    const int64_t running_ns = now - watch->started_ns.load(std::memory_order_relaxed);
    const int64_t limit_ns = watch->limit_ns.load(std::memory_order_relaxed);
    const bool on_signal = watch->stop_on_signal.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (watch->seq.load(std::memory_order_relaxed) != seq) return;  // another call by now
    int reason = 0;
    // A call that started just before the signal is left to end: the run then stops at its next
    // update, as for a signal between calls.
    if (signal_number != 0 && on_signal && running_ns >= std::chrono::nanoseconds(kPoll).count()) {
      reason = signal_number;
    } else if (running_ns >= limit_ns) {
      reason = kTimedOut;
    }
    if (reason == 0) return;
    watch->fired.store((seq << 8U) | static_cast<uint64_t>(reason));
    stopped_.push_back({watch, seq, reason, now});
    const int wake = wake_signal.load();
    if (watch->main_thread.load() == 1 && wake != 0) pthread_kill(watch->thread, wake);
    raise_in(watch, seq, reason);
  }

  // Raises the reason's exception in the call from a thread of its own: taking the GIL may wait for
  // as long as the call holds it. Only while that call runs: its end is marked under the GIL too.
  static void raise_in(const std::shared_ptr<CallWatch>& watch, uint64_t seq, int reason) {
    ++background_python;
    std::thread([watch, seq, reason] {
      if (Py_IsInitialized()) {
        const PyGILState_STATE gil = PyGILState_Ensure();
        if (watch->seq.load() == seq) PyThreadState_SetAsyncExc(watch->python_ident, exception_for(reason));
        PyGILState_Release(gil);
      }
      --background_python;
    }).detach();
  }

  // The call did not end within kGrace of its exception: the run's checkpoint of its last update
  // (its thread waits for this call, so the learner is still), one line, and the process ends;
  // unless the call ended meanwhile.
  static void end_the_process(const Stopped& stopped) {
    const CallWatch& watch = *stopped.watch;
    const std::string note = core::save_last_resort_checkpoint();
    if (watch.seq.load() != stopped.seq) return;
    const std::string line =
        "concord: error: " +
        stopped_text(*watch.env_id.load(), watch.method.load(), watch.limit_seconds.load(), stopped.reason) +
        ", nor within " + std::to_string(kGrace.count()) + " ms of the " +
        (stopped.reason == kTimedOut ? "TimeoutError" : "KeyboardInterrupt") +
        " raised in it (C code that blocks or holds the GIL cannot be interrupted; Python code may catch it): the "
        "process ends" +
        (note.empty() ? std::string() : "; " + note) + "\n";
    for (size_t written = 0; written < line.size();) {
      const ssize_t n = ::write(STDERR_FILENO, line.data() + written, line.size() - written);
      if (n <= 0) break;
      written += static_cast<size_t>(n);
    }
    ::_exit(stopped.reason == kTimedOut ? 1 : 128 + stopped.reason);
  }

  std::mutex mutex_;
  std::vector<std::shared_ptr<CallWatch>> watches_;
  std::vector<Stopped> stopped_;  // calls stopped that have not ended yet
};

// The thread's CallWatch for as long as the thread lives.
struct WatchHolder {
  std::shared_ptr<CallWatch> watch;
  ~WatchHolder() {
    if (watch) Watchdog::instance().dismiss(watch.get());
  }
};
thread_local WatchHolder watch_holder;

CallWatch& my_watch() {
  if (!watch_holder.watch) {
    watch_holder.watch = std::make_shared<CallWatch>();
    Watchdog::instance().enlist(watch_holder.watch);
  }
  return *watch_holder.watch;
}

CallWatch* my_watch_if_any() { return watch_holder.watch.get(); }

// Marks a bounded call ended, under the GIL (so that the watchdog's exception is raised either
// before, and then is cleared here, or not at all); learns at a thread's first call whether it is
// Python's main thread. Nothing for an unbounded call (null).
class CallEnd {
 public:
  CallEnd(CallWatch* watch, uint64_t seq) : watch_(watch), seq_(seq) {
    if (watch_ == nullptr || watch_->main_thread.load(std::memory_order_relaxed) != -1) return;
    try {
      const py::object main = py::module_::import("threading").attr("main_thread")();
      const bool is_main = py::int_(main.attr("ident")).cast<unsigned long>() == watch_->python_ident;
      if (is_main) install_wake_signal();
      watch_->main_thread = is_main ? 1 : 0;
    } catch (const py::error_already_set&) {
      watch_->main_thread = 0;
    }
  }
  ~CallEnd() {
    if (watch_ == nullptr) return;
    watch_->seq.fetch_add(1);
    if (watch_->fired_reason(seq_) != 0) PyThreadState_SetAsyncExc(watch_->python_ident, nullptr);
  }
  CallEnd(const CallEnd&) = delete;
  CallEnd& operator=(const CallEnd&) = delete;

 private:
  CallWatch* watch_;
  uint64_t seq_;
};

// Ctrl-C in a script stepping concord.make() envs on Python's main thread: Python's own handler
// raised KeyboardInterrupt in the env's code (the watchdog did not), and it goes on as itself.
bool interrupted_by_user(const py::error_already_set& error, const CallWatch* watch, uint64_t seq) {
  return error.matches(PyExc_KeyboardInterrupt) && (watch == nullptr || watch->fired_reason(seq) == 0);
}

// What a Python env calls: its spec, its Python object and the last call's results.
struct PythonEnvState {
  PythonEnvState(envs::EnvSpec spec_, SharedObject env_)
      : spec(std::move(spec_)),
        env(std::move(env_)),
        observation(static_cast<size_t>(spec.observation_space.byte_size())) {}

  envs::EnvSpec spec;
  SharedObject env;
  std::vector<unsigned char> observation;  // the last call's, copied into the engine's row once it is done
  envs::StepResult step;

  std::string where(const char* method) const { return call_text(spec.id, method); }

  void reset(std::optional<uint64_t> seed, CallWatch* watch, uint64_t seq) {
    py::gil_scoped_acquire gil;
    const CallEnd end(watch, seq);
    try {
      py::object result = env->attr("reset")(py::arg("seed") = seed ? py::object(py::int_(*seed)) : py::none());
      write_observation(unpack(result, 2, "reset()")[0], "reset()");
    } catch (const py::error_already_set& error) {
      if (interrupted_by_user(error, watch, seq)) throw;
      throw std::runtime_error(where("reset()") + "raised " + python_error_text(error));
    }
  }

  void step_with(const envs::Action& action, CallWatch* watch, uint64_t seq) {
    py::gil_scoped_acquire gil;
    const CallEnd end(watch, seq);
    try {
      const py::tuple result = unpack(env->attr("step")(to_python(action)), 5, "step()");
      write_observation(result[0], "step()");
      step.reward = result[1].cast<float>();
      step.terminated = PyObject_IsTrue(result[2].ptr()) == 1;
      step.truncated = PyObject_IsTrue(result[3].ptr()) == 1;
    } catch (const py::error_already_set& error) {
      if (interrupted_by_user(error, watch, seq)) throw;
      throw std::runtime_error(where("step()") + "raised " + python_error_text(error));
    } catch (const py::cast_error&) {
      throw std::runtime_error(where("step()") + "returned a reward that is not a number");
    }
  }

  void close(CallWatch* watch, uint64_t seq) {
    py::gil_scoped_acquire gil;
    const CallEnd end(watch, seq);
    try {
      if (py::hasattr(*env, "close")) env->attr("close")();
    } catch (const py::error_already_set&) {
      // A failing close() must not end the process from a destructor.
    }
  }
  py::tuple unpack(const py::object& result, size_t size, const char* method) const {
    if (!py::isinstance<py::tuple>(result) || py::len(result) != size) {
      throw std::runtime_error(where(method) + "must return a tuple of " + std::to_string(size) +
                               " (Gymnasium's API), got " + std::string(py::repr(result)));
    }
    return result.cast<py::tuple>();
  }

  py::object to_python(const envs::Action& action) const {
    const envs::Space& space = spec.action_space;
    if (space.is_discrete()) return py::int_(action.index);
    py::array_t<float> values(space.shape());
    std::memcpy(values.mutable_data(), action.values, static_cast<size_t>(space.flat_size()) * sizeof(float));
    return std::move(values);
  }

  void write_observation(const py::handle& value, const char* method) {
    if (spec.observation_space.dtype() == envs::Dtype::kUInt8) {
      copy_into(py::array_t<uint8_t, py::array::c_style | py::array::forcecast>::ensure(value), method);
    } else {
      copy_into(py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(value), method);
    }
  }

  template <typename Element>
  void copy_into(const py::array_t<Element, py::array::c_style | py::array::forcecast>& values, const char* method) {
    const envs::Space& space = spec.observation_space;
    if (!values) {
      PyErr_Clear();
      throw std::runtime_error(where(method) + "returned an observation that is not an array of numbers");
    }
    if (values.size() != space.flat_size()) {
      throw std::runtime_error(where(method) + "returned an observation of " + std::to_string(values.size()) +
                               " values; observation_space " + space.to_string() + " holds " +
                               std::to_string(space.flat_size()));
    }
    std::memcpy(observation.data(), values.data(), static_cast<size_t>(space.byte_size()));
  }
};

class PythonEnv final : public envs::Env {
 public:
  PythonEnv(envs::EnvSpec spec, py::object env, double timeout_seconds)
      : envs::Env(spec),
        state_(std::make_unique<PythonEnvState>(std::move(spec), share(std::move(env)))),
        timeout_seconds_(timeout_seconds) {}

  ~PythonEnv() override {
    if (stuck_ || !Py_IsInitialized()) return;  // a call of it was stopped, or the interpreter is gone
    try {
      call("close()", /*stop_on_signal=*/false, [this](CallWatch* watch, uint64_t seq) { state_->close(watch, seq); });
    } catch (const std::exception&) {
      // A failing close() must not end the process from a destructor.
    }
  }

  PythonEnv(const PythonEnv&) = delete;
  PythonEnv& operator=(const PythonEnv&) = delete;

 private:
  void reset_observation(void* observation) override {
    const std::optional<uint64_t> seed = reset_seed();
    call("reset()", /*stop_on_signal=*/true,
         [this, seed](CallWatch* watch, uint64_t seq) { state_->reset(seed, watch, seq); });
    std::memcpy(observation, state_->observation.data(), state_->observation.size());
  }

  envs::StepResult step_observation(const envs::Action& action, void* observation) override {
    call("step()", /*stop_on_signal=*/true,
         [this, &action](CallWatch* watch, uint64_t seq) { state_->step_with(action, watch, seq); });
    std::memcpy(observation, state_->observation.data(), state_->observation.size());
    return state_->step;
  }

  // Runs `job(watch, seq)` on this thread, bounded (env.step_timeout_seconds; 0: no bound, no
  // watch). A call the watchdog stopped throws its line here, whatever the call itself threw.
  template <typename Job>
  void call(const char* method, bool stop_on_signal, const Job& job) {
    if (stuck_) {
      throw std::runtime_error(state_->where(method) +
                               "cannot run: an earlier call of this env was stopped before it returned");
    }
    if (timeout_seconds_ == 0.0) {
      job(nullptr, 0);
      return;
    }
    CallWatch& watch = my_watch();
    const uint64_t seq = watch.begin(&state_->spec.id, method, timeout_seconds_, stop_on_signal);
    if (seq == 0) {
      job(nullptr, 0);  // called from inside another env's call, whose bound holds
      return;
    }
    try {
      job(&watch, seq);
    } catch (abi::__forced_unwind&) {
      throw;  // the finalising interpreter ends this thread: let it
    } catch (...) {
      if (watch.seq.load() == seq) watch.seq.fetch_add(1);  // it threw before its CallEnd
      if (watch.fired_reason(seq) == 0) throw;
    }
    const int reason = watch.fired_reason(seq);
    if (reason == 0) return;
    stuck_ = true;
    const std::string text = stopped_text(state_->spec.id, method, timeout_seconds_, reason);
    if (reason != kTimedOut)
      throw envs::EnvInterrupted(text + "; it was stopped (KeyboardInterrupt raised in it)", reason);
    throw std::runtime_error(text + "; it was stopped (TimeoutError raised in it)");
  }

  std::unique_ptr<PythonEnvState> state_;
  double timeout_seconds_;
  bool stuck_ = false;
};

std::unique_ptr<envs::Env> make_python_env(const std::string& id, const py::object& factory, int max_episode_steps,
                                           std::optional<double> reward_threshold, double timeout_seconds) {
  py::gil_scoped_acquire gil;
  wait_for_background_python_at_exit();
  try {
    py::object env = factory();
    envs::EnvSpec spec{id,
                       space_from_python(env.attr("observation_space"), "observation_space of '" + id + "'"),
                       space_from_python(env.attr("action_space"), "action_space of '" + id + "'"),
                       max_episode_steps,
                       reward_threshold,
                       /*calls_interpreter=*/true};
    return std::make_unique<PythonEnv>(std::move(spec), std::move(env), timeout_seconds);
  } catch (const py::error_already_set& error) {
    throw std::invalid_argument("environment '" + id + "': making it raised " + python_error_text(error));
  }
}

// env.step_timeout_seconds as given, refused in one line where it is no limit.
double step_timeout(const std::string& id, const envs::EnvOptions& options) {
  const double seconds = options.step_timeout_seconds.value_or(envs::kDefaultStepTimeoutSeconds);
  if (!(seconds >= 0.0) || seconds > 1e9) {
    throw std::invalid_argument("env.step_timeout_seconds = " + seconds_text(seconds) + " for environment '" + id +
                                "' must lie in [0, 1e9] (0: no bound)");
  }
  return seconds;
}

}  // namespace

envs::Space space_from_python(const py::handle& space, const std::string& what) {
  if (py::hasattr(space, "n") && !py::hasattr(space, "nvec")) {
    const auto n = py::int_(space.attr("n")).cast<int64_t>();
    const auto start = py::hasattr(space, "start") ? py::int_(space.attr("start")).cast<int64_t>() : 0;
    if (n < 1 || start != 0) {
      throw std::invalid_argument(what + " must be Discrete(n) with n >= 1 and start 0, got " +
                                  std::string(py::repr(space)));
    }
    return envs::Space::discrete(n);
  }
  if (!py::hasattr(space, "low") || !py::hasattr(space, "high") || !py::hasattr(space, "shape") ||
      !py::hasattr(space, "dtype")) {
    throw std::invalid_argument(what + " must be a Box or a Discrete, got " + std::string(py::repr(space)));
  }
  return box_space(space.attr("low"), space.attr("high"), space.attr("shape"), space.attr("dtype"), what);
}

envs::Space box_space(const py::handle& low, const py::handle& high, const py::handle& shape, const py::handle& dtype,
                      const std::string& what) {
  py::module_ numpy = py::module_::import("numpy");
  const std::string name = py::str(numpy.attr("dtype")(dtype).attr("name"));
  if (name != "float32" && name != "float64" && name != "uint8") {
    throw std::invalid_argument(what + " must hold float32 or uint8 values (float64 is narrowed), got " + name);
  }
  const py::object dims =
      shape.is_none() ? numpy.attr("broadcast")(numpy.attr("asarray")(low), numpy.attr("asarray")(high)).attr("shape")
                      : py::reinterpret_borrow<py::object>(shape);
  std::vector<int64_t> sizes;
  for (const py::handle dim : dims) {
    sizes.push_back(dim.cast<int64_t>());
    if (sizes.back() < 1) throw std::invalid_argument(what + " has a dimension < 1: " + std::string(py::repr(dims)));
  }
  try {
    return envs::Space::box(sizes, flat_bounds(low, sizes), flat_bounds(high, sizes),
                            name == "uint8" ? envs::Dtype::kUInt8 : envs::Dtype::kFloat32);
  } catch (const py::error_already_set& error) {
    throw std::invalid_argument(what + ": bounds " + python_error_text(error));
  }
}

void register_python_env(const std::string& id, const py::object& factory, int max_episode_steps,
                         std::optional<double> reward_threshold, bool check) {
  if (!PyCallable_Check(factory.ptr())) {
    throw std::invalid_argument("register_env('" + id +
                                "'): factory must be callable (an Env class or a function "
                                "returning an env), got " +
                                std::string(py::repr(factory)));
  }
  if (max_episode_steps < 0) {
    throw std::invalid_argument("register_env('" + id + "'): max_episode_steps must be >= 0, got " +
                                std::to_string(max_episode_steps));
  }
  envs::Registry& registry = envs::Registry::global();
  if (registry.contains(id)) throw std::invalid_argument("environment '" + id + "' is already registered");
  if (check) make_python_env(id, factory, max_episode_steps, reward_threshold, envs::kDefaultStepTimeoutSeconds);
  registry.add_configurable(
      id, [id, held = share(factory), max_episode_steps, reward_threshold](const envs::EnvOptions& options) {
        options.refuse_others(id, {"step_timeout_seconds"});
        return make_python_env(id, *held, max_episode_steps, reward_threshold, step_timeout(id, options));
      });
}

void bind_env_registration(py::module_& module) {
  module.def("_register_env", &register_python_env, py::arg("id"), py::arg("factory"), py::arg("max_episode_steps"),
             py::arg("reward_threshold"), py::arg("check"),
             "Registers a Python env in this extension module's registry; concord.register_env() calls it.");
}

}  // namespace concord::python
