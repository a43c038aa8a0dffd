// A Python object with Gymnasium's Env API behind the engine's Env interface. Every call into
// Python takes the GIL itself: the engine steps envs on its own threads (env.num_threads) and
// training releases the GIL for its whole length, so no caller can be relied on to hold it.
#include "python_env.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "concord/envs/env.h"
#include "concord/envs/registry.h"

namespace concord::python {
namespace {

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

class PythonEnv final : public envs::Env {
 public:
  PythonEnv(envs::EnvSpec spec, py::object env) : envs::Env(std::move(spec)), env_(std::move(env)) {}

  ~PythonEnv() override {
    if (!Py_IsInitialized()) {
      env_.release();  // the interpreter is gone: nothing left to close or free
      return;
    }
    py::gil_scoped_acquire gil;
    try {
      if (py::hasattr(env_, "close")) env_.attr("close")();
    } catch (const py::error_already_set&) {
      // A failing close() must not end the process from a destructor.
    }
    env_ = py::object();
  }

 private:
  void reset_observation(void* observation) override {
    py::gil_scoped_acquire gil;
    try {
      const std::optional<uint64_t> seed = reset_seed();
      py::object result = env_.attr("reset")(py::arg("seed") = seed ? py::object(py::int_(*seed)) : py::none());
      write_observation(unpack(result, 2, "reset()")[0], observation, "reset()");
    } catch (const py::error_already_set& error) {
      throw std::runtime_error(where("reset()") + "raised " + python_error_text(error));
    }
  }

  envs::StepResult step_observation(const envs::Action& action, void* observation) override {
    py::gil_scoped_acquire gil;
    try {
      const py::tuple result = unpack(env_.attr("step")(to_python(action)), 5, "step()");
      write_observation(result[0], observation, "step()");
      envs::StepResult step;
      step.reward = result[1].cast<float>();
      step.terminated = PyObject_IsTrue(result[2].ptr()) == 1;
      step.truncated = PyObject_IsTrue(result[3].ptr()) == 1;
      return step;
    } catch (const py::error_already_set& error) {
      throw std::runtime_error(where("step()") + "raised " + python_error_text(error));
    } catch (const py::cast_error&) {
      throw std::runtime_error(where("step()") + "returned a reward that is not a number");
    }
  }

  std::string where(const char* method) const { return "environment '" + spec().id + "': " + method + " "; }

  py::tuple unpack(const py::object& result, size_t size, const char* method) const {
    if (!py::isinstance<py::tuple>(result) || py::len(result) != size) {
      throw std::runtime_error(where(method) + "must return a tuple of " + std::to_string(size) +
                               " (Gymnasium's API), got " + std::string(py::repr(result)));
    }
    return result.cast<py::tuple>();
  }

  py::object to_python(const envs::Action& action) const {
    const envs::Space& space = spec().action_space;
    if (space.is_discrete()) return py::int_(action.index);
    py::array_t<float> values(space.shape());
    std::memcpy(values.mutable_data(), action.values, static_cast<size_t>(space.flat_size()) * sizeof(float));
    return std::move(values);
  }

  void write_observation(const py::handle& value, void* observation, const char* method) const {
    const envs::Space& space = spec().observation_space;
    if (space.dtype() == envs::Dtype::kUInt8) {
      copy_into(py::array_t<uint8_t, py::array::c_style | py::array::forcecast>::ensure(value), observation, method);
    } else {
      copy_into(py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(value), observation, method);
    }
  }

  template <typename Element>
  void copy_into(const py::array_t<Element, py::array::c_style | py::array::forcecast>& values, void* observation,
                 const char* method) const {
    const envs::Space& space = spec().observation_space;
    if (!values) {
      PyErr_Clear();
      throw std::runtime_error(where(method) + "returned an observation that is not an array of numbers");
    }
    if (values.size() != space.flat_size()) {
      throw std::runtime_error(where(method) + "returned an observation of " + std::to_string(values.size()) +
                               " values; observation_space " + space.to_string() + " holds " +
                               std::to_string(space.flat_size()));
    }
    std::memcpy(observation, values.data(), static_cast<size_t>(space.byte_size()));
  }

  py::object env_;
};

std::unique_ptr<envs::Env> make_python_env(const std::string& id, const py::object& factory, int max_episode_steps,
                                           std::optional<double> reward_threshold) {
  py::gil_scoped_acquire gil;
  try {
    py::object env = factory();
    envs::EnvSpec spec{id,
                       space_from_python(env.attr("observation_space"), "observation_space of '" + id + "'"),
                       space_from_python(env.attr("action_space"), "action_space of '" + id + "'"),
                       max_episode_steps,
                       reward_threshold,
                       /*calls_interpreter=*/true};
    return std::make_unique<PythonEnv>(std::move(spec), std::move(env));
  } catch (const py::error_already_set& error) {
    throw std::invalid_argument("environment '" + id + "': making it raised " + python_error_text(error));
  }
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
  if (check) make_python_env(id, factory, max_episode_steps, reward_threshold);
  registry.add(id, [id, held = share(factory), max_episode_steps, reward_threshold] {
    return make_python_env(id, *held, max_episode_steps, reward_threshold);
  });
}

void bind_env_registration(py::module_& module) {
  module.def("_register_env", &register_python_env, py::arg("id"), py::arg("factory"), py::arg("max_episode_steps"),
             py::arg("reward_threshold"), py::arg("check"),
             "Registers a Python env in this extension module's registry; concord.register_env() calls it.");
}

}  // namespace concord::python
