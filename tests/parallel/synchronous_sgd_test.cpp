#include "concord/parallel/synchronous_sgd.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/core/config.h"
#include "concord/sync/sync_registry.h"
#include "sync/thread_ranks.h"

namespace concord::parallel {
namespace {

using test::run_on_ranks;

torch::nn::Sequential small_net() {
  torch::manual_seed(5);
  return torch::nn::Sequential(torch::nn::Linear(6, 16), torch::nn::Tanh(), torch::nn::Linear(16, 4));
}

torch::Tensor loss_of(torch::nn::Sequential& net, const std::vector<torch::Tensor>& slice) {
  return torch::nn::functional::cross_entropy(net->forward(slice[0]), slice[1]);
}

core::Config sync_config() {
  core::ConfigSchema schema;
  sync::declare_sync_keys(schema);
  return core::Config(schema);
}

// W workers on slices of a batch (uneven: 21 rows) take the same steps as one worker on the
// whole batch: parameters agree within float tolerance, and stay identical across replicas.
TEST(SynchronousSgdTest, WWorkersMatchOneWorkerOnTheWholeBatch) {
  torch::manual_seed(6);
  const torch::Tensor x = torch::randn({21, 6});
  const torch::Tensor y = torch::randint(0, 4, {21}, torch::kInt64);
  const core::Config config = sync_config();

  torch::Tensor single_result;
  run_on_ranks(1, [&](comm::Communicator& communicator) {
    auto net = small_net();
    nn::FlatParameters parameters(*net);
    torch::optim::SGD optimizer({parameters.values()}, 0.1);
    auto strategy = sync::make_sync_strategy("allreduce", config, communicator);
    SynchronousSgd sgd(communicator, *net, parameters, optimizer, *strategy,
                       [&](const std::vector<torch::Tensor>& s) { return loss_of(net, s); },
                       {InputKind::kSliced, InputKind::kSliced});
    for (int step = 0; step < 5; ++step) sgd.step({x, y});
    single_result = parameters.values().detach().clone();
  });

  for (const int sub_slices : {1, 2}) {
    // Built here, one after another: torch::manual_seed is process-wide, so seeding inside the
    // rank threads would race and rank 0 could start from other weights than the single worker.
    std::vector<torch::nn::Sequential> nets;
    for (int rank = 0; rank < 3; ++rank) nets.push_back(small_net());
    std::vector<torch::Tensor> replicas(3);
    run_on_ranks(3, [&](comm::Communicator& communicator) {
      auto net = nets[static_cast<size_t>(communicator.rank())];
      nn::FlatParameters parameters(*net);
      torch::optim::SGD optimizer({parameters.values()}, 0.1);
      auto strategy = sync::make_sync_strategy("allreduce", config, communicator);
      SynchronousSgd sgd(
          communicator, *net, parameters, optimizer, *strategy,
          [&](const std::vector<torch::Tensor>& s) { return loss_of(net, s); },
          {InputKind::kSliced, InputKind::kSliced}, sub_slices);
      for (int step = 0; step < 5; ++step) {
        if (communicator.rank() == 0) {
          sgd.step({x, y});
        } else {
          sgd.step({});
        }
      }
      replicas[static_cast<size_t>(communicator.rank())] = parameters.values().detach().clone();
    });
    EXPECT_TRUE(torch::allclose(replicas[0], single_result, 1e-5, 1e-6))
        << "sub-slices " << sub_slices << ", largest difference "
        << (replicas[0] - single_result).abs().max().item<float>();
    EXPECT_TRUE(torch::equal(replicas[0], replicas[1]));
    EXPECT_TRUE(torch::equal(replicas[0], replicas[2]));
  }
}

}  // namespace
}  // namespace concord::parallel
