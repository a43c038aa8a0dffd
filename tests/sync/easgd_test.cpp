#include "concord/sync/easgd.h"

#include <gtest/gtest.h>

#include "concord/nn/flat_parameters.h"
#include "sync/thread_ranks.h"

namespace concord::sync {
namespace {

using test::run_on_ranks;
using test::set_values;
using test::VectorModule;

// Both replicas start at 2 (rank 0's value reaches rank 1 through attach), so the centre is 2.
// They then train to x0 = 1 and x1 = 4; alpha = 0.25, tau = 1.
//   d = (-1, 2), sum d = 1
//   x0 = 1 + 0.25 = 1.25,  x1 = 4 - 0.5 = 3.5,  centre = 2 + 0.25 * 1 = 2.25
TEST(EasgdTest, SynchronousRuleByHand) {
  run_on_ranks(2, [](comm::Communicator& communicator) {
    VectorModule module(communicator.rank() == 0 ? 2.0 : 7.0);
    nn::FlatParameters parameters(module);
    Easgd easgd(communicator, {0.25, 1, false, 0.0});
    easgd.attach(parameters);
    EXPECT_FLOAT_EQ(parameters.values().item<float>(), 2.0f);
    set_values(parameters.values(), communicator.rank() == 0 ? 1.0 : 4.0);
    easgd.after_step();
    EXPECT_FLOAT_EQ(parameters.values().item<float>(), communicator.rank() == 0 ? 1.25f : 3.5f);
    EXPECT_FLOAT_EQ(easgd.centre().item<float>(), 2.25f);
    EXPECT_EQ(easgd.stats().rounds, 1);
  });
}

// The same start, asynchronous rule. Rank 0 serves rank 1 first:
//   rank 1 gets centre 2: x1 = 4 - 0.25 (4 - 2) = 3.5;  centre = 2 + 0.25 (4 - 2) = 2.5
// then itself: d0 = 1 - 2.5 = -1.5: x0 = 1 + 0.375 = 1.375;  centre = 2.5 - 0.375 = 2.125
TEST(EasgdTest, AsynchronousRuleByHand) {
  run_on_ranks(2, [](comm::Communicator& communicator) {
    VectorModule module(2.0);
    nn::FlatParameters parameters(module);
    Easgd easgd(communicator, {0.25, 1, true, 0.0});
    easgd.attach(parameters);
    set_values(parameters.values(), communicator.rank() == 0 ? 1.0 : 4.0);
    easgd.after_step();
    EXPECT_FLOAT_EQ(parameters.values().item<float>(), communicator.rank() == 0 ? 1.375f : 3.5f);
    if (communicator.rank() == 0) {
      EXPECT_FLOAT_EQ(easgd.centre().item<float>(), 2.125f);
    }
  });
}

// Exchanges happen only every tau steps.
TEST(EasgdTest, CommunicatesEveryTauSteps) {
  run_on_ranks(2, [](comm::Communicator& communicator) {
    VectorModule module(0.0, 10);
    nn::FlatParameters parameters(module);
    Easgd easgd(communicator, {0.25, 3, false, 0.0});
    easgd.attach(parameters);
    const int64_t attach_bytes = easgd.stats().bytes;
    for (int step = 0; step < 7; ++step) easgd.after_step();
    EXPECT_EQ(easgd.stats().rounds, 2);
    EXPECT_EQ(easgd.stats().bytes - attach_bytes, 2 * 10 * 4);
  });
}

// EAMSGD's Nesterov transform, delta = 0.5, gradient 1 at every step:
//   step 1: v = 1,   applied g + delta v = 1.5
//   step 2: v = 1.5, applied 1 + 0.75 = 1.75
TEST(EasgdTest, MomentumVariantAppliesNesterovToTheGradient) {
  run_on_ranks(1, [](comm::Communicator& communicator) {
    VectorModule module(0.0);
    nn::FlatParameters parameters(module);
    Easgd easgd(communicator, {0.5, 100, false, 0.5});
    easgd.attach(parameters);
    for (const float expected : {1.5f, 1.75f}) {
      parameters.gradient().fill_(1.0);
      easgd.synchronize_gradients();
      EXPECT_FLOAT_EQ(parameters.gradient().item<float>(), expected);
    }
  });
}

TEST(EasgdTest, RefusesUnstableCoefficients) {
  run_on_ranks(4, [](comm::Communicator& communicator) {
    EXPECT_THROW(Easgd(communicator, {0.5, 1, false, 0.0}), std::invalid_argument);  // 4 * 0.5 > 1
    EXPECT_NO_THROW(Easgd(communicator, {0.5, 1, true, 0.0}));
    EXPECT_THROW(Easgd(communicator, {0.1, 0, false, 0.0}), std::invalid_argument);
    EXPECT_THROW(Easgd(communicator, {1.5, 1, true, 0.0}), std::invalid_argument);
  });
}

}  // namespace
}  // namespace concord::sync
