#include "concord/algos/learner_checkpoint.h"

#include <ATen/ops/empty.h>
#include <c10/core/GradMode.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <cstring>
#include <exception>
#include <sstream>
#include <stdexcept>

namespace concord::algos {
namespace {

at::Tensor optimizer_to_bytes(const torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  std::ostringstream stream;
  archive.save_to(stream);
  const std::string bytes = stream.str();
  at::Tensor tensor = at::empty({static_cast<int64_t>(bytes.size())}, at::kByte);
  std::memcpy(tensor.data_ptr<uint8_t>(), bytes.data(), bytes.size());
  return tensor;
}

// Replaces the optimiser's state (LibTorch's load() keeps the state of parameters the archive
// lacks, so it is cleared first); its tensors go to `device`.
void optimizer_from_bytes(const at::Tensor& bytes, torch::optim::Optimizer& optimizer,
                          const at::Device& device) {
  if (bytes.scalar_type() != at::kByte || bytes.dim() != 1) {
    throw std::invalid_argument("expected a 1-D uint8 tensor");
  }
  const at::Tensor contiguous = bytes.to(at::kCPU).contiguous();
  torch::serialize::InputArchive archive;
  archive.load_from(reinterpret_cast<const char*>(contiguous.data_ptr<uint8_t>()),
                    static_cast<size_t>(contiguous.numel()), device);
  optimizer.state().clear();
  optimizer.load(archive);
}

[[noreturn]] void corrupt(const std::string& problem) {
  throw core::CheckpointError(core::CheckpointError::Kind::kCorrupt, "", problem);
}

}  // namespace

void save_learner_state(core::Checkpoint& checkpoint, const std::string& algorithm,
                        const nn::ActorCritic& model, const torch::optim::Optimizer& optimizer,
                        int64_t updates) {
  for (const auto& parameter : model->named_parameters()) {
    checkpoint.tensors["model/" + parameter.key()] = parameter.value().detach().clone();
  }
  checkpoint.tensors["optimizer"] = optimizer_to_bytes(optimizer);
  checkpoint.metadata["algorithm"] = algorithm;
  checkpoint.metadata["updates"] = updates;
}

int64_t load_learner_state(const core::Checkpoint& checkpoint, const std::string& algorithm,
                           const nn::ActorCritic& model, torch::optim::Optimizer& optimizer,
                           torch::optim::Optimizer& scratch) {
  const nlohmann::json& metadata = checkpoint.metadata;
  if (!metadata.contains("algorithm") || metadata["algorithm"] != algorithm) {
    corrupt("metadata \"algorithm\" is " +
            (metadata.contains("algorithm") ? metadata["algorithm"].dump() : "missing") +
            ", expected \"" + algorithm + "\"");
  }
  if (!metadata.contains("updates") || !metadata["updates"].is_number_integer()) {
    corrupt("metadata \"updates\" is missing or not an integer");
  }
  // Every parameter present with its shape, and nothing else under "model/".
  const auto parameters = model->named_parameters();
  for (const auto& parameter : parameters) {
    const std::string name = "model/" + parameter.key();
    const auto found = checkpoint.tensors.find(name);
    if (found == checkpoint.tensors.end()) {
      throw core::CheckpointError(core::CheckpointError::Kind::kTensorMissing, "",
                                  "tensor \"" + name + "\" is missing");
    }
    if (found->second.sizes() != parameter.value().sizes()) {
      std::ostringstream out;
      out << "tensor \"" << name << "\" has shape " << found->second.sizes() << ", the model's is "
          << parameter.value().sizes();
      corrupt(out.str());
    }
  }
  for (const auto& entry : checkpoint.tensors) {
    if (entry.first.rfind("model/", 0) == 0 && !parameters.contains(entry.first.substr(6))) {
      corrupt("tensor \"" + entry.first + "\" is not a parameter of this model");
    }
  }
  const auto state = checkpoint.tensors.find("optimizer");
  if (state == checkpoint.tensors.end()) {
    throw core::CheckpointError(core::CheckpointError::Kind::kTensorMissing, "",
                                "tensor \"optimizer\" is missing");
  }
  const at::Device device = parameters.front().value().device();
  try {
    optimizer_from_bytes(state->second, scratch, device);
  } catch (const std::exception& error) {
    corrupt(std::string("tensor \"optimizer\" is not a readable optimiser state: ") + error.what());
  }

  {
    c10::NoGradGuard no_grad;
    for (const auto& parameter : parameters) {
      parameter.value().copy_(checkpoint.tensors.at("model/" + parameter.key()));
    }
  }
  optimizer_from_bytes(state->second, optimizer, device);
  return metadata["updates"].get<int64_t>();
}

}  // namespace concord::algos
