#pragma once

// Environments written in Python with Gymnasium's Env API, as C++ environments of the envs
// registry: concord.register_env(). Torch-free, and compiled into both extension modules (each
// holds its own copy of the registry; concord/__init__.py registers every Python env in both).

#include <pybind11/pybind11.h>

#include <optional>
#include <string>

#include "concord/envs/space.h"

namespace concord::python {

namespace py = pybind11;

// A Gymnasium space (or Concord's own Box / Discrete, or any object with their attributes) as the
// engine's Space: Discrete(n) with start 0, or a Box of float32 (float64 is narrowed) or uint8.
// Throws std::invalid_argument naming `what` ("observation_space of 'Sign-v0'") otherwise.
envs::Space space_from_python(const py::handle& space, const std::string& what);

// Gymnasium's Box(low, high, shape=None, dtype=float32) as the engine's Space: the bounds broadcast
// to `shape` (None: their broadcast shape). Throws std::invalid_argument naming `what`.
envs::Space box_space(const py::handle& low, const py::handle& high, const py::handle& shape, const py::handle& dtype,
                      const std::string& what);

// Registers `factory` (a callable returning an object with reset(seed=None) -> (obs, info),
// step(action) -> (obs, reward, terminated, truncated, info), observation_space and action_space)
// under `id` in this module's registry. Every env it makes calls Python holding the GIL and is
// marked EnvSpec::calls_interpreter; the engine's thread calls its reset() and step() itself, and
// a watchdog stops one that runs longer than env.step_timeout_seconds
// (EnvOptions::step_timeout_seconds), or runs when SIGINT or SIGTERM comes (envs::EnvInterrupted):
// python_env.cpp. With `check`, one env is made at once so that a bad space fails here. Throws std::invalid_argument
// for an id already registered.
void register_python_env(const std::string& id, const py::object& factory, int max_episode_steps,
                         std::optional<double> reward_threshold, bool check);

// Defines _register_env(id, factory, max_episode_steps, reward_threshold, check) on `module`.
void bind_env_registration(py::module_& module);

}  // namespace concord::python
