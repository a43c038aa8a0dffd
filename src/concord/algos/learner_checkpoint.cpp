#include "concord/algos/learner_checkpoint.h"

#include <c10/core/GradMode.h>

#include <exception>
#include <stdexcept>

#include "concord/core/optimizer_bytes.h"

namespace concord::algos {
namespace {

using core::optimizer_from_bytes;
using core::optimizer_to_bytes;

[[noreturn]] void corrupt(const std::string& problem) {
  throw core::CheckpointError(core::CheckpointError::Kind::kCorrupt, "", problem);
}

// Everything of the model a checkpoint holds: its parameters and its buffers, by name.
torch::OrderedDict<std::string, at::Tensor> model_state(const nn::ActorCritic& model) {
  torch::OrderedDict<std::string, at::Tensor> state = model->named_parameters();
  for (const auto& buffer : model->named_buffers()) state.insert(buffer.key(), buffer.value());
  return state;
}

}  // namespace

void save_learner_state(core::Checkpoint& checkpoint, const std::string& algorithm, const nn::ActorCritic& model,
                        const torch::optim::Optimizer& optimizer, int64_t updates, const RewardScaler* reward_scaler) {
  for (const auto& tensor : model_state(model)) {
    checkpoint.tensors["model/" + tensor.key()] = tensor.value().detach().clone();
  }
  checkpoint.tensors["optimizer"] = optimizer_to_bytes(optimizer);
  if (reward_scaler) reward_scaler->save(checkpoint);
  checkpoint.metadata["algorithm"] = algorithm;
  checkpoint.metadata["updates"] = updates;
}

int64_t load_learner_state(const core::Checkpoint& checkpoint, const std::string& algorithm,
                           const nn::ActorCritic& model, torch::optim::Optimizer& optimizer,
                           torch::optim::Optimizer& scratch, RewardScaler* reward_scaler) {
  const nlohmann::json& metadata = checkpoint.metadata;
  if (!metadata.contains("algorithm") || metadata["algorithm"] != algorithm) {
    corrupt("metadata \"algorithm\" is " + (metadata.contains("algorithm") ? metadata["algorithm"].dump() : "missing") +
            ", expected \"" + algorithm + "\"");
  }
  if (!metadata.contains("updates") || !metadata["updates"].is_number_integer()) {
    corrupt("metadata \"updates\" is missing or not an integer");
  }
  // Every parameter and buffer present with its shape, and nothing else under "model/".
  const auto state = model_state(model);
  const auto buffers = model->named_buffers();
  for (const auto& tensor : state) {
    const std::string name = "model/" + tensor.key();
    const auto found = checkpoint.tensors.find(name);
    if (found == checkpoint.tensors.end()) {
      throw core::CheckpointError(
          core::CheckpointError::Kind::kTensorMissing, "",
          "tensor \"" + name + "\" is missing" +
              (buffers.contains(tensor.key()) ? " (saved without observation normalisation?)" : ""));
    }
    if (found->second.sizes() != tensor.value().sizes()) {
      std::ostringstream out;
      out << "tensor \"" << name << "\" has shape " << found->second.sizes() << ", the model's is "
          << tensor.value().sizes();
      corrupt(out.str());
    }
  }
  for (const auto& entry : checkpoint.tensors) {
    if (entry.first.rfind("model/", 0) == 0 && !state.contains(entry.first.substr(6))) {
      corrupt("tensor \"" + entry.first + "\" is not a parameter or buffer of this model" +
              (entry.first.rfind("model/obs_rms.", 0) == 0 ? " (saved with observation normalisation?)" : ""));
    }
  }
  if (reward_scaler) {
    reward_scaler->check(checkpoint);
  } else if (RewardScaler::in_checkpoint(checkpoint)) {
    corrupt(
        "it holds reward-normalisation state (tensors \"reward_scaler/...\"), and this learner does not "
        "normalise rewards (algo." +
        algorithm + ".normalize_reward is false)");
  }
  const auto optimizer_state = checkpoint.tensors.find("optimizer");
  if (optimizer_state == checkpoint.tensors.end()) {
    throw core::CheckpointError(core::CheckpointError::Kind::kTensorMissing, "", "tensor \"optimizer\" is missing");
  }
  const at::Device device = model->parameters().front().device();
  try {
    optimizer_from_bytes(optimizer_state->second, scratch, device);
  } catch (const std::exception& error) {
    corrupt(std::string("tensor \"optimizer\" is not a readable optimiser state: ") + error.what());
  }

  {
    c10::NoGradGuard no_grad;
    for (const auto& tensor : state) {
      tensor.value().copy_(checkpoint.tensors.at("model/" + tensor.key()));
    }
  }
  optimizer_from_bytes(optimizer_state->second, optimizer, device);
  if (reward_scaler) reward_scaler->load(checkpoint);
  return metadata["updates"].get<int64_t>();
}

}  // namespace concord::algos
