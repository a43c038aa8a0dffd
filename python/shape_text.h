#pragma once

// Header-only, shared by both extension modules (concord._envs and concord._train).

#include <cstdint>
#include <string>
#include <vector>

namespace concord::python {

// A shape as Python prints a tuple: (3,) for one dimension, (2, 3) for two, () for none, so that
// error messages read as the shapes a Python user passes.
inline std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace concord::python
