#pragma once

#include "concord/core/config_fields.h"

namespace concord::policies {

// policy.async_learner.*
struct AsyncLearnerConfig {
  int max_policy_lag = 1;              // updates a rollout's parameters may be behind the learner's
                                       //   (0: collection and learning take turns, on-policy)
  double wait_timeout_seconds = 60.0;  // a blocking wait longer than this is an error

  // Throws std::invalid_argument listing every bad field with its value.
  void validate() const;
  static const core::ConfigFields<AsyncLearnerConfig>& fields();
};

}  // namespace concord::policies
