#include "concord/explore/count_bonus.h"

#include <stdexcept>
#include <string>

#include <torch/torch.h>

namespace concord::explore {

CountBonus::CountBonus(std::unique_ptr<StateHash> hash, std::unique_ptr<VisitCounter> counter, double beta)
    : hash_(std::move(hash)), counter_(std::move(counter)), beta_(beta) {
  if (!hash_ || !counter_) throw std::invalid_argument("CountBonus needs a hash and a counter");
  if (!(beta >= 0.0)) throw std::invalid_argument("CountBonus: beta=" + std::to_string(beta) + " must be >= 0");
}

torch::Tensor CountBonus::visit(const torch::Tensor& observations) {
  const torch::Tensor states = observations.to(torch::kCPU, torch::kFloat32).contiguous();
  hash_->learn(states);
  const torch::Tensor codes = hash_->codes(states);
  counter_->add(codes);
  const torch::Tensor visits = counter_->counts(codes).to(torch::kFloat64);
  return (beta_ / visits.sqrt()).to(torch::kFloat32);
}

void CountBonus::save(core::Checkpoint& checkpoint) const {
  hash_->save(checkpoint, "explore/hash/");
  counter_->save(checkpoint, "explore/counts/");
}

void CountBonus::load(const core::Checkpoint& checkpoint) {
  hash_->load(checkpoint, "explore/hash/");
  counter_->load(checkpoint, "explore/counts/");
}

}  // namespace concord::explore
