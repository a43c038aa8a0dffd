// The grid_cnn torso: MinAtar's reference network by default, channel-last input of any dtype, and
// its use inside an ActorCritic on MinAtar-shaped observations.
#include "concord/nn/grid_cnn.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include <torch/torch.h>

#include "concord/nn/actor_critic.h"

namespace concord::nn {
namespace {

int64_t count_parameters(torch::nn::Module& module) {
  int64_t count = 0;
  for (const auto& p : module.parameters()) count += p.numel();
  return count;
}

TEST(GridCnnTorso, DefaultsAreMinAtarsReferenceNetwork) {
  GridCnnConfig config;
  config.obs_shape = {10, 10, 4};
  GridCnnTorso torso(config);
  // conv 4 -> 16, 3x3: 16 * 4 * 9 + 16; the grid shrinks to 8x8; fc 16 * 8 * 8 -> 128.
  EXPECT_EQ(torso->flatten_dim(), 1024);
  EXPECT_EQ(torso->output_dim(), 128);
  EXPECT_EQ(count_parameters(*torso), (16 * 4 * 9 + 16) + (1024 * 128 + 128));
  const torch::Tensor out = torso->forward(torch::zeros({5, 10, 10, 4}, torch::kUInt8));
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{5, 128}));
  EXPECT_EQ(out.scalar_type(), torch::kFloat32);
}

TEST(GridCnnTorso, ReadsChannelLastGridsOfAnyDtype) {
  GridCnnConfig config;
  config.obs_shape = {10, 10, 6};
  GridCnnTorso torso(config);
  const torch::Tensor grid = torch::randint(0, 2, {3, 10, 10, 6}, torch::kUInt8);
  EXPECT_TRUE(torch::equal(torso->forward(grid), torso->forward(grid.to(torch::kFloat32))));
  // Channel-last means the conv sees channel c of cell (r, col) as x[b, r, col, c]: one lit cell in
  // channel 2 must give the same output as a float [B, C, H, W] tensor run through the layers by hand.
  torch::Tensor one = torch::zeros({1, 10, 10, 6});
  one.index_put_({0, 4, 7, 2}, 1.0f);
  auto* conv = torso->named_children()[0].value()->as<torch::nn::Conv2dImpl>();
  auto* fc = torso->named_children()[1].value()->as<torch::nn::LinearImpl>();
  ASSERT_NE(conv, nullptr);
  ASSERT_NE(fc, nullptr);
  const torch::Tensor by_hand =
      torch::relu(fc->forward(torch::relu(conv->forward(one.permute({0, 3, 1, 2}))).flatten(1)));
  EXPECT_TRUE(torch::allclose(torso->forward(one), by_hand));
}

TEST(GridCnnTorso, RefusesGridsTooSmallAndWrongInputs) {
  GridCnnConfig config;
  config.obs_shape = {2, 2, 4};
  EXPECT_THROW(GridCnnTorso{config}, std::invalid_argument);
  config.obs_shape = {10, 10, 4};
  config.channels = {};
  EXPECT_THROW(GridCnnTorso{config}, std::invalid_argument);
  config.channels = {16};
  GridCnnTorso torso(config);
  EXPECT_THROW(torso->forward(torch::zeros({1, 4, 10, 10})), std::invalid_argument);
}

TEST(GridCnnTorso, ActorCriticActsOnUint8GridObservations) {
  ActorCriticConfig config;
  config.obs_shape = {10, 10, 4};
  config.action_dim = 3;
  config.torso = "grid_cnn";
  config.shared_torso = true;
  ActorCritic model(config);
  const torch::Tensor obs = torch::randint(0, 2, {8, 10, 10, 4}, torch::kUInt8);
  const ActResult act = model->act(obs);
  EXPECT_EQ(act.action.sizes(), (std::vector<int64_t>{8}));
  EXPECT_TRUE(torch::allclose(model->value(obs), model->value(obs.to(torch::kFloat32))));
  EXPECT_TRUE(model->named_modules().contains("torso.conv0"));
}

TEST(GridCnnTorso, ActorCriticRefusesATorsoThatDoesNotFitTheObservations) {
  ActorCriticConfig config;
  config.obs_shape = {4};
  config.action_dim = 2;
  config.torso = "grid_cnn";
  try {
    ActorCritic model(config);
    FAIL() << "grid_cnn accepted CartPole's observations";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("torso=grid_cnn does not fit observations of shape [4]"),
              std::string::npos)
        << error.what();
  }
  config.obs_shape = {10, 10, 4};
  config.torso = "cnn";
  EXPECT_THROW(ActorCritic{config}, std::invalid_argument);
}

}  // namespace
}  // namespace concord::nn
