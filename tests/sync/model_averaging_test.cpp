// Local SGD and federated averaging: the two strategies that average whole models.
#include <algorithm>

#include <gtest/gtest.h>

#include "concord/nn/flat_parameters.h"
#include "concord/sync/federated_averaging.h"
#include "concord/sync/local_sgd.h"
#include "sync/thread_ranks.h"

namespace concord::sync {
namespace {

using test::run_on_ranks;
using test::set_values;
using test::VectorModule;

// H = 2, no warm-up: replicas drift apart, and every second step they become their mean.
TEST(LocalSgdTest, AveragesEveryHSteps) {
  run_on_ranks(2, [](comm::Communicator& communicator) {
    VectorModule module(0.0);
    nn::FlatParameters parameters(module);
    LocalSgd local(communicator, {2, 0});
    local.attach(parameters);
    const float mine = communicator.rank() == 0 ? 1.0f : 5.0f;
    set_values(parameters.values(), mine);
    local.synchronize_gradients();
    local.after_step();
    EXPECT_FLOAT_EQ(parameters.values().item<float>(), mine);  // step 1: still apart
    local.after_step();
    EXPECT_FLOAT_EQ(parameters.values().item<float>(), 3.0f);  // step 2: averaged
    EXPECT_EQ(local.stats().rounds, 1);
  });
}

// Post-local SGD: during the 2 warm-up steps gradients are averaged every step, then local
// steps with H = 3.
TEST(LocalSgdTest, PostLocalSgdSwitchesAfterWarmup) {
  run_on_ranks(2, [](comm::Communicator& communicator) {
    VectorModule module(0.0);
    nn::FlatParameters parameters(module);
    LocalSgd local(communicator, {3, 2});
    local.attach(parameters);
    for (int step = 1; step <= 8; ++step) {
      parameters.gradient().fill_(communicator.rank() == 0 ? 1.0 : 3.0);
      local.synchronize_gradients();
      EXPECT_FLOAT_EQ(parameters.gradient().item<float>(), step <= 2 ? 2.0f : (communicator.rank() == 0 ? 1.0f : 3.0f))
          << "step " << step;
      local.after_step();
    }
    // 2 gradient rounds, then parameter averages after steps 5 and 8.
    EXPECT_EQ(local.stats().rounds, 4);
  });
}

// FedAvg's weighting by data size: rank 0's client holds 1 example and trained to 1, rank 1's
// clients hold 3 examples and trained to 5: the average is (1 * 1 + 3 * 5) / 4 = 4, not 3.
TEST(FederatedAveragingTest, WeightsClientsByDataSize) {
  run_on_ranks(2, [](comm::Communicator& communicator) {
    FederatedAveraging server(communicator, {2, 1.0, 3});
    const bool first = communicator.rank() == 0;
    torch::Tensor weighted_sum = torch::full({2}, first ? 1.0 * 1.0 : 3.0 * 5.0);
    server.average(weighted_sum, first ? 1.0 : 3.0);
    EXPECT_FLOAT_EQ(weighted_sum[0].item<float>(), 4.0f);
    EXPECT_FLOAT_EQ(weighted_sum[1].item<float>(), 4.0f);
    EXPECT_EQ(server.stats().rounds, 1);
  });
}

// C K clients a round, distinct, identical on every rank, each owned by exactly one rank.
TEST(FederatedAveragingTest, SelectsTheSameFractionOnEveryRank) {
  std::vector<std::vector<int>> drawn(3);
  run_on_ranks(3, [&](comm::Communicator& communicator) {
    FederatedAveraging server(communicator, {100, 0.1, 9});
    EXPECT_EQ(server.clients_per_round(), 10);
    std::vector<int> all;
    for (int round = 0; round < 5; ++round) {
      const std::vector<int> clients = server.select_clients();
      EXPECT_EQ(clients.size(), 10u);
      EXPECT_TRUE(std::adjacent_find(clients.begin(), clients.end()) == clients.end());
      all.insert(all.end(), clients.begin(), clients.end());
    }
    drawn[static_cast<size_t>(communicator.rank())] = all;
    int owned = 0;
    for (int client = 0; client < 100; ++client) owned += server.owns(client) ? 1 : 0;
    EXPECT_EQ(owned, communicator.rank() == 0 ? 34 : 33);
  });
  EXPECT_EQ(drawn[0], drawn[1]);
  EXPECT_EQ(drawn[0], drawn[2]);
}

}  // namespace
}  // namespace concord::sync
