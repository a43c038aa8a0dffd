#include "concord/explore/checkpoint_tensor.h"

#include <sstream>

namespace concord::explore {

torch::Tensor required_tensor(const core::Checkpoint& checkpoint, const std::string& name,
                              const std::vector<int64_t>& shape, const std::string& hint) {
  const auto found = checkpoint.tensors.find(name);
  if (found != checkpoint.tensors.end() && found->second.sizes().equals(shape)) return found->second;
  std::ostringstream problem;
  problem << "exploration state '" << name << "' of shape " << c10::IntArrayRef(shape);
  if (found == checkpoint.tensors.end()) {
    problem << " is missing";
  } else {
    problem << " has shape " << found->second.sizes();
  }
  problem << " (" << hint << ")";
  throw core::CheckpointError(core::CheckpointError::Kind::kTensorMissing, "", problem.str());
}

}  // namespace concord::explore
