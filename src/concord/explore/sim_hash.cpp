#include "concord/explore/sim_hash.h"

#include "concord/explore/checkpoint_tensor.h"

#include <stdexcept>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "concord/core/config_problems.h"

namespace concord::explore {

void SimHashConfig::validate() const {
  core::ConfigProblems problems;
  problems.check(k >= 1 && k <= 1024, "k", k, "in [1, 1024]");
  problems.throw_if_any("explore.simhash config");
}

const core::ConfigFields<SimHashConfig>& SimHashConfig::fields() {
  static const core::ConfigFields<SimHashConfig> kFields = {
      {"k", &SimHashConfig::k, "Bits of the SimHash code (granularity; 16 to 512)"},
      {"preprocess", &SimHashConfig::preprocess,
       "g(s) for simhash: bounds (scale bounded elements to [0, 1], append 1) or none"},
  };
  return kFields;
}

SimHash::SimHash(int64_t input_dim, int64_t bits, uint64_t seed, std::optional<ObservationScaling> preprocessing)
    : preprocessing_(std::move(preprocessing)) {
  if (input_dim < 1 || bits < 1 || bits > 1024) {
    throw std::invalid_argument("SimHash: input_dim=" + std::to_string(input_dim) +
                                " must be >= 1 and bits=" + std::to_string(bits) + " must be in [1, 1024]");
  }
  if (preprocessing_ && preprocessing_->output_dim() != input_dim) {
    throw std::invalid_argument("SimHash: its preprocessing yields " + std::to_string(preprocessing_->output_dim()) +
                                " values but input_dim=" + std::to_string(input_dim));
  }
  at::Generator generator = at::detail::createCPUGenerator(seed);
  projection_ = at::randn({bits, input_dim}, generator, torch::kFloat32);
}

torch::Tensor SimHash::codes(const torch::Tensor& observations) {
  const torch::Tensor inputs = preprocessing_ ? (*preprocessing_)(observations) : observations.to(torch::kFloat32);
  return torch::matmul(inputs, projection_.t()).gt(0).to(torch::kUInt8);
}

void SimHash::save(core::Checkpoint& checkpoint, const std::string& prefix) const {
  checkpoint.tensors[prefix + "projection"] = projection_;
}

void SimHash::load(const core::Checkpoint& checkpoint, const std::string& prefix) {
  projection_ = required_tensor(checkpoint, prefix + "projection", projection_.sizes().vec(),
                                "explore.simhash.k and the observation size must match the checkpoint's")
                    .to(torch::kFloat32)
                    .contiguous();
}

}  // namespace concord::explore
