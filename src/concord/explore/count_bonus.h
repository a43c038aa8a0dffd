#pragma once

#include <memory>

#include "concord/explore/bonus.h"
#include "concord/explore/state_hash.h"
#include "concord/explore/visit_counter.h"

namespace concord::explore {

// Count-based exploration with hashing (Tang et al., 2017, Algorithm 1), for a batch of states:
//
//   hash.learn(states)                      (AE-SimHash trains its autoencoder; SimHash: no-op)
//   for each s in the batch: n(phi(s)) += 1  the whole batch is counted first,
//   bonus(s) = beta / sqrt(n(phi(s)))         then each state's bonus is read
//
// Thread-safe when the hash and the counter are (all of this layer's are).
class CountBonus final : public Bonus {
 public:
  // Throws std::invalid_argument if beta < 0 or the hash and counter disagree on the code length.
  CountBonus(std::unique_ptr<StateHash> hash, std::unique_ptr<VisitCounter> counter, double beta);

  torch::Tensor visit(const torch::Tensor& observations) override;
  void merge_counts(comm::Communicator& communicator) override { counter_->merge_increments(communicator); }
  void save(core::Checkpoint& checkpoint) const override;
  void load(const core::Checkpoint& checkpoint) override;

  StateHash& hash() { return *hash_; }
  VisitCounter& counter() { return *counter_; }
  double beta() const { return beta_; }

 private:
  std::unique_ptr<StateHash> hash_;
  std::unique_ptr<VisitCounter> counter_;
  double beta_;
};

}  // namespace concord::explore
