#pragma once

#include <functional>
#include <map>
#include <string>

#include <ATen/core/Tensor.h>

namespace concord::core {

// Named tensors: a checkpoint's, an algorithm's Experience, a batch of transitions, a replay
// sample. The comparator is transparent (std::less<>), so find() and count() with a literal or a
// std::string_view compare in place instead of building a std::string: an off-policy learner
// looks fields up by literal names at every environment step, and a name longer than 15
// characters would cost a heap allocation each time.
using TensorMap = std::map<std::string, at::Tensor, std::less<>>;

}  // namespace concord::core
