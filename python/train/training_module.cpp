// concord._train: training, trained agents and their evaluation, for concord/__init__.py. A module
// of its own because it links LibTorch (seconds and 170 MB to load), which `import concord` and the
// environments alone do not need; concord.train(), load() and evaluate() import it on first use.
#include <pybind11/pybind11.h>

#include <stdexcept>

#include "../python_env.h"
#include "concord/core/checkpoint.h"
#include "concord/core/config.h"
#include "training_bindings.h"

PYBIND11_MODULE(_train, module) {
  module.doc() = "Concord's training from Python (internal: use concord.train, concord.load, concord.evaluate).";
  // Config errors are bad arguments to Python callers; a missing checkpoint is a missing file.
  pybind11::register_local_exception_translator([](std::exception_ptr error) {
    try {
      if (error) std::rethrow_exception(error);
    } catch (const concord::core::ConfigError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const concord::core::CheckpointError& e) {
      PyErr_SetString(
          e.kind() == concord::core::CheckpointError::Kind::kMissing ? PyExc_FileNotFoundError : PyExc_RuntimeError,
          e.what());
    }
  });
  concord::python::bind_env_registration(module);
  concord::python::bind_training(module);
  concord::python::bind_trained_policy(module);
}
