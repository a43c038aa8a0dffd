#pragma once

#include "concord/core/config.h"

namespace concord::cli {

// `concord fit --task gan`: GAP on MNIST. gan.pairs generator/discriminator pairs as threads (or,
// under `concord launch`, one per process), discriminators swapped every gan.swap_every updates.
// Rank 0 owns the run directory: progress, metrics (CSV + TensorBoard), PNG grids of samples
// (samples/step_<n>.png), and the final sample-quality table.
void run_gan_fit(core::Config config);

}  // namespace concord::cli
