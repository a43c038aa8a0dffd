#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <torch/types.h>

#include "concord/comm/communicator.h"
#include "concord/core/checkpoint.h"
#include "concord/data/labelled_data.h"
#include "concord/supervised/gan_config.h"
#include "concord/supervised/sample_quality.h"

namespace concord::supervised {

// One logged record of a GAP run, averaged over the pairs.
struct GanRecord {
  int64_t step = 0;                 // updates of each pair so far
  double discriminator_loss = 0.0;  // mean BCE on real (label 1) plus generated (label 0) rows since the last record
  double generator_loss = 0.0;      // mean non-saturating generator loss since the last record
  double sample_mean = 0.0;         // pixel mean of the generators' samples from fixed noise
  double sample_std = 0.0;          // their pixel standard deviation
  int64_t swaps = 0;                // discriminator swaps so far
  double seconds = 0.0;             // wall time since training started
};

struct GanResult {
  GanRecord final;                 // the record after the last update
  std::vector<GanRecord> records;  // every record, in order (the final one last; resumed: from the checkpoint's)
  double data_mean = 0.0;          // pixel mean of the training images: where sample_mean should go
  double data_std = 0.0;           // their pixel standard deviation
  std::vector<int> discriminator_of_pair;  // pair i ends with the discriminator pair [i] started with
  std::vector<SampleQuality> quality;      // per pair, from the judge (empty without one, or gan.score_samples = 0)
};

// What the caller hears, on rank 0 only, from rank 0's training thread.
struct GanCallbacks {
  std::function<void(int64_t step)> on_step;
  std::function<void(const GanRecord&)> on_record;
  // Every gan.sample_interval updates and after the last: gan.grid_samples samples of each pair
  // from fixed noise, pair after pair: [pairs * grid_samples, 1, 28, 28] in (0, 1).
  std::function<void(int64_t step, const torch::Tensor& samples)> on_samples;
  // At record steps every gan.checkpoint_interval updates, at the end, and when should_stop says
  // so: every pair's state (replica_state.h: "rank<r>/generator.parameters", its Adam moments,
  // the discriminator's, the minibatch sampler, the noise generator, the loop's counters), which
  // a resumed run continues from exactly.
  std::function<void(int64_t step, const core::Checkpoint& state)> on_checkpoint;
  // Polled by rank 0 at every record step; true makes that step the last one, checkpointed (a
  // signal asking the run to stop). Rank 0 broadcasts the decision, so every pair stops there.
  std::function<bool()> should_stop;
};

// GAP on one rank: trains this rank's generator/discriminator pair (pair = rank, pairs =
// world size) on `train`'s images, and with gan.swap every gan.swap_every updates moves the
// discriminators (parameters and Adam moments) among the ranks by swap_permutation:
//
//   for step = 1 .. steps:
//     discriminator step: BCE(D(real), 1) + BCE(D(G(z)), 0)        Adam
//     generator step:     BCE(D(G(z)), 1)   (non-saturating)       Adam
//     every S steps (not after the last):  D <- the discriminator of pair permutation[rank]
//     every eval_interval steps: record (allreduce over pairs); every sample_interval: samples
//
// Resumed from `resume_from` (a merged checkpoint of as many pairs, from on_checkpoint), each rank
// takes its own part and continues at the step after it: the run ends exactly as one that was
// never stopped, record for record where the checkpoint fell on a record step of both (a swap
// that the checkpointed run skipped because it ended there is made first). Throws
// core::CheckpointError (with no path) for state that does not fit this run.
//
// Each pair draws its own initial weights, minibatches and noise from gan.seed and its rank. At
// the end, with a judge and gan.score_samples > 0, every pair's samples are scored. A collective:
// every rank calls it; callbacks fire on rank 0. The result is the same on every rank.
GanResult train_gan_pair(const GanConfig& gan, const data::LabelledData& train, comm::Communicator& communicator,
                         const GanCallbacks& callbacks, const DigitJudge* judge = nullptr,
                         const core::Checkpoint* resume_from = nullptr);

// train_gan_pair on gan.pairs threads of this process joined by a comm::ThreadGroup; returns rank
// 0's result. The first error of any thread is rethrown (preferring a cause over the timeouts it
// leaves the others with).
GanResult train_gans_with_threads(const GanConfig& gan, const data::LabelledData& train, const GanCallbacks& callbacks,
                                  const DigitJudge* judge = nullptr, const core::Checkpoint* resume_from = nullptr);

}  // namespace concord::supervised
