// SimHash codes on worked examples (a known projection loaded from a checkpoint), the fixed-seed
// projection, and its round trip through checkpoints.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/envs/space.h"
#include "concord/explore/observation_scaling.h"
#include "concord/explore/sim_hash.h"

namespace concord::explore {
namespace {

SimHash hash_with_projection(const torch::Tensor& projection) {
  SimHash hash(projection.size(1), projection.size(0), /*seed=*/0);
  core::Checkpoint checkpoint;
  checkpoint.tensors["hash/projection"] = projection;
  hash.load(checkpoint, "hash/");
  return hash;
}

TEST(SimHash, CodesAreTheSignsOfTheProjectionOnAWorkedExample) {
  // A s for s = (2, 1): (1, 1.5, -2) -> bits 1 1 0;  for s = (-1, 3): (-4, 1, 1) -> bits 0 1 1.
  SimHash hash = hash_with_projection(torch::tensor({{1.0f, -1.0f}, {0.5f, 0.5f}, {-1.0f, 0.0f}}));
  const torch::Tensor codes = hash.codes(torch::tensor({{2.0f, 1.0f}, {-1.0f, 3.0f}}));
  ASSERT_EQ(codes.scalar_type(), torch::kUInt8);
  EXPECT_TRUE(torch::equal(codes, torch::tensor({{1, 1, 0}, {0, 1, 1}}, torch::kUInt8)));
}

TEST(SimHash, TheProjectionIsStandardNormalAndFixedBySeed) {
  SimHash a(/*input_dim=*/50, /*bits=*/64, /*seed=*/3);
  SimHash b(50, 64, 3);
  SimHash c(50, 64, 4);
  EXPECT_EQ(a.projection().sizes(), (std::vector<int64_t>{64, 50}));
  EXPECT_TRUE(torch::equal(a.projection(), b.projection()));
  EXPECT_FALSE(torch::equal(a.projection(), c.projection()));
  EXPECT_NEAR(a.projection().mean().item<double>(), 0.0, 0.05);
  EXPECT_NEAR(a.projection().std().item<double>(), 1.0, 0.05);
}

TEST(SimHash, OneHotStatesGetDistinctCodes) {
  SimHash hash(/*input_dim=*/100, /*bits=*/32, /*seed=*/1);
  const torch::Tensor codes = hash.codes(torch::eye(100));
  EXPECT_EQ(std::get<0>(torch::unique_dim(codes, 0)).size(0), 100);
}

TEST(SimHash, SavesAndRestoresItsProjection) {
  SimHash original(4, 16, /*seed=*/5);
  core::Checkpoint checkpoint;
  original.save(checkpoint, "explore/hash/");
  SimHash restored(4, 16, /*seed=*/6);
  restored.load(checkpoint, "explore/hash/");
  const torch::Tensor states = torch::randn({10, 4});
  EXPECT_TRUE(torch::equal(original.codes(states), restored.codes(states)));

  SimHash other_k(4, 32, 5);
  EXPECT_THROW(other_k.load(checkpoint, "explore/hash/"), core::CheckpointError);
}

TEST(SimHash, RejectsBadSizes) {
  EXPECT_THROW(SimHash(0, 16, 1), std::invalid_argument);
  EXPECT_THROW(SimHash(4, 0, 1), std::invalid_argument);
  EXPECT_THROW(SimHash(4, 2048, 1), std::invalid_argument);
}

TEST(ObservationScaling, MapsBoundedElementsToZeroOneAndAppendsTheBias) {
  const envs::Space space = envs::Space::box({3}, {-1.2f, 0.0f, -INFINITY}, {0.6f, 4.0f, INFINITY});
  ObservationScaling scaling(space, /*append_bias=*/true);
  EXPECT_EQ(scaling.output_dim(), 4);
  const torch::Tensor scaled = scaling(torch::tensor({{-1.2f, 4.0f, 7.0f}, {-0.3f, 2.0f, -2.0f}}));
  EXPECT_TRUE(
      torch::allclose(scaled, torch::tensor({{0.0f, 1.0f, 7.0f, 1.0f}, {0.5f, 0.5f, -2.0f, 1.0f}}), 1e-6, 1e-6));
}

// Every cell of DeepSea(30) keeps its own 64-bit code through the scaling. Centred on [-1, 1],
// the shared -A 1 term swamped each state's own column and 900 states fell into 35 codes.
TEST(ObservationScaling, OneHotStatesKeepDistinctCodes) {
  const envs::Space space = envs::Space::box({900}, 0.0f, 1.0f);
  SimHash hash(901, 64, 1, ObservationScaling(space, true));
  const torch::Tensor codes = hash.codes(torch::eye(900));
  EXPECT_EQ(std::get<0>(torch::unique_dim(codes, 0)).size(0), 900);
}

TEST(ObservationScaling, WithTheBiasHyperplanesSeparateNearAndFarStatesInOneDirection) {
  // Without the bias, s and 3 s always share a code; with it, some of 64 affine planes part them.
  const envs::Space space = envs::Space::box({2}, 0.0f, 10.0f);
  SimHash through_origin(2, 64, 1, ObservationScaling(space, false));
  SimHash affine(3, 64, 1, ObservationScaling(space, true));
  const torch::Tensor near_and_far = torch::tensor({{1.0f, 1.0f}, {3.0f, 3.0f}});
  const torch::Tensor plain = through_origin.codes(near_and_far);
  const torch::Tensor biased = affine.codes(near_and_far);
  EXPECT_TRUE(torch::equal(plain[0], plain[1]));
  EXPECT_FALSE(torch::equal(biased[0], biased[1]));
}

}  // namespace
}  // namespace concord::explore
