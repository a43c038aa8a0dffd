#include "concord/supervised/replica_training.h"

#include <memory>
#include <vector>

#include <torch/torch.h>

#include "concord/core/checkpoint_fields.h"
#include "concord/core/rng.h"
#include "concord/data/batch_sampler.h"
#include "concord/parallel/synchronous_sgd.h"
#include "concord/supervised/adaptive_batch_schedule.h"
#include "concord/supervised/fgsm.h"
#include "concord/supervised/hessian.h"
#include "concord/supervised/replica_state.h"

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

// The top Hessian eigenvalue of the loss on a sample of the training set drawn by this rank,
// averaged over the ranks so that every replica takes the same decision.
double mean_top_eigenvalue(const FitConfig& fit, torch::nn::Sequential& model, const data::LabelledData& train,
                           comm::Communicator& communicator, int64_t epoch) {
  const uint64_t epoch_seed = core::derive_seed(fit.seed, 300 + static_cast<uint64_t>(epoch));
  data::ShuffledBatches sample(train.size(), fit.abs_hessian_batch,
                               core::derive_seed(epoch_seed, static_cast<uint64_t>(communicator.rank())));
  const data::LabelledData batch = train.select(sample.next());
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
                        sync::SyncStrategy& strategy, const data::TrainTestSplit& data,
                        comm::Communicator& communicator, const FitCallbacks& callbacks,
                        const core::Checkpoint* resume_from) {
  const int workers = communicator.world_size();
  AdaptiveBatchSchedule schedule(schedule_options(fit));
  if (resume_from != nullptr) schedule.load(*resume_from);
  torch::optim::SGD optimizer({parameters.values()},
                              torch::optim::SGDOptions(schedule.learning_rate()).momentum(fit.momentum));
  double adversarial_share = 0.0;  // of this epoch (ABSA)
  // Every rank keeps the training set resident and receives only its slice of each step's row
  // indices, which rank 0 draws.
  parallel::SynchronousSgd sgd(communicator, *model, parameters, optimizer, strategy,
                               [&](const std::vector<torch::Tensor>& slice) {
                                 const data::LabelledData batch{slice[0], slice[1]};
                                 const torch::Tensor images =
                                     adversarial_share > 0.0
                                         ? with_adversarial_rows(model, batch, adversarial_share, fit.abs_fgsm_epsilon)
                                         : batch.images;
                                 return torch::nn::functional::cross_entropy(model->forward(images), batch.labels);
                               },
                               {parallel::InputKind::kIndexed, parallel::InputKind::kIndexed});
  sgd.set_resident(0, data.train.images);
  sgd.set_resident(1, data.train.labels);
  // Read on rank 0 only: W x B rows of the training set per step, each row once per epoch.
  const uint64_t batch_seed = core::derive_seed(fit.seed, 100);
  auto batches =
      std::make_unique<data::ShuffledBatches>(data.train.size(), workers * schedule.batch_size(), batch_seed);

  int64_t epoch_steps = steps_per_epoch(data.train.size(), workers, schedule.batch_size());
  FitMonitor monitor(fit, communicator, data.test, callbacks, fit.steps);
  monitor.note_schedule(schedule.batch_size(), schedule.learning_rate(), 0.0);
  int64_t samples = 0;
  int64_t epoch = 0;  // epochs completed
  int64_t step_in_epoch = 0;
  int64_t first_step = 1;
  if (resume_from != nullptr) {
    // After the strategy's attach() (in SynchronousSgd's constructor), whose broadcast of rank
    // 0's parameters would otherwise overwrite a replica that had drifted.
    load_replica(*resume_from, *model, parameters, optimizer);
    strategy.load(*resume_from);
    batches->load(*resume_from, "sampler");
    monitor.load(*resume_from, model, parameters.values());
    first_step = core::metadata_int(*resume_from, "loop", "step") + 1;
    samples = core::metadata_int(*resume_from, "loop", "samples");
    epoch = core::metadata_int(*resume_from, "loop", "epoch");
    step_in_epoch = core::metadata_int(*resume_from, "loop", "step_in_epoch");
  }
  int64_t step = first_step - 1;  // the last step taken
  monitor.set_state_saver([&](core::Checkpoint& state) {
    save_replica(state, *model, parameters, optimizer);
    strategy.save(state);
    schedule.save(state);
    batches->save(state, "sampler");
    state.metadata["loop"] = {{"step", step}, {"samples", samples}, {"epoch", epoch}, {"step_in_epoch", step_in_epoch}};
  });
  // A budget in epochs that a resumed fit had already spent leaves nothing to do.
  const bool epochs_left = fit.epochs == 0 || epoch < fit.epochs;
  for (step = first_step; epochs_left && step <= fit.steps; ++step) {
    adversarial_share = schedule.adversarial_share(epoch);
    torch::Tensor rows = batches->next();
    // An epoch's last batch may be short; one with fewer rows than workers cannot be sliced.
    if (rows.size(0) < workers) rows = batches->next();
    samples += rows.size(0);
    const double loss = sgd.step({rows, rows});

    if (++step_in_epoch == epoch_steps) {
      ++epoch;
      step_in_epoch = 0;
      if (fit.schedule != "fixed") {
        const double eigenvalue = mean_top_eigenvalue(fit, model, data.train, communicator, epoch);
        if (schedule.end_of_epoch(epoch, eigenvalue)) {
          set_learning_rate(optimizer, schedule.learning_rate());
          batches =
              std::make_unique<data::ShuffledBatches>(data.train.size(), workers * schedule.batch_size(),
                                                      core::derive_seed(batch_seed, static_cast<uint64_t>(epoch)));
          epoch_steps = steps_per_epoch(data.train.size(), workers, schedule.batch_size());
        }
        monitor.note_schedule(schedule.batch_size(), schedule.learning_rate(), eigenvalue);
      }
      if (epoch == fit.epochs) monitor.finish_at(step);
    }
    if (!monitor.after_step(step, samples, loss, model, parameters.values(), strategy.stats())) break;
  }
  return monitor.result();
}

}  // namespace concord::supervised
