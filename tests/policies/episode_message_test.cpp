// pack_episodes and unpack_episodes: an actor process's finished episodes as one message, checked
// on the learner before they are read.
#include "concord/policies/runtime/episode_message.h"

#include <limits>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace concord::policies {
namespace {

TEST(EpisodeMessage, WhatIsPackedIsWhatIsUnpacked) {
  const runtime::FinishedEpisodes finished = {{21.5, 22}, {-3.0, 1}};
  const torch::Tensor message = runtime::pack_episodes(finished, 4);
  EXPECT_EQ(message.numel(), 9);
  EXPECT_EQ(runtime::unpack_episodes(message, "actor rank 1"), finished);
  EXPECT_TRUE(runtime::unpack_episodes(runtime::pack_episodes({}, 4), "actor rank 1").empty());
  EXPECT_THROW(runtime::pack_episodes(finished, 1), std::invalid_argument);
}

TEST(EpisodeMessage, AMessageNoActorCouldSendIsRefusedNamingTheSender) {
  const auto refusal = [](double count, double episode_return, double length) {
    torch::Tensor message = runtime::pack_episodes({{1.0, 1}}, 2);
    message[0] = count;
    message[1] = episode_return;
    message[2] = length;
    try {
      runtime::unpack_episodes(message, "actor rank 2");
    } catch (const std::runtime_error& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  EXPECT_EQ(refusal(3.0, 1.0, 1.0), "actor rank 2 sent an episode count of 3.000000, not a whole number in [0, 2]");
  EXPECT_EQ(refusal(-1.0, 1.0, 1.0), "actor rank 2 sent an episode count of -1.000000, not a whole number in [0, 2]");
  EXPECT_EQ(refusal(std::numeric_limits<double>::quiet_NaN(), 1.0, 1.0).substr(0, 34),
            "actor rank 2 sent an episode count");
  EXPECT_EQ(refusal(1.5, 1.0, 1.0), "actor rank 2 sent an episode count of 1.500000, not a whole number in [0, 2]");
  EXPECT_EQ(refusal(1.0, std::numeric_limits<double>::infinity(), 5.0),
            "actor rank 2 sent episode 0 with return inf and length 5.000000");
  EXPECT_EQ(refusal(1.0, 2.0, 0.0), "actor rank 2 sent episode 0 with return 2.000000 and length 0.000000");
  EXPECT_EQ(refusal(1.0, 2.0, 3.0), "");
}

}  // namespace
}  // namespace concord::policies
