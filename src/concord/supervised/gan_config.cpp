#include "concord/supervised/gan_config.h"

#include <stdexcept>

#include "concord/core/config_fields.h"

namespace concord::supervised {
namespace {

void require(bool condition, const std::string& key, const std::string& value, const std::string& expected) {
  if (!condition) throw std::invalid_argument(key + " = " + value + ": " + expected);
}

}  // namespace

void declare_gan_keys(core::ConfigSchema& schema) {
  const GanConfig d;
  schema.declare("gan.model", d.model, "GAN networks: mlp (fully connected) or conv (two strided convolutions each)");
  schema.declare("gan.pairs", int64_t{d.pairs},
                 "G: generator/discriminator pairs, one per thread (under `concord launch`: the processes)");
  schema.declare("gan.swap", d.swap, "Swap discriminators among the pairs (GAP); false: G independent GANs");
  schema.declare("gan.swap_every", d.swap_every, "S: updates between discriminator swaps");
  schema.declare("gan.steps", d.steps, "Updates of each pair (one discriminator and one generator step)");
  schema.declare("gan.batch_size", d.batch_size, "Real and generated rows per update");
  schema.declare("gan.latent_size", d.latent_size, "Noise dimensions fed to a generator");
  schema.declare("gan.hidden_units", d.hidden_units, "Width of the mlp networks' hidden layers");
  schema.declare("gan.learning_rate", d.learning_rate, "Adam step size of generators and discriminators");
  schema.declare("gan.beta1", d.beta1, "Adam's first-moment decay");
  schema.declare("gan.eval_interval", d.eval_interval, "Updates between logged losses and sample statistics");
  schema.declare("gan.sample_interval", d.sample_interval, "Updates between PNG grids of samples (0: only at the end)");
  schema.declare("gan.grid_samples", d.grid_samples, "Samples of each pair in a PNG grid, 8 to a row");
  schema.declare("gan.score_samples", d.score_samples,
                 "Samples of each pair scored at the end by an MNIST classifier (0: no score)");
  schema.declare("gan.classifier_steps", d.classifier_steps, "SGD steps of the classifier that scores samples");
  schema.declare("gan.checkpoint_interval", d.checkpoint_interval,
                 "Updates between checkpoints, at the next record step (0: at the end and on a signal only)");
}

GanConfig gan_config_from(const core::Config& config) {
  GanConfig gan;
  gan.model = config.get_string("gan.model");
  gan.pairs = core::get_int_in_range(config, "gan.pairs");  // a cast would take 2^32 + 2 for 2
  gan.swap = config.get_bool("gan.swap");
  gan.swap_every = config.get_int("gan.swap_every");
  gan.steps = config.get_int("gan.steps");
  gan.batch_size = config.get_int("gan.batch_size");
  gan.latent_size = config.get_int("gan.latent_size");
  gan.hidden_units = config.get_int("gan.hidden_units");
  gan.learning_rate = config.get_double("gan.learning_rate");
  gan.beta1 = config.get_double("gan.beta1");
  gan.eval_interval = config.get_int("gan.eval_interval");
  gan.sample_interval = config.get_int("gan.sample_interval");
  gan.grid_samples = config.get_int("gan.grid_samples");
  gan.score_samples = config.get_int("gan.score_samples");
  gan.classifier_steps = config.get_int("gan.classifier_steps");
  gan.checkpoint_interval = config.get_int("gan.checkpoint_interval");
  gan.seed = static_cast<uint64_t>(config.get_int("run.seed"));
  validate(gan);
  return gan;
}

void validate(const GanConfig& gan) {
  require(gan.model == "mlp" || gan.model == "conv", "gan.model", gan.model, "must be mlp or conv");
  require(gan.pairs >= 1, "gan.pairs", std::to_string(gan.pairs), "must be >= 1");
  require(!gan.swap || gan.pairs >= 2, "gan.pairs", std::to_string(gan.pairs),
          "swapping discriminators needs at least 2 pairs (or gan.swap = false)");
  require(gan.swap_every >= 1, "gan.swap_every", std::to_string(gan.swap_every), "must be >= 1");
  require(gan.steps >= 1, "gan.steps", std::to_string(gan.steps), "must be >= 1");
  require(gan.batch_size >= 1, "gan.batch_size", std::to_string(gan.batch_size), "must be >= 1");
  require(gan.latent_size >= 1, "gan.latent_size", std::to_string(gan.latent_size), "must be >= 1");
  require(gan.hidden_units >= 1, "gan.hidden_units", std::to_string(gan.hidden_units), "must be >= 1");
  require(gan.learning_rate > 0.0, "gan.learning_rate", std::to_string(gan.learning_rate), "must be > 0");
  require(gan.beta1 >= 0.0 && gan.beta1 < 1.0, "gan.beta1", std::to_string(gan.beta1), "must lie in [0, 1)");
  require(gan.eval_interval >= 1, "gan.eval_interval", std::to_string(gan.eval_interval), "must be >= 1");
  require(gan.sample_interval >= 0, "gan.sample_interval", std::to_string(gan.sample_interval), "must be >= 0");
  require(gan.grid_samples >= 1, "gan.grid_samples", std::to_string(gan.grid_samples), "must be >= 1");
  require(gan.score_samples >= 0, "gan.score_samples", std::to_string(gan.score_samples), "must be >= 0");
  require(gan.classifier_steps >= 1, "gan.classifier_steps", std::to_string(gan.classifier_steps), "must be >= 1");
  require(gan.checkpoint_interval >= 0, "gan.checkpoint_interval", std::to_string(gan.checkpoint_interval),
          "must be >= 0");
}

}  // namespace concord::supervised
