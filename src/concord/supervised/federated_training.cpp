#include "concord/supervised/federated_training.h"

#include <torch/torch.h>

#include "concord/core/checkpoint_fields.h"
#include "concord/core/rng.h"
#include "concord/data/batch_sampler.h"
#include "concord/data/partition.h"
#include "concord/supervised/running_statistics.h"
#include "concord/sync/federated_averaging.h"

namespace concord::supervised {

FitResult train_federated(const FitConfig& fit, torch::nn::Sequential& model, nn::FlatParameters& parameters,
                          const data::TrainTestSplit& data, comm::Communicator& communicator,
                          const FitCallbacks& callbacks, const core::Checkpoint* resume_from) {
  const uint64_t partition_seed = core::derive_seed(fit.seed, 2);
  const std::vector<torch::Tensor> client_rows =
      fit.partition == "iid" ? data::iid_partition(data.train.size(), fit.clients, partition_seed)
                             : data::label_sorted_shards(data.train.labels, fit.clients, 2, partition_seed);
  sync::FederatedAveraging server(communicator, {fit.clients, fit.client_fraction, core::derive_seed(fit.seed, 3)});
  torch::optim::SGD optimizer({parameters.values()}, torch::optim::SGDOptions(fit.learning_rate));
  // The global model: its parameters, then its batch-norm statistics (if any), which the server
  // averages with the same weights.
  const int64_t parameter_count = parameters.numel();
  torch::Tensor global = torch::cat({parameters.values().detach(), running_statistics(*model)});
  {
    torch::NoGradGuard no_grad;
    communicator.broadcast(global, 0);
  }
  const auto load_global = [&] {
    torch::NoGradGuard no_grad;
    parameters.values().copy_(global.narrow(0, 0, parameter_count));
    load_running_statistics(*model, global.narrow(0, parameter_count, global.numel() - parameter_count));
  };

  FitMonitor monitor(fit, communicator, data.test, callbacks, fit.rounds);
  monitor.note_schedule(fit.local_batch, fit.learning_rate, 0.0);
  int64_t samples = 0;
  int64_t first_round = 1;
  if (resume_from != nullptr) {
    // The global model rather than this replica: the replica's statistics were averaged across
    // ranks for the evaluation, which the next round's global model does not see.
    global.copy_(core::checkpoint_tensor(*resume_from, "global", global));
    load_global();
    server.load(*resume_from);
    monitor.load(*resume_from, model, parameters.values());
    first_round = core::metadata_int(*resume_from, "loop", "round") + 1;
    samples = core::metadata_int(*resume_from, "loop", "samples");
  }
  int64_t round = first_round - 1;  // the last round taken
  // Between rounds every rank holds the same global model, and the clients' plain SGD keeps no
  // state from one round to the next.
  monitor.set_state_saver([&](core::Checkpoint& state) {
    state.tensors["global"] = global.clone();
    server.save(state);
    state.metadata["loop"] = {{"round", round}, {"samples", samples}};
  });
  torch::Tensor weighted_sum = torch::zeros_like(global);
  for (round = first_round; round <= fit.rounds; ++round) {
    weighted_sum.zero_();
    double weight = 0.0;
    double loss_sum = 0.0;
    int64_t loss_count = 0;
    for (const int client : server.select_clients()) {
      samples += client_rows[static_cast<size_t>(client)].size(0) * fit.local_epochs;
      if (!server.owns(client)) continue;
      const data::LabelledData local = data.train.select(client_rows[static_cast<size_t>(client)]);
      data::ShuffledBatches batches(local.size(), fit.local_batch,
                                    core::derive_seed(fit.seed, static_cast<uint64_t>(round * fit.clients + client)));
      load_global();
      for (int64_t step = 0; step < fit.local_epochs * batches.batches_per_epoch(); ++step) {
        const data::LabelledData batch = local.select(batches.next());
        parameters.zero_grad();
        const torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(batch.images), batch.labels);
        loss.backward();
        optimizer.step();
        loss_sum += loss.item<double>();
        ++loss_count;
      }
      weighted_sum.add_(torch::cat({parameters.values().detach(), running_statistics(*model)}),
                        static_cast<double>(local.size()));
      weight += static_cast<double>(local.size());
    }
    server.average(weighted_sum, weight);
    global.copy_(weighted_sum);
    load_global();
    const double loss = loss_count > 0 ? loss_sum / static_cast<double>(loss_count) : 0.0;
    if (!monitor.after_step(round, samples, loss, model, parameters.values(), server.stats())) break;
  }
  return monitor.result();
}

}  // namespace concord::supervised
