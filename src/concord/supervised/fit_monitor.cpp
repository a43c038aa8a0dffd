#include "concord/supervised/fit_monitor.h"

#include <algorithm>

#include <torch/torch.h>

#include "concord/core/checkpoint_fields.h"
#include "concord/supervised/replica_state.h"
#include "concord/supervised/running_statistics.h"

namespace concord::supervised {
namespace {

// The broadcast decision's bits.
constexpr int64_t kStop = 1;
constexpr int64_t kCheckpoint = 2;
// Between evaluations rank 0 is asked whether to stop about this often (a Ctrl-C answered within
// a second even where evaluations are a minute apart, as ResNet-20's are on two cores).
constexpr double kStopPollSeconds = 0.25;

nlohmann::json record_json(const FitRecord& record) {
  return {{"step", record.step},
          {"samples", record.samples},
          {"train_loss", record.train_loss},
          {"test_loss", record.test.loss},
          {"test_accuracy", record.test.accuracy},
          {"sync_bytes", record.sync.bytes},
          {"sync_rounds", record.sync.rounds},
          {"seconds", record.seconds},
          {"batch_size", record.batch_size},
          {"learning_rate", record.learning_rate},
          {"top_eigenvalue", record.top_eigenvalue}};
}

FitRecord record_from(const core::Checkpoint& state) {
  const auto get_int = [&](const char* key) { return core::metadata_int(state, "record", key); };
  const auto get_double = [&](const char* key) { return core::metadata_double(state, "record", key); };
  FitRecord record;
  record.step = get_int("step");
  record.samples = get_int("samples");
  record.train_loss = get_double("train_loss");
  record.test.loss = get_double("test_loss");
  record.test.accuracy = get_double("test_accuracy");
  record.sync.bytes = get_int("sync_bytes");
  record.sync.rounds = get_int("sync_rounds");
  record.seconds = get_double("seconds");
  record.batch_size = get_int("batch_size");
  record.learning_rate = get_double("learning_rate");
  record.top_eigenvalue = get_double("top_eigenvalue");
  return record;
}

}  // namespace

FitMonitor::FitMonitor(const FitConfig& fit, comm::Communicator& communicator, const data::LabelledData& test,
                       const FitCallbacks& callbacks, int64_t last_step)
    : fit_(fit), communicator_(communicator), test_(test), callbacks_(callbacks), last_step_(last_step) {}

bool FitMonitor::after_step(int64_t step, int64_t samples, double loss, torch::nn::Sequential& model,
                            const torch::Tensor& parameters, const sync::SyncStats& stats) {
  const bool leader = communicator_.rank() == 0;
  loss_sum_ += loss;
  ++loss_count_;
  if (leader && callbacks_.on_step) callbacks_.on_step(step);
  if (step % fit_.eval_interval != 0 && step != last_step_) {
    // A stop poll: collective, at steps every rank knows (poll_every_ comes with each decision).
    if (step % poll_every_ != 0) return true;
    torch::Tensor stop = torch::zeros({1}, torch::kInt64);
    if (leader && callbacks_.should_stop && callbacks_.should_stop()) stop.fill_(1);
    communicator_.broadcast(stop, 0);
    if (stop.item<int64_t>() == 0) return true;
    // Stopping here: this step is evaluated and checkpointed as the last one.
  }

  average_running_statistics(*model, communicator_);
  // {stop and checkpoint bits, steps between stop polls until the next evaluation}
  torch::Tensor decision = torch::zeros({2}, torch::kInt64);
  if (leader) {
    FitRecord record;
    record.step = step;
    record.samples = samples;
    record.train_loss = loss_sum_ / static_cast<double>(loss_count_);
    record.test = evaluate(model, test_);
    record.sync = stats;
    record.seconds = seconds_before_ + clock_.elapsed_seconds();
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
    const bool checkpoint = callbacks_.on_checkpoint && (checkpoint_due || finished);
    decision[0] = (finished ? kStop : 0) | (checkpoint ? kCheckpoint : 0);
    const double seconds = clock_.elapsed_seconds();
    const double step_seconds =
        (seconds - seconds_at_evaluation_) / static_cast<double>(std::max<int64_t>(1, step - step_at_evaluation_));
    seconds_at_evaluation_ = seconds;
    step_at_evaluation_ = step;
    decision[1] = std::clamp<int64_t>(static_cast<int64_t>(kStopPollSeconds / std::max(step_seconds, 1e-9)), 1,
                                      fit_.eval_interval);
  }
  loss_sum_ = 0.0;
  loss_count_ = 0;
  communicator_.broadcast(decision, 0);
  const int64_t decided = decision[0].item<int64_t>();
  poll_every_ = decision[1].item<int64_t>();
  if ((decided & kCheckpoint) != 0) {
    last_checkpoint_ = step;
    core::Checkpoint mine;
    if (save_state_) save_state_(mine);
    save(mine);
    core::Checkpoint state = gather_replica_states(communicator_, mine);
    if (leader) {
      state.tensors["parameters"] = result_.parameters;
      if (result_.running_statistics.numel() > 0) state.tensors["running_statistics"] = result_.running_statistics;
      callbacks_.on_checkpoint(step, state);
    }
  }
  return (decided & kStop) == 0;
}

void FitMonitor::save(core::Checkpoint& state) const {
  state.metadata["monitor"] = {{"last_checkpoint", last_checkpoint_},
                               {"steps_to_target", result_.steps_to_target},
                               {"seconds_to_target", result_.seconds_to_target},
                               {"batch_size", batch_size_},
                               {"learning_rate", learning_rate_},
                               {"top_eigenvalue", top_eigenvalue_}};
  state.metadata["record"] = record_json(result_.final);
}

void FitMonitor::load(const core::Checkpoint& state, torch::nn::Sequential& model, const torch::Tensor& parameters) {
  const FitRecord record = record_from(state);
  last_checkpoint_ = core::metadata_int(state, "monitor", "last_checkpoint");
  result_.steps_to_target = core::metadata_int(state, "monitor", "steps_to_target");
  result_.seconds_to_target = core::metadata_double(state, "monitor", "seconds_to_target");
  batch_size_ = core::metadata_int(state, "monitor", "batch_size");
  learning_rate_ = core::metadata_double(state, "monitor", "learning_rate");
  top_eigenvalue_ = core::metadata_double(state, "monitor", "top_eigenvalue");
  result_.final = record;
  seconds_before_ = record.seconds;
  step_at_evaluation_ = record.step;
  if (communicator_.rank() == 0) {
    result_.parameters = parameters.detach().clone();
    result_.running_statistics = running_statistics(*model);
  }
}

}  // namespace concord::supervised
