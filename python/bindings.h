#pragma once

// Shared by the binding sources of the extension module concord._envs. Torch-free on purpose: it
// sits on the envs layer alone, so importing it does not load LibTorch.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>

#include "concord/envs/space.h"

namespace concord::python {

namespace py = pybind11;

// Defines Box, Discrete and MultiDiscrete (spaces.cpp).
void bind_spaces(py::module_& module);
// Defines VectorEnv, make() and list_envs() (vector_env_binding.cpp).
void bind_vector_env(py::module_& module);

// The Python space for one element of `space` (batch == 0), or for `batch` of them stacked the
// way Gymnasium's batch_space() stacks them: Box -> Box (batch, *shape), Discrete(n) ->
// MultiDiscrete([n] * batch).
py::object make_space(const envs::Space& space, int64_t batch = 0);

// numpy's dtype for the engine's element type.
py::dtype numpy_dtype(envs::Dtype dtype);

}  // namespace concord::python
