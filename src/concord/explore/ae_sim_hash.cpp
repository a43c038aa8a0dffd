#include "concord/explore/ae_sim_hash.h"

#include <stdexcept>
#include <string>

#include <torch/torch.h>

#include "concord/core/config_problems.h"
#include "concord/core/optimizer_bytes.h"
#include "concord/explore/checkpoint_tensor.h"

namespace concord::explore {

void AeSimHashConfig::validate() const {
  core::ConfigProblems problems;
  problems.check(code_size >= 1, "code_size", code_size, ">= 1");
  bool positive_sizes = true;
  for (const int64_t size : hidden_sizes) positive_sizes = positive_sizes && size >= 1;
  problems.check(positive_sizes, "hidden_sizes", hidden_sizes, "all >= 1");
  problems.check(noise >= 0.0, "noise", noise, ">= 0");
  problems.check(binary_penalty >= 0.0, "binary_penalty", binary_penalty, ">= 0");
  problems.check(learning_rate > 0.0, "learning_rate", learning_rate, "> 0");
  problems.check(minibatch >= 1, "minibatch", minibatch, ">= 1");
  problems.check(updates_per_batch >= 0, "updates_per_batch", updates_per_batch, ">= 0");
  problems.throw_if_any("explore.ae config");
}

const core::ConfigFields<AeSimHashConfig>& AeSimHashConfig::fields() {
  static const core::ConfigFields<AeSimHashConfig> kFields = {
      {"code_size", &AeSimHashConfig::code_size, "AE-SimHash: sigmoid units of the code layer (D)"},
      {"hidden_sizes", &AeSimHashConfig::hidden_sizes, "AE-SimHash: encoder layer sizes (decoder mirrors)"},
      {"noise", &AeSimHashConfig::noise, "AE-SimHash: uniform noise U(-a, a) before the sigmoid"},
      {"binary_penalty", &AeSimHashConfig::binary_penalty, "AE-SimHash: lambda pushing codes to 0 or 1"},
      {"learning_rate", &AeSimHashConfig::learning_rate, "AE-SimHash: Adam learning rate"},
      {"minibatch", &AeSimHashConfig::minibatch, "AE-SimHash: states per gradient step"},
      {"updates_per_batch", &AeSimHashConfig::updates_per_batch,
       "AE-SimHash: gradient steps on each batch of visited states"},
  };
  return kFields;
}

AeSimHash::AeSimHash(const envs::Space& observation_space, const AeSimHashConfig& config, int64_t bits, uint64_t seed)
    : config_(core::validated(config)),
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
    throw core::CheckpointError(
        core::CheckpointError::Kind::kCorrupt, "",
        "tensor \"" + optimizer_name + "\" is not the autoencoder's Adam state: " + error.what());
  }
}

}  // namespace concord::explore
