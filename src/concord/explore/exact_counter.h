#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include <torch/types.h>

#include "concord/explore/visit_counter.h"

namespace concord::explore {

// Exact visit counts in a hash map keyed by the code's bytes: no collisions, memory growing with
// the distinct codes seen. The map is split into stripes by key hash, each with its own mutex,
// so threads rarely wait on each other.
//
// merge_increments is not supported (distinct key sets would have to be exchanged): it throws
// std::logic_error telling to use the count-min sketch for counts shared across processes.
class ExactCounter final : public VisitCounter {
 public:
  // Throws std::invalid_argument unless bits in [1, 1024].
  explicit ExactCounter(int64_t bits);

  void add(const torch::Tensor& codes) override;
  torch::Tensor counts(const torch::Tensor& codes) const override;
  void merge_increments(comm::Communicator& communicator) override;
  void save(core::Checkpoint& checkpoint, const std::string& prefix) const override;
  void load(const core::Checkpoint& checkpoint, const std::string& prefix) override;

  // Distinct codes seen.
  int64_t size() const;

 private:
  static constexpr size_t kStripes = 64;
  struct Stripe {
    mutable std::mutex mutex;
    std::unordered_map<std::string, int64_t> counts;
  };
  Stripe& stripe_of(const std::string& key) const;
  void check_codes(const torch::Tensor& codes) const;

  int64_t bits_;
  mutable std::array<Stripe, kStripes> stripes_;
};

}  // namespace concord::explore
