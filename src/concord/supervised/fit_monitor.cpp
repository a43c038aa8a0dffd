#include "concord/supervised/fit_monitor.h"

#include <torch/torch.h>

#include "concord/supervised/running_statistics.h"

namespace concord::supervised {

FitMonitor::FitMonitor(const FitConfig& fit, comm::Communicator& communicator, const data::LabelledData& test,
                       const FitCallbacks& callbacks, int64_t last_step)
    : fit_(fit), communicator_(communicator), test_(test), callbacks_(callbacks), last_step_(last_step) {}

bool FitMonitor::after_step(int64_t step, int64_t samples, double loss, torch::nn::Sequential& model,
                            const torch::Tensor& parameters, const sync::SyncStats& stats) {
  const bool leader = communicator_.rank() == 0;
  loss_sum_ += loss;
  ++loss_count_;
  if (leader && callbacks_.on_step) callbacks_.on_step(step);
  if (step % fit_.eval_interval != 0 && step != last_step_) return true;

  average_running_statistics(*model, communicator_);
  torch::Tensor stop = torch::zeros({1}, torch::kInt64);
  if (leader) {
    FitRecord record;
    record.step = step;
    record.samples = samples;
    record.train_loss = loss_sum_ / static_cast<double>(loss_count_);
    record.test = evaluate(model, test_);
    record.sync = stats;
    record.seconds = clock_.elapsed_seconds();
    record.batch_size = batch_size_;
    record.learning_rate = learning_rate_;
    record.top_eigenvalue = top_eigenvalue_;
    result_.final = record;
    result_.parameters = parameters.detach().clone();
    result_.running_statistics = running_statistics(*model);
    const bool reached = fit_.target_accuracy > 0.0 && record.test.accuracy >= fit_.target_accuracy;
    if (reached && result_.steps_to_target < 0) {
      result_.steps_to_target = step;
      result_.seconds_to_target = record.seconds;
    }
    if (callbacks_.on_evaluation) callbacks_.on_evaluation(record);
    const bool finished = reached || step == last_step_ || (callbacks_.should_stop && callbacks_.should_stop());
    const bool checkpoint_due = fit_.checkpoint_interval > 0 && step - last_checkpoint_ >= fit_.checkpoint_interval;
    if (callbacks_.on_checkpoint && (checkpoint_due || finished)) {
      callbacks_.on_checkpoint(step, result_.parameters, result_.running_statistics);
      last_checkpoint_ = step;
    }
    stop.fill_(finished ? 1 : 0);
  }
  loss_sum_ = 0.0;
  loss_count_ = 0;
  communicator_.broadcast(stop, 0);
  return stop.item<int64_t>() == 0;
}

}  // namespace concord::supervised
