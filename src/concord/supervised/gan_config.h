#pragma once

#include <cstdint>
#include <string>

#include "concord/core/config.h"

namespace concord::supervised {

// Everything `concord fit --task gan` reads from the [gan] section (keys gan.<field>): G
// generator/discriminator pairs trained at once, one per rank, with their discriminators
// swapped among them every `swap_every` updates (GAP, Im et al. 2016).
struct GanConfig {
  std::string model = "mlp";   // mlp (fully connected) or conv (DCGAN-style, narrowed)
  int pairs = 2;               // G: pairs, one per thread (under `concord launch`: per process)
  bool swap = true;            // swap discriminators (GAP); false trains G independent GANs
  int64_t swap_every = 50;     // S: updates between swaps
  int64_t steps = 2000;        // updates of each pair (one discriminator and one generator step each)
  int64_t batch_size = 64;     // real and generated rows per update
  int64_t latent_size = 64;    // noise dimensions fed to a generator
  int64_t hidden_units = 256;  // width of the MLP models' hidden layers
  // Adam step size of both networks. DCGAN's 2e-4 let the MLP discriminator win here (D loss near
  // 0) and every generator collapse onto one digit; 1e-3 did not.
  double learning_rate = 1e-3;
  double beta1 = 0.5;              // Adam's first-moment decay (DCGAN's 0.5: steadier adversarial training)
  int64_t eval_interval = 100;     // updates between logged records (losses, sample statistics)
  int64_t sample_interval = 500;   // updates between PNG grids of samples (0: only at the end)
  int64_t grid_samples = 32;       // samples of each pair in a grid, 8 to a row
  int64_t score_samples = 1000;    // samples of each pair the final quality score classifies (0: no score)
  int64_t classifier_steps = 600;  // SGD steps of the MNIST classifier that scores samples
  // Updates between checkpoints, taken at the first record step (eval_interval) this many updates
  // after the last one; 0: only at the end and when a signal stops the run.
  int64_t checkpoint_interval = 0;
  uint64_t seed = 1;  // run.seed

  // The discriminators actually move only when there is someone to swap with.
  bool swapping() const { return swap && pairs > 1; }
};

// Declares gan.* with GanConfig's defaults.
void declare_gan_keys(core::ConfigSchema& schema);

// Reads them (and run.seed). Throws std::invalid_argument naming the key for a value out of range,
// an unknown model, or swapping asked of fewer than 2 pairs.
GanConfig gan_config_from(const core::Config& config);

// The checks of gan_config_from on a GanConfig built in code (tests, benchmarks).
void validate(const GanConfig& gan);

}  // namespace concord::supervised
