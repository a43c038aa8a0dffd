#include "concord/sync/gossip.h"

#include <gtest/gtest.h>

#include "concord/nn/flat_parameters.h"
#include "sync/thread_ranks.h"

namespace concord::sync {
namespace {

using test::run_on_ranks;
using test::set_values;
using test::VectorModule;

// Receiver x = 1 with weight 0.5 gets x_s = 4 with weight 0.25:
//   x = (0.5 * 1 + 0.25 * 4) / 0.75 = 2,  w = 0.75
TEST(GossipTest, MixingRuleByHand) {
  torch::Tensor x = torch::full({1}, 1.0);
  const double weight = gossip_mix(x, 0.5, torch::full({1}, 4.0), 0.25);
  EXPECT_DOUBLE_EQ(weight, 0.75);
  EXPECT_FLOAT_EQ(x.item<float>(), 2.0f);
}

// With p = 1 and two replicas both push to each other. Start x0 = 1, x1 = 3, weights 1/2:
//   each sends (x, 1/4) and keeps 1/4; each mixes (1/4 x_own + 1/4 x_other) / (1/2) = 2, weight 1/2.
TEST(GossipTest, TwoReplicasAlwaysPushingMeetInTheMiddle) {
  run_on_ranks(2, [](comm::Communicator& communicator) {
    VectorModule module(0.0);
    nn::FlatParameters parameters(module);
    Gossip gossip(communicator, {1.0, 7});
    gossip.attach(parameters);
    set_values(parameters.values(), communicator.rank() == 0 ? 1.0 : 3.0);
    gossip.after_step();
    EXPECT_FLOAT_EQ(parameters.values().item<float>(), 2.0f);
    EXPECT_DOUBLE_EQ(gossip.weight(), 0.5);
    EXPECT_EQ(gossip.stats().rounds, 1);
  });
}

// Whatever the pattern, exchanges keep sum_i w_i = 1 and the weighted mean sum_i w_i x_i, and
// never deadlock: four replicas, 50 steps, p = 0.5.
TEST(GossipTest, ExchangesPreserveTotalWeightAndWeightedMean) {
  constexpr int kWorld = 4;
  std::vector<double> weights(kWorld), weighted_values(kWorld);
  run_on_ranks(kWorld, [&](comm::Communicator& communicator) {
    VectorModule module(0.0);
    nn::FlatParameters parameters(module);
    Gossip gossip(communicator, {0.5, 11});
    gossip.attach(parameters);
    set_values(parameters.values(), 1.0 + communicator.rank());  // mean 2.5
    for (int step = 0; step < 50; ++step) gossip.after_step();
    weights[static_cast<size_t>(communicator.rank())] = gossip.weight();
    weighted_values[static_cast<size_t>(communicator.rank())] = gossip.weight() * parameters.values().item<double>();
  });
  double total_weight = 0.0, weighted_mean = 0.0;
  for (int rank = 0; rank < kWorld; ++rank) {
    total_weight += weights[static_cast<size_t>(rank)];
    weighted_mean += weighted_values[static_cast<size_t>(rank)];
  }
  EXPECT_NEAR(total_weight, 1.0, 1e-6);
  EXPECT_NEAR(weighted_mean, 2.5, 1e-5);
}

// Every rank draws the same pattern; nobody pushes to itself; p = 0 never pushes.
TEST(GossipTest, PatternIsSharedAndNeverSelf) {
  std::vector<std::vector<int>> patterns(3);
  run_on_ranks(3, [&](comm::Communicator& communicator) {
    Gossip gossip(communicator, {0.7, 5});
    std::vector<int> all;
    for (int step = 0; step < 20; ++step) {
      const std::vector<int> targets = gossip.draw_exchanges();
      for (int rank = 0; rank < 3; ++rank) EXPECT_NE(targets[static_cast<size_t>(rank)], rank);
      all.insert(all.end(), targets.begin(), targets.end());
    }
    patterns[static_cast<size_t>(communicator.rank())] = all;
    Gossip quiet(communicator, {0.0, 5});
    for (const int target : quiet.draw_exchanges()) EXPECT_EQ(target, -1);
  });
  EXPECT_EQ(patterns[0], patterns[1]);
  EXPECT_EQ(patterns[0], patterns[2]);
}

}  // namespace
}  // namespace concord::sync
