#include "concord/explore/bonus_registry.h"

#include <stdexcept>

#include "concord/core/rng.h"
#include "concord/explore/ae_sim_hash.h"
#include "concord/explore/count_bonus.h"
#include "concord/explore/count_min_sketch.h"
#include "concord/explore/exact_counter.h"
#include "concord/explore/sim_hash.h"

namespace concord::explore {
namespace {

// The projection's seed stream, apart from the envs' and the networks'.
constexpr uint64_t kHashSeedStream = 0xE8E1'0000;

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

int64_t code_bits(const core::Config& config) {
  const int64_t bits = config.get_int("explore.simhash.k");
  if (bits < 1 || bits > 1024) {
    throw std::invalid_argument("explore.simhash.k = " + std::to_string(bits) + " must be in [1, 1024]");
  }
  return bits;
}

uint64_t hash_seed(const core::Config& config) {
  return core::derive_seed(static_cast<uint64_t>(config.get_int("run.seed")), kHashSeedStream);
}

std::unique_ptr<VisitCounter> make_counter(const core::Config& config, int64_t bits) {
  const std::string name = config.get_string("explore.counter");
  if (name == "sketch") {
    return std::make_unique<CountMinSketch>(bits, config.get_int("explore.sketch.tables"),
                                            config.get_int("explore.sketch.table_size"));
  }
  if (name == "exact") return std::make_unique<ExactCounter>(bits);
  throw std::invalid_argument("unknown explore.counter '" + name + "' (known: sketch, exact)");
}

std::unique_ptr<StateHash> make_sim_hash(const core::Config& config, const envs::Space& observation_space) {
  const std::string preprocess = config.get_string("explore.simhash.preprocess");
  if (preprocess != "bounds" && preprocess != "none") {
    throw std::invalid_argument("unknown explore.simhash.preprocess '" + preprocess + "' (known: bounds, none)");
  }
  if (preprocess == "none") {
    return std::make_unique<SimHash>(observation_space.flat_size(), code_bits(config), hash_seed(config));
  }
  ObservationScaling scaling(observation_space, /*append_bias=*/true);
  const int64_t input_dim = scaling.output_dim();
  return std::make_unique<SimHash>(input_dim, code_bits(config), hash_seed(config), std::move(scaling));
}

std::unique_ptr<StateHash> make_ae_sim_hash(const core::Config& config, const envs::Space& observation_space) {
  AeSimHashConfig ae;
  ae.code_size = config.get_int("explore.ae.code_size");
  ae.hidden_sizes = config.get_int_list("explore.ae.hidden_sizes");
  ae.noise = config.get_double("explore.ae.noise");
  ae.binary_penalty = config.get_double("explore.ae.binary_penalty");
  ae.learning_rate = config.get_double("explore.ae.learning_rate");
  ae.minibatch = config.get_int("explore.ae.minibatch");
  ae.updates_per_batch = config.get_int("explore.ae.updates_per_batch");
  return std::make_unique<AeSimHash>(observation_space, ae, code_bits(config), hash_seed(config));
}

using HashFactory = std::unique_ptr<StateHash> (*)(const core::Config&, const envs::Space&);

struct BonusEntry {
  const char* name;
  HashFactory make_hash;  // nullptr: no bonus
};

// The registry: one line per bonus.
const BonusEntry kBonuses[] = {
    {"none", nullptr},
    {"simhash", make_sim_hash},
    {"ae_simhash", make_ae_sim_hash},
};

}  // namespace

void declare_explore_keys(core::ConfigSchema& schema) {
  const AeSimHashConfig ae;
  schema.declare("explore.bonus", std::string("none"),
                 "Count-based exploration bonus added to rewards: none, simhash or ae_simhash");
  schema.declare("explore.beta", 0.01, "Bonus scale: beta / sqrt(n(phi(s)))");
  schema.declare("explore.counter", std::string("sketch"),
                 "Visit counts: sketch (count-min, shared exactly across processes) or exact (hash map)");
  schema.declare("explore.simhash.k", int64_t{64}, "Bits of the SimHash code (granularity; 16 to 512)");
  schema.declare("explore.simhash.preprocess", std::string("bounds"),
                 "g(s) for simhash: bounds (scale bounded elements to [0, 1], append 1) or none");
  schema.declare("explore.sketch.tables", int64_t{6}, "Count-min sketch tables");
  schema.declare("explore.sketch.table_size", int64_t{1000000},
                 "Each table's size is one of the largest primes at or below this");
  schema.declare("explore.ae.code_size", ae.code_size, "AE-SimHash: sigmoid units of the code layer (D)");
  schema.declare("explore.ae.hidden_sizes", ae.hidden_sizes, "AE-SimHash: encoder layer sizes (decoder mirrors)");
  schema.declare("explore.ae.noise", ae.noise, "AE-SimHash: uniform noise U(-a, a) before the sigmoid");
  schema.declare("explore.ae.binary_penalty", ae.binary_penalty, "AE-SimHash: lambda pushing codes to 0 or 1");
  schema.declare("explore.ae.learning_rate", ae.learning_rate, "AE-SimHash: Adam learning rate");
  schema.declare("explore.ae.minibatch", ae.minibatch, "AE-SimHash: states per gradient step");
  schema.declare("explore.ae.updates_per_batch", ae.updates_per_batch,
                 "AE-SimHash: gradient steps on each batch of visited states");
}

std::vector<std::string> bonus_names() {
  std::vector<std::string> names;
  for (const BonusEntry& entry : kBonuses) names.emplace_back(entry.name);
  return names;
}

std::unique_ptr<Bonus> make_bonus(const core::Config& config, const envs::Space& observation_space) {
  const std::string name = config.get_string("explore.bonus");
  for (const BonusEntry& entry : kBonuses) {
    if (name != entry.name) continue;
    if (entry.make_hash == nullptr) return nullptr;
    std::unique_ptr<StateHash> hash = entry.make_hash(config, observation_space);
    std::unique_ptr<VisitCounter> counter = make_counter(config, hash->bits());
    return std::make_unique<CountBonus>(std::move(hash), std::move(counter), config.get_double("explore.beta"));
  }
  throw std::invalid_argument("unknown exploration bonus '" + name + "' for explore.bonus (known: " +
                              joined(bonus_names()) + ")");
}

}  // namespace concord::explore
