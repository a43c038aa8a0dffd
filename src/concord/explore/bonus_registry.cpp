#include "concord/explore/bonus_registry.h"

#include <stdexcept>

#include "concord/core/registry.h"
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

const std::string kExplorePrefix = "explore.";
const std::string kSimHashPrefix = "explore.simhash.";
const std::string kSketchPrefix = "explore.sketch.";
const std::string kAePrefix = "explore.ae.";

uint64_t hash_seed(const core::Config& config) {
  return core::derive_seed(static_cast<uint64_t>(config.get_int("run.seed")), kHashSeedStream);
}

using CounterFactory = std::unique_ptr<VisitCounter> (*)(const core::Config&, int64_t bits);

std::unique_ptr<VisitCounter> make_sketch(const core::Config& config, int64_t bits) {
  const auto sketch = core::read_config<CountMinSketchConfig>(config, kSketchPrefix);
  return std::make_unique<CountMinSketch>(bits, sketch.tables, sketch.table_size);
}

std::unique_ptr<VisitCounter> make_exact(const core::Config&, int64_t bits) {
  return std::make_unique<ExactCounter>(bits);
}

const core::Registry<CounterFactory>& counters() {
  static const core::Registry<CounterFactory> registry("visit counter", "explore.counter",
                                                       {{"sketch", make_sketch}, {"exact", make_exact}});
  return registry;
}

// explore.simhash.preprocess: whether g scales bounded observations (and appends a bias).
const core::Registry<bool>& preprocessings() {
  static const core::Registry<bool> registry("observation preprocessing", "explore.simhash.preprocess",
                                             {{"bounds", true}, {"none", false}});
  return registry;
}

using HashFactory = std::unique_ptr<StateHash> (*)(const core::Config&, const SimHashConfig&, const envs::Space&);

std::unique_ptr<StateHash> make_sim_hash(const core::Config& config, const SimHashConfig& sim_hash,
                                         const envs::Space& observation_space) {
  if (!preprocessings().at(sim_hash.preprocess)) {
    return std::make_unique<SimHash>(observation_space.flat_size(), sim_hash.k, hash_seed(config));
  }
  ObservationScaling scaling(observation_space, /*append_bias=*/true);
  const int64_t input_dim = scaling.output_dim();
  return std::make_unique<SimHash>(input_dim, sim_hash.k, hash_seed(config), std::move(scaling));
}

std::unique_ptr<StateHash> make_ae_sim_hash(const core::Config& config, const SimHashConfig& sim_hash,
                                            const envs::Space& observation_space) {
  return std::make_unique<AeSimHash>(observation_space, core::read_config<AeSimHashConfig>(config, kAePrefix),
                                     sim_hash.k, hash_seed(config));
}

// The registry: one line per bonus, naming how it hashes states (nullptr: no bonus).
core::Registry<HashFactory> make_registry() {
  core::Registry<HashFactory> registry("exploration bonus", "explore.bonus");
  registry.add("none", nullptr);
  registry.add("simhash", make_sim_hash);
  registry.add("ae_simhash", make_ae_sim_hash);
  return registry;
}

const core::Registry<HashFactory>& bonuses() {
  static const core::Registry<HashFactory> registry = make_registry();
  return registry;
}

}  // namespace

const core::ConfigFields<ExploreConfig>& ExploreConfig::fields() {
  static const core::ConfigFields<ExploreConfig> kFields = {
      {"bonus", &ExploreConfig::bonus, "Count-based exploration bonus added to rewards: none, simhash or ae_simhash"},
      {"beta", &ExploreConfig::beta, "Bonus scale: beta / sqrt(n(phi(s)))"},
      {"counter", &ExploreConfig::counter,
       "Visit counts: sketch (count-min, shared exactly across processes) or exact (hash map)"},
  };
  return kFields;
}

void declare_explore_keys(core::ConfigSchema& schema) {
  core::declare_config<ExploreConfig>(schema, kExplorePrefix);
  core::declare_config<SimHashConfig>(schema, kSimHashPrefix);
  core::declare_config<CountMinSketchConfig>(schema, kSketchPrefix);
  core::declare_config<AeSimHashConfig>(schema, kAePrefix);
}

std::vector<std::string> bonus_names() { return bonuses().names(); }

std::unique_ptr<Bonus> make_bonus(const core::Config& config, const envs::Space& observation_space) {
  const auto explore = core::read_config<ExploreConfig>(config, kExplorePrefix);
  const HashFactory make_hash = bonuses().at(explore.bonus);
  if (make_hash == nullptr) return nullptr;
  const auto sim_hash = core::read_config<SimHashConfig>(config, kSimHashPrefix);
  sim_hash.validate();
  std::unique_ptr<StateHash> hash = make_hash(config, sim_hash, observation_space);
  std::unique_ptr<VisitCounter> counter = counters().at(explore.counter)(config, hash->bits());
  return std::make_unique<CountBonus>(std::move(hash), std::move(counter), explore.beta);
}

}  // namespace concord::explore
