#pragma once

#include <pybind11/pybind11.h>

namespace concord::python {

namespace py = pybind11;

// Defines train(...) (train_binding.cpp).
void bind_training(py::module_& module);
// Defines TrainedPolicy, load(path) and evaluate(path, ...) (trained_policy_binding.cpp).
void bind_trained_policy(py::module_& module);

}  // namespace concord::python
