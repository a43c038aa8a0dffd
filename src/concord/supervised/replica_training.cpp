#include "concord/supervised/replica_training.h"

#include <torch/torch.h>

#include "concord/core/rng.h"
#include "concord/data/batch_sampler.h"
#include "concord/data/partition.h"

namespace concord::supervised {

FitResult train_replica(const FitConfig& fit, torch::nn::Sequential& model, nn::FlatParameters& parameters,
                        sync::SyncStrategy& strategy, const data::MnistSplit& data, comm::Communicator& communicator,
                        const FitCallbacks& callbacks) {
  const int rank = communicator.rank();
  const int workers = communicator.world_size();
  const data::LabelledData shard =
      data.train.select(data::iid_partition(data.train.size(), workers, core::derive_seed(fit.seed, 1))[rank]);
  data::ShuffledBatches batches(shard.size(), fit.batch_size, core::derive_seed(fit.seed, 100 + rank));
  torch::optim::SGD optimizer({parameters.values()},
                              torch::optim::SGDOptions(fit.learning_rate).momentum(fit.momentum));
  strategy.attach(parameters);

  FitMonitor monitor(fit, communicator, data.test, callbacks, fit.steps);
  int64_t samples = 0;
  for (int64_t step = 1; step <= fit.steps; ++step) {
    const data::LabelledData batch = shard.select(batches.next());
    parameters.zero_grad();
    const torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(batch.images), batch.labels);
    loss.backward();
    strategy.synchronize_gradients();
    optimizer.step();
    strategy.after_step();
    samples += batch.size() * workers;
    if (!monitor.after_step(step, samples, loss.item<double>(), model, parameters.values(), strategy.stats())) break;
  }
  return monitor.result();
}

}  // namespace concord::supervised
