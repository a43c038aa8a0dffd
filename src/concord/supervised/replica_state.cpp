#include "concord/supervised/replica_state.h"

#include <string>
#include <vector>

#include <torch/torch.h>

#include "concord/core/checkpoint_fields.h"
#include "concord/core/optimizer_bytes.h"
#include "concord/supervised/running_statistics.h"

namespace concord::supervised {
namespace {

// Tags of the gather: a rank's header size, its header, then its tensors in header order.
constexpr int kHeaderSizeTag = 0x46490;
constexpr int kHeaderTag = 0x46491;
constexpr int kTensorTag = 0x46492;

core::CheckpointError corrupt(const std::string& problem) {
  return core::CheckpointError(core::CheckpointError::Kind::kCorrupt, {}, problem);
}

std::string rank_prefix(int rank) { return "rank" + std::to_string(rank) + "/"; }

void add_part(core::Checkpoint& merged, int rank, const core::Checkpoint& part) {
  merged.metadata["ranks"].push_back(part.metadata);
  for (const auto& [name, tensor] : part.tensors) merged.tensors[rank_prefix(rank) + name] = tensor;
}

void send_part(comm::Communicator& communicator, const core::Checkpoint& mine) {
  nlohmann::json header = {{"metadata", mine.metadata}, {"tensors", nlohmann::json::array()}};
  std::vector<torch::Tensor> tensors;
  for (const auto& [name, tensor] : mine.tensors) {
    header["tensors"].push_back(
        {{"name", name}, {"dtype", static_cast<int>(tensor.scalar_type())}, {"shape", tensor.sizes().vec()}});
    tensors.push_back(tensor.detach().to(torch::kCPU).contiguous());
  }
  const std::string text = header.dump();
  communicator.send(torch::tensor({static_cast<int64_t>(text.size())}, torch::kInt64), 0, kHeaderSizeTag);
  std::vector<uint8_t> bytes(text.begin(), text.end());
  communicator.send(torch::tensor(bytes, torch::kUInt8), 0, kHeaderTag);
  for (const torch::Tensor& tensor : tensors) {
    if (tensor.numel() > 0) communicator.send(tensor, 0, kTensorTag);
  }
}

core::Checkpoint receive_part(comm::Communicator& communicator, int rank) {
  torch::Tensor size = torch::zeros({1}, torch::kInt64);
  communicator.recv(size, rank, kHeaderSizeTag);
  torch::Tensor bytes = torch::empty({size.item<int64_t>()}, torch::kUInt8);
  communicator.recv(bytes, rank, kHeaderTag);
  const auto* text = bytes.data_ptr<uint8_t>();
  const nlohmann::json header = nlohmann::json::parse(text, text + bytes.numel());
  core::Checkpoint part;
  part.metadata = header.at("metadata");
  for (const auto& entry : header.at("tensors")) {
    torch::Tensor tensor = torch::empty(entry.at("shape").get<std::vector<int64_t>>(),
                                        static_cast<torch::ScalarType>(entry.at("dtype").get<int>()));
    if (tensor.numel() > 0) communicator.recv(tensor, rank, kTensorTag);
    part.tensors[entry.at("name").get<std::string>()] = tensor;
  }
  return part;
}

core::OptimizerStateKey momentum_key(const nn::FlatParameters& parameters) {
  return core::optimizer_state_key(parameters.values());
}

}  // namespace

core::Checkpoint gather_replica_states(comm::Communicator& communicator, const core::Checkpoint& mine) {
  if (communicator.rank() != 0) {
    send_part(communicator, mine);
    return {};
  }
  core::Checkpoint merged;
  merged.metadata["workers"] = communicator.world_size();
  merged.metadata["ranks"] = nlohmann::json::array();
  add_part(merged, 0, mine);
  for (int rank = 1; rank < communicator.world_size(); ++rank) add_part(merged, rank, receive_part(communicator, rank));
  return merged;
}

core::Checkpoint replica_state(const core::Checkpoint& merged, int rank, int world_size) {
  const auto workers = merged.metadata.find("workers");
  const auto ranks = merged.metadata.find("ranks");
  if (workers == merged.metadata.end() || !workers->is_number_integer() || ranks == merged.metadata.end() ||
      !ranks->is_array() || static_cast<int64_t>(ranks->size()) != workers->get<int64_t>()) {
    throw corrupt("holds no replica states to resume from");
  }
  if (workers->get<int64_t>() != world_size) {
    throw corrupt("holds the state of " + std::to_string(workers->get<int64_t>()) + " replicas, but this run has " +
                  std::to_string(world_size));
  }
  core::Checkpoint part;
  part.metadata = ranks->at(static_cast<size_t>(rank));
  const std::string prefix = rank_prefix(rank);
  for (const auto& [name, tensor] : merged.tensors) {
    if (name.compare(0, prefix.size(), prefix) == 0) part.tensors[name.substr(prefix.size())] = tensor;
  }
  return part;
}

void save_replica(core::Checkpoint& checkpoint, torch::nn::Module& model, const nn::FlatParameters& parameters,
                  torch::optim::SGD& optimizer) {
  checkpoint.tensors["parameters"] = parameters.values().detach().clone();
  const torch::Tensor statistics = running_statistics(model);
  if (statistics.numel() > 0) checkpoint.tensors["running_statistics"] = statistics;
  const auto found = optimizer.state().find(momentum_key(parameters));
  if (found != optimizer.state().end()) {
    const auto& state = static_cast<const torch::optim::SGDParamState&>(*found->second);
    checkpoint.tensors["optimizer.momentum"] = state.momentum_buffer().detach().clone();
  }
}

void load_replica(const core::Checkpoint& checkpoint, torch::nn::Module& model, nn::FlatParameters& parameters,
                  torch::optim::SGD& optimizer) {
  const torch::Tensor values = core::checkpoint_tensor(checkpoint, "parameters", parameters.values());
  const torch::Tensor current_statistics = running_statistics(model);
  const torch::Tensor statistics = current_statistics.numel() > 0
                                       ? core::checkpoint_tensor(checkpoint, "running_statistics", current_statistics)
                                       : current_statistics;
  // SGD makes its momentum buffer at the first step; a checkpoint from before one has none.
  const bool has_momentum = checkpoint.tensors.count("optimizer.momentum") > 0;
  const torch::Tensor momentum =
      has_momentum ? core::checkpoint_tensor(checkpoint, "optimizer.momentum", parameters.values()) : torch::Tensor();
  {
    torch::NoGradGuard no_grad;
    parameters.values().copy_(values);
  }
  if (statistics.numel() > 0) load_running_statistics(model, statistics);
  optimizer.state().erase(momentum_key(parameters));
  if (has_momentum) {
    auto state = std::make_unique<torch::optim::SGDParamState>();
    state->momentum_buffer(momentum.clone());
    optimizer.state()[momentum_key(parameters)] = std::move(state);
  }
}

}  // namespace concord::supervised
