#pragma once

#include <string>

#include "concord/core/config.h"

namespace concord::cli {

// `concord fit --task gan`: GAP on MNIST. gan.pairs generator/discriminator pairs as threads (or,
// under `concord launch`, one per process), discriminators swapped every gan.swap_every updates.
// Rank 0 owns the run directory: progress, metrics (CSV + TensorBoard), PNG grids of samples
// (samples/step_<n>.png), checkpoints (every pair's state, at gan.checkpoint_interval, at the end
// and on SIGINT/SIGTERM) and the final sample-quality table. With `resume` (a run directory, and
// `config` its own) the run continues from that directory's checkpoint, as it does when `concord
// launch --max-restarts` starts the group again.
void run_gan_fit(core::Config config, const std::string& resume = {});

}  // namespace concord::cli
