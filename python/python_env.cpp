// A Python object with Gymnasium's Env API behind the engine's Env interface. Every call into
// Python takes the GIL itself: the engine steps envs on its own threads (env.num_threads) and
// training releases the GIL for its whole length, so no caller can be relied on to hold it.
//
// Every reset() and step() is bounded (env.step_timeout_seconds) and gives way to a stop signal:
//
//   engine thread: reset/step -> job (inputs copied) -> its InterpreterThread runs it under the GIL
//                  <- waits for it: done / the limit passed / SIGINT or SIGTERM (core/stop_request.h)
//
// A call that does not come back in time is abandoned: the engine thread throws (one line naming
// the env and the limit, or envs::EnvInterrupted), the interpreter thread is left to finish the
// call whenever it does (an exception is raised in it, which ends Python code that is running;
// a blocking call such as time.sleep ends when it ends), and the env refuses every later call. The
// job holds what it touches (the Python object, its own observation buffer), so nothing it
// writes belongs to the engine any more by then.
#include "python_env.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <exception>
#include <functional>
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

// A flag one thread raises and another waits for: the waiter spins for kSpin first, then sleeps
// on a condition variable, and the raiser notifies only a waiter that sleeps. A Python step takes
// microseconds and a wake-up through the kernel takes as long again, so a caller that steps envs
// back to back seldom sleeps.
class Doorbell {
 public:
  void ring() {
    rung_.store(true);
    if (sleeping_.load()) {
      const std::lock_guard<std::mutex> lock(mutex_);
      woken_.notify_one();
    }
  }

  // True once rung (and the flag is lowered again), false at `deadline`.
  bool wait_until(Clock::time_point deadline, bool spin) {
    if (spin) {
      const Clock::time_point spin_end = std::min(deadline, Clock::now() + kSpin);
      for (int i = 1;; ++i) {
        if (rung_.exchange(false)) return true;
        if (i % 64 == 0 && Clock::now() >= spin_end) break;
        relax();
      }
    }
    std::unique_lock<std::mutex> lock(mutex_);
    sleeping_.store(true);
    const bool rung = woken_.wait_until(lock, deadline, [this] { return rung_.load(); });
    sleeping_.store(false);
    if (rung) rung_.store(false);
    return rung;
  }

 private:
  static constexpr std::chrono::microseconds kSpin{30};
  static void relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }

  std::atomic<bool> rung_{false};
  std::atomic<bool> sleeping_{false};
  std::mutex mutex_;
  std::condition_variable woken_;
};

// Threads that may still touch Python after their call was abandoned: an abandoned interpreter
// thread until its call came back and it let go of its thread state, and the thread that raises an
// exception in that call. The interpreter's exit waits for them (at most kExitWait): a thread that
// takes the GIL once the interpreter finalises is ended there, and its C++ frames would unwind
// through Python objects without the GIL (it crashed the exit when a busy loop was abandoned).
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

// A thread that runs jobs calling into Python, one at a time, for one engine thread (each engine
// thread has its own: thread_local below). It holds a Python thread state of its own for its
// life, so that taking the GIL for a job costs no thread-state set-up.
class InterpreterThread {
 public:
  enum class Outcome { kDone, kTimedOut, kInterrupted };

  InterpreterThread() : shared_(std::make_shared<Shared>()) { std::thread(serve, shared_).detach(); }

  ~InterpreterThread() {
    if (shared_->abandoned) return;  // the thread ends by itself once its call comes back
    shared_->quit = true;
    shared_->posted.ring();
  }

  InterpreterThread(const InterpreterThread&) = delete;
  InterpreterThread& operator=(const InterpreterThread&) = delete;

  // Runs `job` there and waits for it at most `limit`, and, with `stop_on_signal`, until a stop
  // signal. kDone: it finished (what it threw is rethrown here). Otherwise the thread is abandoned
  // (abandoned() is true from then on): it is told to raise an exception in the running call
  // (`raise_in_call`, e.g. PyExc_TimeoutError) and ends once the call comes back.
  Outcome run(std::function<void()> job, Clock::duration limit, bool stop_on_signal, PyObject* raise_in_call,
              int* signal_number) {
    if (PyGILState_Check() != 0) {
      // A caller that holds the GIL (register_env's check) would wait for itself: no bound then.
      job();
      return Outcome::kDone;
    }
    shared_->job = std::move(job);
    shared_->error = nullptr;
    shared_->posted.ring();
    const Clock::time_point deadline = Clock::now() + limit;
    bool spin = true;
    for (;;) {
      const Clock::time_point slice = std::min(deadline, Clock::now() + std::chrono::milliseconds(50));
      if (shared_->finished.wait_until(slice, spin)) break;
      spin = false;
      const int signal = stop_on_signal ? core::requested_stop_signal() : 0;
      if (signal != 0 || Clock::now() >= deadline) {
        abandon(raise_in_call);
        if (signal_number != nullptr) *signal_number = signal;
        return signal != 0 ? Outcome::kInterrupted : Outcome::kTimedOut;
      }
    }
    if (shared_->error) std::rethrow_exception(std::exchange(shared_->error, nullptr));
    return Outcome::kDone;
  }

  bool abandoned() const { return shared_->abandoned; }

 private:
  struct Shared {
    Doorbell posted;    // a job (or quit) for the thread
    Doorbell finished;  // the job is done
    std::function<void()> job;
    std::exception_ptr error;
    std::atomic<bool> quit{false};
    std::atomic<bool> abandoned{false};
    std::atomic<bool> counted{false};  // in background_python
    std::atomic<unsigned long> python_thread{0};
  };

  static void serve(std::shared_ptr<Shared> shared) {
    shared->python_thread = PyThread_get_thread_ident();
    PyThreadState* own_state = nullptr;
    PyGILState_STATE gil_state{};
    for (;;) {
      while (!shared->posted.wait_until(Clock::now() + std::chrono::hours(1), /*spin=*/true)) {
      }
      if (shared->quit || shared->abandoned || !Py_IsInitialized()) break;
      if (own_state == nullptr) {
        gil_state = PyGILState_Ensure();  // this thread's state, kept: every job's gil_scoped_acquire finds it
        own_state = PyEval_SaveThread();
      }
      std::function<void()> job = std::exchange(shared->job, nullptr);
      try {
        job();
      } catch (abi::__forced_unwind&) {
        throw;  // the interpreter ends this thread (it finalises): let it
      } catch (...) {
        shared->error = std::current_exception();
      }
      job = nullptr;  // what it held goes now, not with the next job
      if (shared->abandoned) break;
      shared->finished.ring();
    }
    // The thread state is left to the interpreter where it has finished (it frees them all).
    if (own_state != nullptr && Py_IsInitialized()) {
      PyEval_RestoreThread(own_state);
      PyGILState_Release(gil_state);
    }
    if (shared->counted.exchange(false)) --background_python;
  }

  // Marks the thread abandoned, and raises `exception` in the call it is running, from a thread of
  // its own: taking the GIL may wait for as long as the call holds it.
  void abandon(PyObject* exception) {
    if (!shared_->counted.exchange(true)) ++background_python;
    shared_->abandoned = true;
    shared_->posted.ring();  // a thread that finished its call just now ends instead of waiting for more
    const unsigned long target = shared_->python_thread;
    ++background_python;
    std::thread([target, exception] {
      if (Py_IsInitialized()) {
        py::gil_scoped_acquire gil;
        PyThreadState_SetAsyncExc(target, exception);
      }
      --background_python;
    }).detach();
  }

  std::shared_ptr<Shared> shared_;
};

// The calling thread's interpreter thread; a fresh one after one was abandoned.
InterpreterThread& interpreter_thread() {
  thread_local std::unique_ptr<InterpreterThread> thread;
  if (!thread || thread->abandoned()) thread = std::make_unique<InterpreterThread>();
  return *thread;
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

// What a job touches: shared with the interpreter thread, which may outlive the env when a call of
// it never came back.
struct PythonEnvState {
  PythonEnvState(envs::EnvSpec spec_, SharedObject env_)
      : spec(std::move(spec_)),
        env(std::move(env_)),
        observation(static_cast<size_t>(spec.observation_space.byte_size())) {}

  envs::EnvSpec spec;
  SharedObject env;
  std::vector<unsigned char> observation;  // the last call's, copied into the engine's row once it is done
  envs::StepResult step;

  std::string where(const char* method) const { return "environment '" + spec.id + "': " + method + " "; }

  void reset(std::optional<uint64_t> seed) {
    py::gil_scoped_acquire gil;
    try {
      py::object result = env->attr("reset")(py::arg("seed") = seed ? py::object(py::int_(*seed)) : py::none());
      write_observation(unpack(result, 2, "reset()")[0], "reset()");
    } catch (const py::error_already_set& error) {
      throw std::runtime_error(where("reset()") + "raised " + python_error_text(error));
    }
  }

  void step_with(const envs::Action& action) {
    py::gil_scoped_acquire gil;
    try {
      const py::tuple result = unpack(env->attr("step")(to_python(action)), 5, "step()");
      write_observation(result[0], "step()");
      step.reward = result[1].cast<float>();
      step.terminated = PyObject_IsTrue(result[2].ptr()) == 1;
      step.truncated = PyObject_IsTrue(result[3].ptr()) == 1;
    } catch (const py::error_already_set& error) {
      throw std::runtime_error(where("step()") + "raised " + python_error_text(error));
    } catch (const py::cast_error&) {
      throw std::runtime_error(where("step()") + "returned a reward that is not a number");
    }
  }

  void close() {
    py::gil_scoped_acquire gil;
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
        state_(std::make_shared<PythonEnvState>(std::move(spec), share(std::move(env)))),
        timeout_seconds_(timeout_seconds) {}

  ~PythonEnv() override {
    if (stuck_ || !Py_IsInitialized()) return;  // a call still runs in it, or the interpreter is gone
    if (timeout_seconds_ == 0.0) {
      state_->close();
      return;
    }
    try {
      std::shared_ptr<PythonEnvState> state = state_;
      interpreter_thread().run([state] { state->close(); }, timeout(), /*stop_on_signal=*/false, PyExc_TimeoutError,
                               nullptr);
    } catch (const std::exception&) {
      // A failing close() must not end the process from a destructor.
    }
  }

 private:
  void reset_observation(void* observation) override {
    call("reset()", [state = state_, seed = reset_seed()] { state->reset(seed); });
    std::memcpy(observation, state_->observation.data(), state_->observation.size());
  }

  envs::StepResult step_observation(const envs::Action& action, void* observation) override {
    std::function<void()> job;
    if (spec().action_space.is_discrete()) {
      job = [state = state_, index = action.index] {
        envs::Action copy;
        copy.index = index;
        state->step_with(copy);
      };
    } else {
      // The engine's action row is the engine's: an abandoned call must not read it later.
      job = [state = state_,
             values = std::vector<float>(action.values, action.values + spec().action_space.flat_size())] {
        envs::Action copy;
        copy.values = values.data();
        state->step_with(copy);
      };
    }
    call("step()", std::move(job));
    std::memcpy(observation, state_->observation.data(), state_->observation.size());
    return state_->step;
  }

  Clock::duration timeout() const {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_seconds_));
  }

  void call(const char* method, std::function<void()> job) {
    if (stuck_) {
      throw std::runtime_error(state_->where(method) + "cannot run: an earlier call of this env never returned");
    }
    if (timeout_seconds_ == 0.0) {
      job();  // env.step_timeout_seconds = 0: no bound, no hand-over (the fastest)
      return;
    }
    int signal_number = 0;
    const InterpreterThread::Outcome outcome = interpreter_thread().run(
        std::move(job), timeout(), /*stop_on_signal=*/true, PyExc_TimeoutError, &signal_number);
    if (outcome == InterpreterThread::Outcome::kDone) return;
    stuck_ = true;
    if (outcome == InterpreterThread::Outcome::kInterrupted) {
      throw envs::EnvInterrupted(
          state_->where(method) + "had not returned when " + signal_name(signal_number) + " arrived; it was abandoned",
          signal_number);
    }
    throw std::runtime_error(state_->where(method) + "did not return within env.step_timeout_seconds = " +
                             seconds_text(timeout_seconds_) + " s; it was abandoned");
  }

  std::shared_ptr<PythonEnvState> state_;
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
