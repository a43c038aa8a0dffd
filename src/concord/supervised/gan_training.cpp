#include "concord/supervised/gan_training.h"

#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "concord/comm/thread_group.h"
#include "concord/core/checkpoint_fields.h"
#include "concord/core/optimizer_bytes.h"
#include "concord/core/rng.h"
#include "concord/core/timer.h"
#include "concord/core/torch_thread.h"
#include "concord/data/batch_sampler.h"
#include "concord/nn/flat_parameters.h"
#include "concord/supervised/discriminator_swap.h"
#include "concord/supervised/gan_models.h"
#include "concord/supervised/replica_state.h"

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
    torch::optim::AdamParamState& adam = adam_state();
    return {parameters.values(), adam.exp_avg(), adam.exp_avg_sq()};
  }

  // In a checkpoint: "<name>.parameters", "<name>.adam.exp_avg", "<name>.adam.exp_avg_sq" and
  // metadata[name]["adam_steps"] (Adam's bias correction depends on it). Saved after a step.
  void save(core::Checkpoint& checkpoint, const std::string& name) {
    torch::optim::AdamParamState& adam = adam_state();
    checkpoint.tensors[name + ".parameters"] = parameters.values().detach().clone();
    checkpoint.tensors[name + ".adam.exp_avg"] = adam.exp_avg().clone();
    checkpoint.tensors[name + ".adam.exp_avg_sq"] = adam.exp_avg_sq().clone();
    checkpoint.metadata[name] = {{"adam_steps", adam.step()}};
  }

  // Checks every part before it changes anything.
  void load(const core::Checkpoint& checkpoint, const std::string& name) {
    const torch::Tensor& like = parameters.values();
    const torch::Tensor values = core::checkpoint_tensor(checkpoint, name + ".parameters", like);
    const torch::Tensor exp_avg = core::checkpoint_tensor(checkpoint, name + ".adam.exp_avg", like);
    const torch::Tensor exp_avg_sq = core::checkpoint_tensor(checkpoint, name + ".adam.exp_avg_sq", like);
    const int64_t steps = core::metadata_int(checkpoint, name, "adam_steps");
    if (steps < 1) core::checkpoint_corrupt("metadata '" + name + "' has adam_steps " + std::to_string(steps));
    {
      torch::NoGradGuard no_grad;
      parameters.values().copy_(values);
    }
    auto adam = std::make_unique<torch::optim::AdamParamState>();
    adam->step(steps);
    adam->exp_avg(exp_avg.clone());
    adam->exp_avg_sq(exp_avg_sq.clone());
    optimizer->state()[core::optimizer_state_key(like)] = std::move(adam);
  }

 private:
  torch::optim::AdamParamState& adam_state() {
    return static_cast<torch::optim::AdamParamState&>(*optimizer->state().begin()->second);
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

// A noise generator's complete state, as tensor `name` (uint8, LibTorch's own layout).
void save_generator(core::Checkpoint& checkpoint, const std::string& name, at::Generator& source) {
  std::lock_guard<std::mutex> lock(source.mutex());
  checkpoint.tensors[name] = source.get_state();
}

void load_generator(const core::Checkpoint& checkpoint, const std::string& name, at::Generator& source) {
  const torch::Tensor state = core::checkpoint_tensor(checkpoint, name);
  std::lock_guard<std::mutex> lock(source.mutex());
  try {
    source.set_state(state);
  } catch (const c10::Error&) {
    core::checkpoint_corrupt("tensor '" + name + "' is not a noise generator's state");
  }
}

nlohmann::json record_json(const GanRecord& record) {
  return {{"step", record.step},
          {"discriminator_loss", record.discriminator_loss},
          {"generator_loss", record.generator_loss},
          {"sample_mean", record.sample_mean},
          {"sample_std", record.sample_std},
          {"swaps", record.swaps},
          {"seconds", record.seconds}};
}

GanRecord record_from(const core::Checkpoint& state) {
  GanRecord record;
  record.step = core::metadata_int(state, "record", "step");
  record.discriminator_loss = core::metadata_double(state, "record", "discriminator_loss");
  record.generator_loss = core::metadata_double(state, "record", "generator_loss");
  record.sample_mean = core::metadata_double(state, "record", "sample_mean");
  record.sample_std = core::metadata_double(state, "record", "sample_std");
  record.swaps = core::metadata_int(state, "record", "swaps");
  record.seconds = core::metadata_double(state, "record", "seconds");
  return record;
}

// Which discriminator each pair holds: a permutation of [0, pairs).
std::vector<int> holders_from(const core::Checkpoint& state, int pairs) {
  std::vector<int> holders;
  const auto loop = state.metadata.find("loop");
  if (loop != state.metadata.end() && loop->is_object()) {
    const auto held = loop->find("discriminator_of_pair");
    if (held != loop->end() && held->is_array()) {
      for (const auto& entry : *held) {
        const bool fits = entry.is_number_integer() && entry.get<int64_t>() >= 0 && entry.get<int64_t>() < pairs;
        holders.push_back(fits ? entry.get<int>() : -1);
      }
    }
  }
  if (!is_permutation(holders, pairs)) {
    core::checkpoint_corrupt("metadata 'loop' has no permutation of the " + std::to_string(pairs) +
                             " pairs as discriminator_of_pair");
  }
  return holders;
}

// Rank 0's decision at a record step, broadcast to every pair.
constexpr int64_t kStop = 1;
constexpr int64_t kCheckpoint = 2;

}  // namespace

GanResult train_gan_pair(const GanConfig& gan, const data::LabelledData& train, comm::Communicator& communicator,
                         const GanCallbacks& callbacks, const DigitJudge* judge, const core::Checkpoint* resume_from) {
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

  int64_t swaps = 0, last_checkpoint = 0, first_step = 1;
  double seconds_before = 0.0;  // of the runs this one resumed
  // GAP: hand the discriminators on, the same permutation on every rank.
  const auto swap = [&] {
    ++swaps;
    const std::vector<int> permutation = swap_permutation(pairs, gan.seed, static_cast<int64_t>(kSwapStream) + swaps);
    exchange_discriminator(communicator, permutation, discriminator.state());
    std::vector<int> held(result.discriminator_of_pair.size());
    for (size_t pair = 0; pair < held.size(); ++pair) {
      held[pair] = result.discriminator_of_pair[static_cast<size_t>(permutation[pair])];
    }
    result.discriminator_of_pair = std::move(held);
  };
  const auto swap_due = [&](int64_t step) { return gan.swapping() && step % gan.swap_every == 0; };

  if (resume_from != nullptr) {
    const core::Checkpoint mine = replica_state(*resume_from, rank, pairs);
    generator.load(mine, "generator");
    discriminator.load(mine, "discriminator");
    batches.load(mine, "sampler");
    load_generator(mine, "noise.generator", noise_draws);
    const int64_t step = core::metadata_int(mine, "loop", "step");
    swaps = core::metadata_int(mine, "loop", "swaps");
    last_checkpoint = step;  // the checkpoint resumed from
    result.discriminator_of_pair = holders_from(mine, pairs);
    const GanRecord record = record_from(mine);
    if (step < 1 || record.step != step || swaps < 0 || swaps > step / gan.swap_every) {
      core::checkpoint_corrupt("metadata 'loop' has step " + std::to_string(step) + " and " + std::to_string(swaps) +
                               " swaps, its record step " + std::to_string(record.step));
    }
    result.records.push_back(record);
    seconds_before = record.seconds;
    first_step = step + 1;
    // A run that ended at a swap step skipped that swap; one that goes on makes it.
    if (swap_due(step) && swaps < step / gan.swap_every && step < gan.steps) swap();
  }

  core::Stopwatch clock;
  double discriminator_loss_sum = 0.0, generator_loss_sum = 0.0;
  int64_t losses = 0;
  for (int64_t step = first_step; step <= gan.steps; ++step) {
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

    if (swap_due(step) && step < gan.steps) swap();

    int64_t decided = 0;
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
      record.seconds = seconds_before + clock.elapsed_seconds();
      result.records.push_back(record);
      discriminator_loss_sum = generator_loss_sum = 0.0;
      losses = 0;
      torch::Tensor decision = torch::zeros({1}, torch::kInt64);
      if (leader) {
        if (callbacks.on_record) callbacks.on_record(record);
        const bool finished = step == gan.steps || (callbacks.should_stop && callbacks.should_stop());
        const bool due = gan.checkpoint_interval > 0 && step - last_checkpoint >= gan.checkpoint_interval;
        decision.fill_((finished ? kStop : 0) | (callbacks.on_checkpoint && (finished || due) ? kCheckpoint : 0));
      }
      communicator.broadcast(decision, 0);
      decided = decision.item<int64_t>();
    }
    const bool stopping = (decided & kStop) != 0;
    const bool samples_due =
        step == gan.steps || stopping || (gan.sample_interval > 0 && step % gan.sample_interval == 0);
    if (samples_due) {
      const std::vector<torch::Tensor> every_pair = communicator.allgather(draw_fixed_samples().contiguous());
      if (leader && callbacks.on_samples) callbacks.on_samples(step, torch::cat(every_pair));
    }
    if ((decided & kCheckpoint) != 0) {
      last_checkpoint = step;
      core::Checkpoint mine;
      generator.save(mine, "generator");
      discriminator.save(mine, "discriminator");
      batches.save(mine, "sampler");
      save_generator(mine, "noise.generator", noise_draws);
      mine.metadata["loop"] = {
          {"step", step}, {"swaps", swaps}, {"discriminator_of_pair", result.discriminator_of_pair}};
      mine.metadata["record"] = record_json(result.records.back());
      const core::Checkpoint state = gather_replica_states(communicator, mine);
      if (leader) callbacks.on_checkpoint(step, state);
    }
    if (leader && callbacks.on_step) callbacks.on_step(step);
    if (stopping) break;
  }
  if (result.records.empty()) throw std::logic_error("train_gan_pair: no record");
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
                                  const DigitJudge* judge, const core::Checkpoint* resume_from) {
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
                                        rank == 0 ? callbacks : GanCallbacks{}, judge, resume_from);
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
