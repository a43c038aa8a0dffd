#include "concord/algos/module_checkpoint.h"

#include <c10/core/GradMode.h>

#include <exception>
#include <sstream>

#include "concord/core/checkpoint_fields.h"
#include "concord/core/optimizer_bytes.h"

namespace concord::algos {

torch::OrderedDict<std::string, at::Tensor> module_state(const torch::nn::Module& module) {
  torch::OrderedDict<std::string, at::Tensor> state = module.named_parameters();
  for (const auto& buffer : module.named_buffers()) state.insert(buffer.key(), buffer.value());
  return state;
}

void save_module(core::Checkpoint& checkpoint, const std::string& prefix, const torch::nn::Module& module) {
  for (const auto& tensor : module_state(module)) {
    checkpoint.tensors[prefix + tensor.key()] = tensor.value().detach().clone();
  }
}

void check_module(const core::Checkpoint& checkpoint, const std::string& prefix, const torch::nn::Module& module,
                  const ModuleHints& hints) {
  const auto state = module_state(module);
  for (const auto& tensor : state) {
    const std::string name = prefix + tensor.key();
    const auto found = checkpoint.tensors.find(name);
    if (found == checkpoint.tensors.end()) {
      throw core::CheckpointError(
          core::CheckpointError::Kind::kTensorMissing, "",
          "tensor '" + name + "' is missing" + (hints.missing ? hints.missing(tensor.key()) : std::string()));
    }
    if (found->second.sizes() != tensor.value().sizes()) {
      std::ostringstream out;
      out << "tensor '" << name << "' has shape " << found->second.sizes() << ", this learner's is "
          << tensor.value().sizes();
      core::checkpoint_corrupt(out.str());
    }
  }
  for (const auto& entry : checkpoint.tensors) {
    if (entry.first.rfind(prefix, 0) != 0) continue;
    const std::string key = entry.first.substr(prefix.size());
    if (!state.contains(key)) {
      core::checkpoint_corrupt("tensor '" + entry.first + "' is not a parameter or buffer of this learner" +
                               (hints.unexpected ? hints.unexpected(key) : std::string()));
    }
  }
}

void load_module(const core::Checkpoint& checkpoint, const std::string& prefix, torch::nn::Module& module) {
  c10::NoGradGuard no_grad;
  for (const auto& tensor : module_state(module)) tensor.value().copy_(checkpoint.tensors.at(prefix + tensor.key()));
}

void save_optimizer(core::Checkpoint& checkpoint, const std::string& name, const torch::optim::Optimizer& optimizer) {
  checkpoint.tensors[name] = core::optimizer_to_bytes(optimizer);
}

void check_optimizer(const core::Checkpoint& checkpoint, const std::string& name, torch::optim::Optimizer& scratch,
                     const at::Device& device) {
  const at::Tensor& bytes = core::checkpoint_tensor(checkpoint, name);
  try {
    core::optimizer_from_bytes(bytes, scratch, device);
  } catch (const std::exception& error) {
    core::checkpoint_corrupt("tensor '" + name + "' is not a readable optimiser state: " + error.what());
  }
}

void load_optimizer(const core::Checkpoint& checkpoint, const std::string& name, torch::optim::Optimizer& optimizer,
                    const at::Device& device) {
  core::optimizer_from_bytes(checkpoint.tensors.at(name), optimizer, device);
}

void check_algorithm(const core::Checkpoint& checkpoint, const std::string& algorithm) {
  const nlohmann::json& metadata = checkpoint.metadata;
  if (!metadata.contains("algorithm") || metadata["algorithm"] != algorithm) {
    core::checkpoint_corrupt("metadata 'algorithm' is " +
                             (metadata.contains("algorithm") ? metadata["algorithm"].dump() : std::string("missing")) +
                             ", expected \"" + algorithm + "\"");
  }
}

}  // namespace concord::algos
