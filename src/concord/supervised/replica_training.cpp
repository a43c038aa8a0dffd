#include "concord/supervised/replica_training.h"

#include <memory>

#include <torch/torch.h>

#include "concord/core/rng.h"
#include "concord/data/batch_sampler.h"
#include "concord/data/partition.h"
#include "concord/supervised/adaptive_batch_schedule.h"
#include "concord/supervised/fgsm.h"
#include "concord/supervised/hessian.h"

namespace concord::supervised {
namespace {

AdaptiveBatchOptions schedule_options(const FitConfig& fit) {
  AdaptiveBatchOptions options;
  options.initial_batch = fit.batch_size;
  options.initial_learning_rate = fit.learning_rate;
  // A fixed schedule is the adaptive one that may never grow.
  options.max_ratio = fit.schedule == "fixed" ? 1 : fit.abs_max_ratio;
  options.max_learning_rate_ratio = fit.abs_max_lr_ratio;
  options.force_after_epochs = fit.abs_force_after_epochs;
  options.adversarial_share = fit.schedule == "absa" ? fit.abs_adversarial_share : 0.0;
  options.adversarial_until_epoch = fit.epochs / 2;
  return options;
}

// The top Hessian eigenvalue of the loss on a sample of this rank's shard, averaged over the
// ranks so that every replica takes the same decision.
double mean_top_eigenvalue(const FitConfig& fit, torch::nn::Sequential& model, const data::LabelledData& shard,
                           comm::Communicator& communicator, int64_t epoch) {
  data::ShuffledBatches sample(shard.size(), fit.abs_hessian_batch,
                               core::derive_seed(fit.seed, 300 + static_cast<uint64_t>(epoch)));
  const data::LabelledData batch = shard.select(sample.next());
  PowerIterationOptions options;
  options.max_iterations = fit.abs_power_iterations;
  options.tolerance = fit.abs_tolerance;
  options.seed = core::derive_seed(fit.seed, 400 + static_cast<uint64_t>(epoch));
  const EigenvalueEstimate estimate = top_hessian_eigenvalue(
      [&] { return torch::nn::functional::cross_entropy(model->forward(batch.images), batch.labels); },
      model->parameters(), options);
  torch::Tensor value = torch::tensor({estimate.value}, torch::kFloat64);
  communicator.allreduce(value, comm::ReduceOp::kSum);
  return value.item<double>() / communicator.world_size();
}

// ABSA: the first `share` of the batch's rows become FGSM examples of themselves.
torch::Tensor with_adversarial_rows(torch::nn::Sequential& model, const data::LabelledData& batch, double share,
                                    double epsilon) {
  const auto rows = static_cast<int64_t>(share * static_cast<double>(batch.size()));
  if (rows == 0) return batch.images;
  const torch::Tensor adversarial =
      fgsm_examples(model, batch.images.narrow(0, 0, rows), batch.labels.narrow(0, 0, rows), epsilon);
  return torch::cat({adversarial, batch.images.narrow(0, rows, batch.size() - rows)});
}

void set_learning_rate(torch::optim::SGD& optimizer, double learning_rate) {
  for (auto& group : optimizer.param_groups()) {
    static_cast<torch::optim::SGDOptions&>(group.options()).lr(learning_rate);
  }
}

}  // namespace

FitResult train_replica(const FitConfig& fit, torch::nn::Sequential& model, nn::FlatParameters& parameters,
                        sync::SyncStrategy& strategy, const data::MnistSplit& data, comm::Communicator& communicator,
                        const FitCallbacks& callbacks) {
  const int rank = communicator.rank();
  const int workers = communicator.world_size();
  const data::LabelledData shard =
      data.train.select(data::iid_partition(data.train.size(), workers, core::derive_seed(fit.seed, 1))[rank]);
  const uint64_t batch_seed = core::derive_seed(fit.seed, 100 + static_cast<uint64_t>(rank));
  AdaptiveBatchSchedule schedule(schedule_options(fit));
  auto batches = std::make_unique<data::ShuffledBatches>(shard.size(), schedule.batch_size(), batch_seed);
  torch::optim::SGD optimizer({parameters.values()},
                              torch::optim::SGDOptions(fit.learning_rate).momentum(fit.momentum));
  strategy.attach(parameters);

  int64_t epoch_steps = steps_per_epoch(data.train.size(), workers, schedule.batch_size());
  FitMonitor monitor(fit, communicator, data.test, callbacks, fit.steps);
  monitor.note_schedule(schedule.batch_size(), schedule.learning_rate(), 0.0);
  int64_t samples = 0;
  int64_t epoch = 0;  // epochs completed
  int64_t step_in_epoch = 0;
  for (int64_t step = 1; step <= fit.steps; ++step) {
    const data::LabelledData batch = shard.select(batches->next());
    const double adversarial_share = schedule.adversarial_share(epoch);
    const torch::Tensor images = adversarial_share > 0.0
                                     ? with_adversarial_rows(model, batch, adversarial_share, fit.abs_fgsm_epsilon)
                                     : batch.images;
    parameters.zero_grad();
    const torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(images), batch.labels);
    loss.backward();
    strategy.synchronize_gradients();
    optimizer.step();
    strategy.after_step();
    samples += batch.size() * workers;

    if (++step_in_epoch == epoch_steps) {
      ++epoch;
      step_in_epoch = 0;
      if (fit.schedule != "fixed") {
        const double eigenvalue = mean_top_eigenvalue(fit, model, shard, communicator, epoch);
        if (schedule.end_of_epoch(epoch, eigenvalue)) {
          set_learning_rate(optimizer, schedule.learning_rate());
          batches = std::make_unique<data::ShuffledBatches>(
              shard.size(), schedule.batch_size(), core::derive_seed(batch_seed, static_cast<uint64_t>(epoch)));
          epoch_steps = steps_per_epoch(data.train.size(), workers, schedule.batch_size());
        }
        monitor.note_schedule(schedule.batch_size(), schedule.learning_rate(), eigenvalue);
      }
      if (epoch == fit.epochs) monitor.finish_at(step);
    }
    if (!monitor.after_step(step, samples, loss.item<double>(), model, parameters.values(), strategy.stats())) break;
  }
  return monitor.result();
}

}  // namespace concord::supervised
