#include "concord/sync/gradient_allreduce.h"

#include <functional>
#include <thread>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/algos/gradient_step.h"
#include "concord/comm/thread_group.h"
#include "concord/nn/flat_parameters.h"
#include "sync/thread_ranks.h"

namespace concord::sync {
namespace {

// Linear(3 -> 4) then Linear(4 -> 2): parameters w1 [4, 3], b1 [4], w2 [2, 4], b2 [2] = 12 + 4 + 8 + 2.
struct TwoLayers : torch::nn::Module {
  TwoLayers() {
    first = register_module("first", torch::nn::Linear(3, 4));
    second = register_module("second", torch::nn::Linear(4, 2));
  }
  torch::Tensor forward(const torch::Tensor& x) { return second(torch::tanh(first(x))); }
  torch::nn::Linear first{nullptr};
  torch::nn::Linear second{nullptr};
};

TEST(GradientAllreduce, BucketsRunBackwardsOverTheFlatGradientAndCoverItOnce) {
  comm::ThreadGroup group(1);
  auto communicator = group.communicator(0);
  TwoLayers model;
  nn::FlatParameters parameters(model);
  // 40 bytes per bucket at least: b2 (2) + w2 (8) = 40 bytes, then b1 (4) + w1 (12) = 64 bytes.
  GradientAllreduce strategy(*communicator, 40);
  strategy.attach(parameters);
  ASSERT_EQ(strategy.buckets().size(), 2u);
  EXPECT_EQ(strategy.buckets()[0], std::make_pair(int64_t{16}, int64_t{26}));
  EXPECT_EQ(strategy.buckets()[1], std::make_pair(int64_t{0}, int64_t{16}));

  GradientAllreduce one_bucket(*communicator, 0);
  TwoLayers other;
  nn::FlatParameters other_parameters(other);
  one_bucket.attach(other_parameters);
  ASSERT_EQ(one_bucket.buckets().size(), 1u);
  EXPECT_EQ(one_bucket.buckets()[0], std::make_pair(int64_t{0}, int64_t{26}));
}

// W replicas, each on its slice of a batch, take the same Adam steps as one model on the whole
// batch (the mean of equal-sized slices' mean losses is the whole batch's mean loss).
TEST(GradientAllreduce, ReplicasOnSlicesMatchOneModelOnTheWholeBatch) {
  torch::manual_seed(7);
  const torch::Tensor inputs = torch::randn({8, 3});
  const torch::Tensor targets = torch::randn({8, 2});

  torch::manual_seed(1);
  TwoLayers reference;
  nn::FlatParameters reference_parameters(reference);
  torch::optim::Adam reference_optimizer({reference_parameters.values()}, torch::optim::AdamOptions(0.01));
  NoSync no_sync;
  for (int step = 0; step < 3; ++step) {
    const torch::Tensor loss = torch::mse_loss(reference.forward(inputs), targets);
    algos::gradient_step(loss, reference_parameters, reference_optimizer, 1e9, no_sync);
  }

  for (int world_size : {2, 4}) {
    // Built here, one after another: torch::manual_seed is process-wide, so seeding inside the
    // rank threads would race. Replicas start from different values; attach() must hand them
    // rank 0's (the reference's).
    std::vector<std::shared_ptr<TwoLayers>> models;
    for (int rank = 0; rank < world_size; ++rank) {
      torch::manual_seed(rank == 0 ? 1 : 100 + rank);
      models.push_back(std::make_shared<TwoLayers>());
    }
    std::vector<torch::Tensor> finals(static_cast<size_t>(world_size));
    test::run_on_ranks(world_size, [&](comm::Communicator& communicator) {
      TwoLayers& model = *models[static_cast<size_t>(communicator.rank())];
      nn::FlatParameters parameters(model);
      torch::optim::Adam optimizer({parameters.values()}, torch::optim::AdamOptions(0.01));
      GradientAllreduce strategy(communicator, 40);
      strategy.attach(parameters);
      const int64_t slice = 8 / world_size;
      const torch::Tensor my_inputs = inputs.narrow(0, communicator.rank() * slice, slice);
      const torch::Tensor my_targets = targets.narrow(0, communicator.rank() * slice, slice);
      for (int step = 0; step < 3; ++step) {
        const torch::Tensor loss = torch::mse_loss(model.forward(my_inputs), my_targets);
        algos::gradient_step(loss, parameters, optimizer, 1e9, strategy);
      }
      EXPECT_EQ(strategy.stats().rounds, 3);
      EXPECT_EQ(strategy.stats().bytes, 3 * 26 * 4);
      finals[static_cast<size_t>(communicator.rank())] = parameters.values().detach().clone();
    });
    for (int rank = 0; rank < world_size; ++rank) {
      EXPECT_TRUE(torch::equal(finals[static_cast<size_t>(rank)], finals[0])) << "rank " << rank;
      EXPECT_TRUE(
          torch::allclose(finals[static_cast<size_t>(rank)], reference_parameters.values().detach(), 1e-5, 1e-6))
          << "world size " << world_size;
    }
  }
}

// A parameter outside the loss fires no gradient hook; its bucket must still be reduced.
TEST(GradientAllreduce, ParametersWithoutGradientDoNotStallTheStep) {
  test::run_on_ranks(2, [](comm::Communicator& communicator) {
    TwoLayers model;
    nn::FlatParameters parameters(model);
    torch::optim::SGD optimizer({parameters.values()}, torch::optim::SGDOptions(0.1));
    GradientAllreduce strategy(communicator, 40);
    strategy.attach(parameters);
    // Only the first layer takes part; the second layer's bucket gets no hook.
    const torch::Tensor loss = model.first(torch::ones({1, 3})).sum() * static_cast<double>(communicator.rank() + 1);
    algos::gradient_step(loss, parameters, optimizer, 1e9, strategy);
    // d loss / d b1 = rank + 1 per element; the mean over ranks 1 and 2 is 1.5.
    const torch::Tensor bias_gradient = parameters.gradient().narrow(0, 12, 4);
    EXPECT_TRUE(torch::allclose(bias_gradient, torch::full({4}, 1.5f)));
    EXPECT_TRUE(torch::equal(parameters.gradient().narrow(0, 16, 10), torch::zeros({10})));
  });
}

}  // namespace
}  // namespace concord::sync
