#include "concord/core/checkpoint_fields.h"

#include <sstream>

namespace concord::core {
namespace {

CheckpointError corrupt(const std::string& problem) {
  return CheckpointError(CheckpointError::Kind::kCorrupt, {}, problem);
}

const nlohmann::json& metadata_value(const Checkpoint& checkpoint, const std::string& section, const std::string& key) {
  const auto found_section = checkpoint.metadata.find(section);
  if (found_section == checkpoint.metadata.end() || !found_section->is_object()) {
    throw corrupt("metadata '" + section + "' is missing");
  }
  const auto found = found_section->find(key);
  if (found == found_section->end()) throw corrupt("metadata '" + section + "." + key + "' is missing");
  return *found;
}

}  // namespace

void checkpoint_corrupt(const std::string& problem) { throw corrupt(problem); }

int64_t metadata_int(const Checkpoint& checkpoint, const std::string& key) {
  const nlohmann::json& metadata = checkpoint.metadata;
  if (!metadata.contains(key) || !metadata[key].is_number_integer()) {
    throw corrupt("metadata '" + key + "' is missing or not an integer");
  }
  return metadata[key].get<int64_t>();
}

int64_t metadata_int(const Checkpoint& checkpoint, const std::string& section, const std::string& key) {
  const nlohmann::json& value = metadata_value(checkpoint, section, key);
  if (!value.is_number_integer()) throw corrupt("metadata '" + section + "." + key + "' is not an integer");
  return value.get<int64_t>();
}

double metadata_double(const Checkpoint& checkpoint, const std::string& section, const std::string& key) {
  const nlohmann::json& value = metadata_value(checkpoint, section, key);
  if (!value.is_number()) throw corrupt("metadata '" + section + "." + key + "' is not a number");
  return value.get<double>();
}

std::string metadata_string(const Checkpoint& checkpoint, const std::string& section, const std::string& key) {
  const nlohmann::json& value = metadata_value(checkpoint, section, key);
  if (!value.is_string()) throw corrupt("metadata '" + section + "." + key + "' is not a string");
  return value.get<std::string>();
}

const at::Tensor& checkpoint_tensor(const Checkpoint& checkpoint, const std::string& name) {
  const auto found = checkpoint.tensors.find(name);
  if (found == checkpoint.tensors.end()) {
    throw CheckpointError(CheckpointError::Kind::kTensorMissing, {}, "tensor '" + name + "' is missing");
  }
  return found->second;
}

TensorMap tensors_under(const Checkpoint& checkpoint, const std::string& prefix) {
  TensorMap found;
  for (const auto& [name, tensor] : checkpoint.tensors) {
    if (name.rfind(prefix, 0) == 0) found[name.substr(prefix.size())] = tensor;
  }
  return found;
}

const at::Tensor& checkpoint_tensor(const Checkpoint& checkpoint, const std::string& name, const at::Tensor& like) {
  const at::Tensor& tensor = checkpoint_tensor(checkpoint, name);
  if (tensor.sizes() != like.sizes() || tensor.scalar_type() != like.scalar_type()) {
    std::ostringstream problem;
    problem << "tensor '" << name << "' is " << tensor.scalar_type() << " " << tensor.sizes() << ", expected "
            << like.scalar_type() << " " << like.sizes();
    throw corrupt(problem.str());
  }
  return tensor;
}

std::string rng_state(const Rng& rng) {
  std::ostringstream out;
  out << rng;
  return out.str();
}

void restore_rng(Rng& rng, const std::string& state, const std::string& what) {
  std::istringstream in(state);
  Rng restored;
  in >> restored;
  if (in.fail()) throw corrupt("metadata '" + what + "' is not a generator state");
  rng = restored;
}

}  // namespace concord::core
