#pragma once

#include <memory>
#include <string>
#include <vector>

#include "concord/core/config.h"
#include "concord/core/config_fields.h"
#include "concord/envs/space.h"
#include "concord/explore/bonus.h"

namespace concord::explore {

// The exploration bonuses a run can name (explore.bonus), one registry line each in
// bonus_registry.cpp:
//
//   none         no bonus (make_bonus returns nullptr)
//   simhash      beta / sqrt(n(sign(A g(s)))), g = ObservationScaling (explore.simhash.preprocess)
//   ae_simhash   the same over the rounded code layer of an autoencoder trained online
//
// Counts go to a count-min sketch (explore.counter = "sketch", the paper's; exact merge across
// processes) or an exact hash map ("exact"). The projection is drawn from run.seed, so every rank
// of a run hashes alike.

// Which bonus a run adds and how (keys explore.<field>); the hashes and counters have their own
// sections: explore.simhash (SimHashConfig), explore.sketch (CountMinSketchConfig), explore.ae
// (AeSimHashConfig).
struct ExploreConfig {
  std::string bonus = "none";      // a name in the registry below
  double beta = 0.01;              // the bonus is beta / sqrt(n(phi(s)))
  std::string counter = "sketch";  // "sketch" (CountMinSketch) or "exact" (ExactCounter)

  static const core::ConfigFields<ExploreConfig>& fields();
};

// Declares every explore.* key. Throws std::logic_error if one is already declared.
void declare_explore_keys(core::ConfigSchema& schema);

std::vector<std::string> bonus_names();

// The bonus explore.bonus names for observations of `observation_space`, or nullptr for "none".
// Throws std::invalid_argument for an unknown bonus, counter or preprocessing name ("unknown
// exploration bonus 'x' for explore.bonus (known: ...)") or bad values, naming the key.
std::unique_ptr<Bonus> make_bonus(const core::Config& config, const envs::Space& observation_space);

}  // namespace concord::explore
