#include "concord/explore/ae_sim_hash.h"

#include <stdexcept>
#include <string>

#include <torch/torch.h>

#include "concord/core/optimizer_bytes.h"
#include "concord/explore/checkpoint_tensor.h"

namespace concord::explore {

void AeSimHashConfig::validate() const {
  std::string problems;
  const auto check = [&](bool ok, const std::string& problem) {
    if (!ok) problems += (problems.empty() ? "" : "; ") + problem;
  };
  check(code_size >= 1, "code_size=" + std::to_string(code_size) + " must be >= 1");
  for (const int64_t size : hidden_sizes) check(size >= 1, "hidden size " + std::to_string(size) + " must be >= 1");
  check(noise >= 0.0, "noise=" + std::to_string(noise) + " must be >= 0");
  check(binary_penalty >= 0.0, "binary_penalty=" + std::to_string(binary_penalty) + " must be >= 0");
  check(learning_rate > 0.0, "learning_rate=" + std::to_string(learning_rate) + " must be > 0");
  check(minibatch >= 1, "minibatch=" + std::to_string(minibatch) + " must be >= 1");
  check(updates_per_batch >= 0, "updates_per_batch=" + std::to_string(updates_per_batch) + " must be >= 0");
  if (!problems.empty()) throw std::invalid_argument("invalid explore.ae config: " + problems);
}

namespace {

AeSimHashConfig validated(AeSimHashConfig config) {
  config.validate();
  return config;
}

}  // namespace

AeSimHash::AeSimHash(const envs::Space& observation_space, const AeSimHashConfig& config, int64_t bits, uint64_t seed)
    : config_(validated(config)),
      scaling_(observation_space, /*append_bias=*/false),
      autoencoder_(scaling_.output_dim(), config_.code_size, config_.hidden_sizes, config_.noise),
      optimizer_(std::make_unique<torch::optim::Adam>(autoencoder_->parameters(),
                                                      torch::optim::AdamOptions(config_.learning_rate))),
      sim_hash_(config_.code_size, bits, seed) {}

void AeSimHash::learn(const torch::Tensor& observations) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Acting runs under InferenceMode; training needs autograd back on.
  c10::InferenceMode training(false);
  torch::AutoGradMode grad(true);
  const torch::Tensor states = scaling_(observations);
  const int64_t rows = states.size(0);
  if (rows == 0) return;
  for (int64_t update = 0; update < config_.updates_per_batch; ++update) {
    const torch::Tensor picked = torch::randint(rows, {std::min(rows, config_.minibatch)}, torch::kInt64);
    const torch::Tensor x = states.index_select(0, picked);
    const CodeAutoencoderImpl::Output out = autoencoder_->forward(x, /*noisy=*/true);
    const torch::Tensor reconstruction = (out.reconstruction - x).pow(2).sum(1);
    const torch::Tensor binary = torch::minimum((1 - out.code).pow(2), out.code.pow(2)).sum(1);
    const torch::Tensor loss =
        (reconstruction + config_.binary_penalty / static_cast<double>(config_.code_size) * binary).mean();
    optimizer_->zero_grad();
    loss.backward();
    optimizer_->step();
    last_loss_ = loss.item<double>();
  }
}

torch::Tensor AeSimHash::codes(const torch::Tensor& observations) {
  std::lock_guard<std::mutex> lock(mutex_);
  torch::NoGradGuard no_grad;
  return sim_hash_.codes(autoencoder_->binary_code(scaling_(observations)));
}

double AeSimHash::last_loss() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_loss_;
}

void AeSimHash::save(core::Checkpoint& checkpoint, const std::string& prefix) const {
  std::lock_guard<std::mutex> lock(mutex_);
  sim_hash_.save(checkpoint, prefix);
  for (const auto& parameter : autoencoder_->named_parameters()) {
    checkpoint.tensors[prefix + "ae/" + parameter.key()] = parameter.value().detach().clone();
  }
  // Adam's moments too: a resumed autoencoder keeps its step sizes instead of restarting them.
  checkpoint.tensors[prefix + "ae/optimizer"] = core::optimizer_to_bytes(*optimizer_);
}

void AeSimHash::load(const core::Checkpoint& checkpoint, const std::string& prefix) {
  std::lock_guard<std::mutex> lock(mutex_);
  sim_hash_.load(checkpoint, prefix);
  torch::NoGradGuard no_grad;
  for (auto& parameter : autoencoder_->named_parameters()) {
    parameter.value().copy_(required_tensor(checkpoint, prefix + "ae/" + parameter.key(),
                                            parameter.value().sizes().vec(),
                                            "explore.ae.* and explore.simhash.k must match the checkpoint's"));
  }
  const std::string optimizer_name = prefix + "ae/optimizer";
  const auto optimizer_state = checkpoint.tensors.find(optimizer_name);
  if (optimizer_state == checkpoint.tensors.end()) {
    throw core::CheckpointError(core::CheckpointError::Kind::kTensorMissing, "",
                                "tensor \"" + optimizer_name + "\" (the autoencoder's Adam state) is missing");
  }
  try {
    core::optimizer_from_bytes(optimizer_state->second, *optimizer_, torch::kCPU);
  } catch (const std::exception& error) {
    throw core::CheckpointError(core::CheckpointError::Kind::kCorrupt, "",
                                "tensor \"" + optimizer_name + "\" is not the autoencoder's Adam state: " + error.what());
  }
}

}  // namespace concord::explore
