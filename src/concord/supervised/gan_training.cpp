#include "concord/supervised/gan_training.h"

#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "concord/comm/thread_group.h"
#include "concord/core/rng.h"
#include "concord/core/timer.h"
#include "concord/core/torch_thread.h"
#include "concord/data/batch_sampler.h"
#include "concord/nn/flat_parameters.h"
#include "concord/supervised/discriminator_swap.h"
#include "concord/supervised/gan_models.h"

namespace concord::supervised {
namespace {

// Streams of core::derive_seed(gan.seed, stream + rank), one per use, so no two draw alike.
constexpr uint64_t kWeightsStream = 1000;
constexpr uint64_t kBatchStream = 2000;
constexpr uint64_t kNoiseStream = 3000;
constexpr uint64_t kFixedNoiseStream = 4000;
constexpr uint64_t kScoreNoiseStream = 5000;
// Swap k draws its permutation from derive_seed(gan.seed, kSwapStream + k).
constexpr uint64_t kSwapStream = 1'000'000;

// One generator or discriminator: the network, its flat parameters and its Adam.
struct Network {
  torch::nn::Sequential model;
  nn::FlatParameters parameters;
  std::unique_ptr<torch::optim::Adam> optimizer;

  Network(torch::nn::Sequential built, const GanConfig& gan) : model(std::move(built)), parameters(*model) {
    optimizer =
        std::make_unique<torch::optim::Adam>(std::vector<torch::Tensor>{parameters.values()},
                                             torch::optim::AdamOptions(gan.learning_rate).betas({gan.beta1, 0.999}));
  }

  void step(const torch::Tensor& loss) {
    parameters.zero_grad();
    loss.backward();
    optimizer->step();
  }

  // What moves with a discriminator in a swap: its parameters and Adam's two moments (which exist
  // after the first step; swaps come after at least one).
  std::vector<torch::Tensor> state() {
    auto& adam = static_cast<torch::optim::AdamParamState&>(*optimizer->state().begin()->second);
    return {parameters.values(), adam.exp_avg(), adam.exp_avg_sq()};
  }
};

// LibTorch initialises layers from one global generator; pairs built on several threads at once
// would interleave their draws.
std::pair<torch::nn::Sequential, torch::nn::Sequential> build_seeded_pair(const GanConfig& gan, int rank) {
  static std::mutex construction;
  std::lock_guard<std::mutex> lock(construction);
  torch::manual_seed(core::derive_seed(gan.seed, kWeightsStream + static_cast<uint64_t>(rank)));
  return {make_generator(gan.model, gan.latent_size, gan.hidden_units),
          make_discriminator(gan.model, gan.hidden_units)};
}

at::Generator noise_source(uint64_t seed) { return at::make_generator<at::CPUGeneratorImpl>(seed); }

torch::Tensor noise(at::Generator& source, int64_t rows, const GanConfig& gan) {
  return torch::randn({rows, gan.latent_size}, source, torch::kFloat);
}

torch::Tensor bce(const torch::Tensor& logits, double label) {
  return torch::nn::functional::binary_cross_entropy_with_logits(logits, torch::full_like(logits, label));
}

}  // namespace

GanResult train_gan_pair(const GanConfig& gan, const data::LabelledData& train, comm::Communicator& communicator,
                         const GanCallbacks& callbacks, const DigitJudge* judge) {
  validate(gan);
  const int rank = communicator.rank();
  const int pairs = communicator.world_size();
  if (gan.swap && pairs < 2) {
    throw std::invalid_argument("gan.swap = true needs at least 2 pairs, this run has " + std::to_string(pairs));
  }
  const bool leader = rank == 0;
  const uint64_t stream = static_cast<uint64_t>(rank);

  auto [generator_model, discriminator_model] = build_seeded_pair(gan, rank);
  Network generator(std::move(generator_model), gan);
  Network discriminator(std::move(discriminator_model), gan);
  data::ShuffledBatches batches(train.size(), gan.batch_size, core::derive_seed(gan.seed, kBatchStream + stream));
  at::Generator noise_draws = noise_source(core::derive_seed(gan.seed, kNoiseStream + stream));
  at::Generator fixed_draws = noise_source(core::derive_seed(gan.seed, kFixedNoiseStream + stream));
  const torch::Tensor fixed_noise = noise(fixed_draws, gan.grid_samples, gan);
  const auto draw_fixed_samples = [&] {
    torch::NoGradGuard no_grad;
    return generator.model->forward(fixed_noise);
  };

  GanResult result;
  result.data_mean = train.images.mean().item<double>();
  result.data_std = train.images.std().item<double>();
  for (int pair = 0; pair < pairs; ++pair) result.discriminator_of_pair.push_back(pair);

  core::Stopwatch clock;
  double discriminator_loss_sum = 0.0, generator_loss_sum = 0.0;
  int64_t losses = 0, swaps = 0;
  for (int64_t step = 1; step <= gan.steps; ++step) {
    const torch::Tensor real = train.images.index_select(0, batches.next());
    const torch::Tensor generated = generator.model->forward(noise(noise_draws, real.size(0), gan));

    // Discriminator: real digits are 1, generated ones 0.
    const torch::Tensor discriminator_loss =
        bce(discriminator.model->forward(real), 1.0) + bce(discriminator.model->forward(generated.detach()), 0.0);
    discriminator.step(discriminator_loss);
    // Generator: make the (just updated) discriminator call its digits real.
    const torch::Tensor generator_loss = bce(discriminator.model->forward(generated), 1.0);
    generator.step(generator_loss);
    discriminator_loss_sum += discriminator_loss.item<double>();
    generator_loss_sum += generator_loss.item<double>();
    ++losses;

    // GAP: hand the discriminators on, the same permutation on every rank.
    if (gan.swapping() && step % gan.swap_every == 0 && step < gan.steps) {
      ++swaps;
      const std::vector<int> permutation = swap_permutation(pairs, gan.seed, static_cast<int64_t>(kSwapStream) + swaps);
      exchange_discriminator(communicator, permutation, discriminator.state());
      std::vector<int> held(result.discriminator_of_pair.size());
      for (size_t pair = 0; pair < held.size(); ++pair) {
        held[pair] = result.discriminator_of_pair[static_cast<size_t>(permutation[pair])];
      }
      result.discriminator_of_pair = std::move(held);
    }

    if (step % gan.eval_interval == 0 || step == gan.steps) {
      const torch::Tensor samples = draw_fixed_samples();
      const torch::Tensor summary = torch::tensor(
          {discriminator_loss_sum / static_cast<double>(losses), generator_loss_sum / static_cast<double>(losses),
           samples.mean().item<double>(), samples.std().item<double>()},
          torch::kDouble);
      communicator.allreduce_mean(summary);
      GanRecord record;
      record.step = step;
      record.discriminator_loss = summary[0].item<double>();
      record.generator_loss = summary[1].item<double>();
      record.sample_mean = summary[2].item<double>();
      record.sample_std = summary[3].item<double>();
      record.swaps = swaps;
      record.seconds = clock.elapsed_seconds();
      result.records.push_back(record);
      discriminator_loss_sum = generator_loss_sum = 0.0;
      losses = 0;
      if (leader && callbacks.on_record) callbacks.on_record(record);
    }
    const bool samples_due = step == gan.steps || (gan.sample_interval > 0 && step % gan.sample_interval == 0);
    if (samples_due) {
      const std::vector<torch::Tensor> every_pair = communicator.allgather(draw_fixed_samples().contiguous());
      if (leader && callbacks.on_samples) callbacks.on_samples(step, torch::cat(every_pair));
    }
    if (leader && callbacks.on_step) callbacks.on_step(step);
  }
  result.final = result.records.back();

  if (judge != nullptr && gan.score_samples > 0) {
    at::Generator score_draws = noise_source(core::derive_seed(gan.seed, kScoreNoiseStream + stream));
    torch::Tensor samples;
    {
      torch::NoGradGuard no_grad;
      samples = generator.model->forward(noise(score_draws, gan.score_samples, gan));
    }
    const SampleQuality mine = judge->score(samples);
    const torch::Tensor quality =
        torch::tensor({mine.inception_score, static_cast<double>(mine.covered_classes)}, torch::kDouble);
    for (const torch::Tensor& pair : communicator.allgather(quality)) {
      result.quality.push_back({pair[0].item<double>(), static_cast<int64_t>(pair[1].item<double>())});
    }
  }
  return result;
}

GanResult train_gans_with_threads(const GanConfig& gan, const data::LabelledData& train, const GanCallbacks& callbacks,
                                  const DigitJudge* judge) {
  validate(gan);
  // Without swaps the pairs meet only at records; on an oversubscribed machine one thread can run
  // far ahead of another, so the wait bound is generous (threads cannot vanish silently anyway).
  comm::ThreadGroup group(gan.pairs, std::chrono::minutes(5));
  std::vector<std::unique_ptr<comm::Communicator>> communicators;
  for (int rank = 0; rank < gan.pairs; ++rank) communicators.push_back(group.communicator(rank));

  GanResult result;
  std::vector<std::exception_ptr> errors(static_cast<size_t>(gan.pairs));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < gan.pairs; ++rank) {
    threads.push_back(core::torch_thread([&, rank] {
      try {
        GanResult mine = train_gan_pair(gan, train, *communicators[static_cast<size_t>(rank)],
                                        rank == 0 ? callbacks : GanCallbacks{}, judge);
        if (rank == 0) result = std::move(mine);
      } catch (...) {
        errors[static_cast<size_t>(rank)] = std::current_exception();
      }
    }));
  }
  for (auto& thread : threads) thread.join();
  std::exception_ptr first_comm_error;
  for (const auto& error : errors) {
    if (!error) continue;
    try {
      std::rethrow_exception(error);
    } catch (const comm::CommError&) {
      if (!first_comm_error) first_comm_error = error;
    } catch (...) {
      throw;
    }
  }
  if (first_comm_error) std::rethrow_exception(first_comm_error);
  return result;
}

}  // namespace concord::supervised
