// GAP: the discriminator swap (a permutation, the same on every rank, moving every discriminator
// to the right pair), the GAN models and config, and a short training run on MNIST.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/core/checkpoint.h"
#include "concord/core/image_grid.h"
#include "concord/data/mnist.h"
#include "concord/nn/flat_parameters.h"
#include "concord/supervised/discriminator_swap.h"
#include "concord/supervised/gan_config.h"
#include "concord/supervised/gan_models.h"
#include "concord/supervised/gan_training.h"
#include "learning_outcome.h"
#include "sync/thread_ranks.h"

namespace concord::supervised {
namespace {

bool is_permutation_of(const std::vector<int>& permutation, int size) {
  std::vector<int> sorted = permutation;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> identity(static_cast<size_t>(size));
  std::iota(identity.begin(), identity.end(), 0);
  return sorted == identity;
}

TEST(DiscriminatorSwapTest, DrawsPermutationsThatDependOnlyOnSeedAndSwap) {
  std::set<std::vector<int>> distinct;
  for (int64_t swap = 1; swap <= 200; ++swap) {
    const std::vector<int> permutation = swap_permutation(5, 7, swap);
    ASSERT_TRUE(is_permutation_of(permutation, 5)) << "swap " << swap;
    EXPECT_EQ(permutation, swap_permutation(5, 7, swap));
    distinct.insert(permutation);
  }
  // 200 draws from 120 permutations: a uniform draw sees most of them.
  EXPECT_GT(distinct.size(), 90u);
  EXPECT_NE(swap_permutation(8, 7, 1), swap_permutation(8, 8, 1));
  EXPECT_EQ(swap_permutation(1, 7, 3), std::vector<int>{0});
}

TEST(DiscriminatorSwapTest, EveryDiscriminatorMovesToThePairThePermutationNames) {
  constexpr int kPairs = 4;
  test::run_on_ranks(kPairs, [](comm::Communicator& communicator) {
    const int rank = communicator.rank();
    // Discriminator i starts with parameters all i and Adam moments all 100 + i and 200 + i.
    test::VectorModule module(rank, 6);
    nn::FlatParameters parameters(module);
    const torch::Tensor first_moment = torch::full({6}, 100.0 + rank);
    const torch::Tensor second_moment = torch::full({6}, 200.0 + rank);
    std::vector<int> held = {0, 1, 2, 3};
    for (int64_t swap = 1; swap <= 6; ++swap) {
      const std::vector<int> permutation = swap_permutation(kPairs, 11, swap);
      exchange_discriminator(communicator, permutation, {parameters.values(), first_moment, second_moment});
      std::vector<int> now(held.size());
      for (size_t pair = 0; pair < now.size(); ++pair) now[pair] = held[static_cast<size_t>(permutation[pair])];
      held = now;
      const double expected = held[static_cast<size_t>(rank)];
      EXPECT_TRUE(parameters.values().eq(expected).all().item<bool>()) << "swap " << swap << " rank " << rank;
      EXPECT_TRUE(first_moment.eq(100.0 + expected).all().item<bool>());
      EXPECT_TRUE(second_moment.eq(200.0 + expected).all().item<bool>());
      // The parameters still alias the flat buffer the optimiser steps.
      EXPECT_TRUE(module.x.eq(expected).all().item<bool>());
    }
  });
}

TEST(DiscriminatorSwapTest, EveryRankDrawsTheSamePermutation) {
  test::run_on_ranks(3, [](comm::Communicator& communicator) {
    // Ranks that seed torch differently still agree: the permutation uses only (seed, swap).
    torch::manual_seed(static_cast<uint64_t>(communicator.rank()) + 1);
    std::vector<int64_t> mine;
    for (int64_t swap = 1; swap <= 50; ++swap) {
      for (const int index : swap_permutation(3, 5, swap)) mine.push_back(index);
    }
    const std::vector<torch::Tensor> everyone = communicator.allgather(torch::tensor(mine));
    for (const auto& other : everyone) EXPECT_TRUE(other.equal(everyone[0]));
  });
}

TEST(DiscriminatorSwapTest, RefusesSomethingThatIsNotAPermutation) {
  test::run_on_ranks(2, [](comm::Communicator& communicator) {
    const torch::Tensor state = torch::zeros({3});
    EXPECT_THROW(exchange_discriminator(communicator, {0, 0}, {state}), std::invalid_argument);
    EXPECT_THROW(exchange_discriminator(communicator, {1, 0, 2}, {state}), std::invalid_argument);
  });
}

TEST(GanModelsTest, MapNoiseToDigitsAndDigitsToOneLogit) {
  for (const std::string model : {"mlp", "conv"}) {
    torch::manual_seed(1);
    auto generator = make_generator(model, 16, 32);
    auto discriminator = make_discriminator(model, 32);
    const torch::Tensor images = generator->forward(torch::randn({3, 16}));
    EXPECT_EQ(images.sizes(), (std::vector<int64_t>{3, 1, 28, 28})) << model;
    EXPECT_GE(images.min().item<double>(), 0.0);
    EXPECT_LE(images.max().item<double>(), 1.0);
    EXPECT_EQ(discriminator->forward(images).sizes(), (std::vector<int64_t>{3, 1})) << model;
  }
  EXPECT_THROW(make_generator("resnet", 16, 32), std::invalid_argument);
}

TEST(GanConfigTest, RefusesSwappingWithOnePairAndOtherBadValuesNamingTheKey) {
  const auto message_of = [](GanConfig gan) {
    try {
      validate(gan);
    } catch (const std::invalid_argument& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  GanConfig gan;
  EXPECT_EQ(message_of(gan), "");
  gan.pairs = 1;
  EXPECT_NE(message_of(gan).find("gan.pairs = 1"), std::string::npos) << message_of(gan);
  gan.swap = false;
  EXPECT_EQ(message_of(gan), "");
  gan = GanConfig();
  gan.swap_every = 0;
  EXPECT_NE(message_of(gan).find("gan.swap_every = 0"), std::string::npos);
  gan = GanConfig();
  gan.model = "transformer";
  EXPECT_NE(message_of(gan).find("gan.model = transformer"), std::string::npos);
  gan = GanConfig();
  gan.checkpoint_interval = -1;
  EXPECT_NE(message_of(gan).find("gan.checkpoint_interval = -1: must be >= 0"), std::string::npos);
}

// Found by tests/fuzz/config_fuzz: gan.pairs was cast to int, so 2^32 + 2 trained 2 pairs.
TEST(GanConfigTest, PairsBeyondAnIntAreRefusedNotTruncated) {
  core::ConfigSchema schema;
  schema.declare("run.seed", int64_t{1}, "");
  declare_gan_keys(schema);
  core::Config config(schema);
  config.set("gan.pairs", int64_t{(int64_t{1} << 32) + 2}, "test");
  EXPECT_THROW(gan_config_from(config), core::ConfigError);
  config.set("gan.pairs", int64_t{3}, "test");
  EXPECT_EQ(gan_config_from(config).pairs, 3);
}

// Big-endian 32-bit integer at `offset` of a PNG's bytes.
uint32_t big_endian(const std::string& bytes, size_t offset) {
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i) value = (value << 8) | static_cast<unsigned char>(bytes[offset + i]);
  return value;
}

// An untrained generator's sigmoid gives pixels near 0.5 with little spread; MNIST is mostly black
// (mean ~0.13) with a wide spread. The score is how much of the way from 0.5 to the data's mean
// the samples' mean has moved; they must also spread at least half as widely as the data.
TEST(GanLearning, AShortRunLearnsTowardTheDataSwapsAndWritesAGrid) {
  const data::TrainTestSplit data = data::load_mnist(data::default_data_dir());
  const auto train = [&data](uint64_t seed) {
    GanConfig gan;
    gan.seed = seed;
    gan.pairs = 2;
    gan.swap_every = 10;
    gan.steps = 150;
    gan.eval_interval = 50;
    gan.sample_interval = 0;
    gan.hidden_units = 128;
    gan.grid_samples = 16;
    gan.learning_rate = 1e-3;

    const auto png = std::filesystem::temp_directory_path() /
                     ("concord_gan_test_" + std::to_string(::getpid()) + "_" + std::to_string(seed) + ".png");
    int grids = 0;
    GanCallbacks callbacks;
    callbacks.on_samples = [&](int64_t step, const torch::Tensor& samples) {
      EXPECT_EQ(step, gan.steps);
      EXPECT_EQ(samples.sizes(), (std::vector<int64_t>{2 * 16, 1, 28, 28}));
      core::write_png(png, core::tile_images(samples, 8));
      ++grids;
    };
    const GanResult result = train_gans_with_threads(gan, data.train, callbacks);

    EXPECT_EQ(result.records.size(), 3u);
    EXPECT_EQ(result.final.swaps, 14);  // every 10 updates, none after the last
    EXPECT_TRUE(is_permutation_of(result.discriminator_of_pair, 2));
    for (const GanRecord& record : result.records) {
      EXPECT_TRUE(std::isfinite(record.discriminator_loss) && std::isfinite(record.generator_loss));
    }
    EXPECT_NE(result.records.front().discriminator_loss, result.records.back().discriminator_loss);
    EXPECT_GT(result.final.sample_std, 0.5 * result.data_std);

    EXPECT_EQ(grids, 1);
    std::ifstream in(png, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::filesystem::remove(png);
    EXPECT_GT(bytes.size(), 33u);
    if (bytes.size() > 33u) {
      EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
      EXPECT_EQ(bytes.substr(12, 4), "IHDR");
      EXPECT_EQ(big_endian(bytes, 16), 8u * (28 + 2) + 2);  // width: 8 tiles of 28 and 2-pixel borders
      EXPECT_EQ(big_endian(bytes, 20), 4u * (28 + 2) + 2);  // height: 32 samples, 8 to a row
    }
    return 1.0 - std::abs(result.final.sample_mean - result.data_mean) / std::abs(0.5 - result.data_mean);
  };
  EXPECT_TRUE(test::learns(train, test::LearningBar{0.5}));
}

// A GAP run small enough for a unit test: `pairs` 32-unit MLP pairs on batches of 16, swapping
// and recording every `interval` updates, `steps` updates, no PNG grids between.
GanConfig small_gan(int pairs, int64_t interval, int64_t steps) {
  GanConfig gan;
  gan.pairs = pairs;
  gan.swap_every = interval;
  gan.eval_interval = interval;
  gan.steps = steps;
  gan.hidden_units = 32;
  gan.batch_size = 16;
  gan.sample_interval = 0;
  return gan;
}

TEST(GanTrainingTest, SeedsMakeRunsRepeatable) {
  const data::TrainTestSplit data = data::load_mnist(data::default_data_dir());
  GanConfig gan = small_gan(2, 3, 12);
  gan.eval_interval = 12;
  const GanResult first = train_gans_with_threads(gan, data.train, {});
  const GanResult second = train_gans_with_threads(gan, data.train, {});
  EXPECT_EQ(first.final.discriminator_loss, second.final.discriminator_loss);
  EXPECT_EQ(first.final.sample_mean, second.final.sample_mean);
  EXPECT_EQ(first.discriminator_of_pair, second.discriminator_of_pair);
}

// A GAP run stopped at step 9 (a swap step, and the end of that run, so its swap was skipped)
// and resumed from its checkpoint to 18 ends exactly as a run of 18: same records, same
// discriminator assignment; so does one stopped by should_stop at a record step mid-run.
TEST(GanTrainingTest, AResumedRunEndsExactlyAsAnUninterruptedOne) {
  const data::TrainTestSplit data = data::load_mnist(data::default_data_dir());
  GanConfig gan = small_gan(3, 3, 18);
  const GanResult whole = train_gans_with_threads(gan, data.train, {});

  core::Checkpoint saved;
  int64_t saved_step = 0;
  GanCallbacks callbacks;
  callbacks.on_checkpoint = [&](int64_t step, const core::Checkpoint& state) {
    saved = state;
    saved_step = step;
  };
  GanConfig first = gan;
  first.steps = 9;
  train_gans_with_threads(first, data.train, callbacks);
  ASSERT_EQ(saved_step, 9);
  const GanResult resumed = train_gans_with_threads(gan, data.train, {}, nullptr, &saved);
  EXPECT_EQ(resumed.final.step, 18);
  EXPECT_EQ(resumed.final.swaps, whole.final.swaps);
  EXPECT_EQ(resumed.final.discriminator_loss, whole.final.discriminator_loss);
  EXPECT_EQ(resumed.final.generator_loss, whole.final.generator_loss);
  EXPECT_EQ(resumed.final.sample_mean, whole.final.sample_mean);
  EXPECT_EQ(resumed.final.sample_std, whole.final.sample_std);
  EXPECT_EQ(resumed.discriminator_of_pair, whole.discriminator_of_pair);

  // Stopped by rank 0 at its second record step (6), with a checkpoint there.
  int polls = 0;
  callbacks.should_stop = [&] { return ++polls == 2; };
  const GanResult stopped = train_gans_with_threads(gan, data.train, callbacks);
  EXPECT_EQ(stopped.final.step, 6);
  ASSERT_EQ(saved_step, 6);
  const GanResult continued = train_gans_with_threads(gan, data.train, {}, nullptr, &saved);
  EXPECT_EQ(continued.final.discriminator_loss, whole.final.discriminator_loss);
  EXPECT_EQ(continued.final.sample_std, whole.final.sample_std);
  EXPECT_EQ(continued.discriminator_of_pair, whole.discriminator_of_pair);
}

// State that no run of this config could have saved is refused, naming what is wrong, before
// any pair trains on it.
TEST(GanTrainingTest, AResumeRefusesStateThatDoesNotFitNamingIt) {
  const data::TrainTestSplit data = data::load_mnist(data::default_data_dir());
  GanConfig gan = small_gan(2, 2, 4);
  gan.eval_interval = 4;
  core::Checkpoint saved;
  GanCallbacks callbacks;
  callbacks.on_checkpoint = [&](int64_t, const core::Checkpoint& state) { saved = state; };
  train_gans_with_threads(gan, data.train, callbacks);
  ASSERT_FALSE(saved.tensors.empty());
  const auto expect_refused = [&](const core::Checkpoint& state, const std::string& words) {
    try {
      train_gans_with_threads(gan, data.train, {}, nullptr, &state);
      ADD_FAILURE() << "accepted; expected an error naming " << words;
    } catch (const core::CheckpointError& error) {
      EXPECT_NE(std::string(error.what()).find(words), std::string::npos) << error.what();
    }
  };
  core::Checkpoint twice = saved;
  twice.metadata["ranks"][1]["loop"]["discriminator_of_pair"] = {0, 0};
  expect_refused(twice, "discriminator_of_pair");
  core::Checkpoint wider = saved;
  wider.tensors["rank1/generator.parameters"] = torch::zeros({3});
  expect_refused(wider, "generator.parameters");
  core::Checkpoint no_noise = saved;
  no_noise.tensors["rank0/noise.generator"] = torch::zeros({7}, torch::kUInt8);
  expect_refused(no_noise, "noise.generator");
  core::Checkpoint more_swaps = saved;
  more_swaps.metadata["ranks"][0]["loop"]["swaps"] = 9;
  expect_refused(more_swaps, "swaps");
  gan.pairs = 3;
  expect_refused(saved, "3");
}

}  // namespace
}  // namespace concord::supervised
