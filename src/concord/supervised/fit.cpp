#include "concord/supervised/fit.h"

#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include "concord/comm/thread_group.h"
#include "concord/core/torch_thread.h"
#include "concord/nn/flat_parameters.h"
#include "concord/supervised/classifier.h"
#include "concord/supervised/federated_training.h"
#include "concord/supervised/replica_state.h"
#include "concord/supervised/replica_training.h"
#include "concord/sync/sync_registry.h"

namespace concord::supervised {
namespace {

// LibTorch initialises layers from one global generator; replicas built on several threads at
// once would interleave their draws.
torch::nn::Sequential build_seeded_classifier(const FitConfig& fit) {
  static std::mutex construction;
  std::lock_guard<std::mutex> lock(construction);
  torch::manual_seed(fit.seed);
  return make_classifier(fit.model);
}

}  // namespace

void check_strategy(const FitConfig& fit, const core::Config& config) {
  if (fit.federated()) return;
  comm::ThreadGroup group(fit.workers, fit.timeout());
  sync::make_sync_strategy(fit.strategy, config, *group.communicator(0));
}

FitResult fit_replica(const FitConfig& fit, const core::Config& config, const data::TrainTestSplit& data,
                      comm::Communicator& communicator, const FitCallbacks& callbacks,
                      const core::Checkpoint* resume_from) {
  std::optional<core::Checkpoint> mine;
  if (resume_from != nullptr) mine = replica_state(*resume_from, communicator.rank(), communicator.world_size());
  const core::Checkpoint* state = mine ? &*mine : nullptr;
  torch::nn::Sequential model = build_seeded_classifier(fit);
  nn::FlatParameters parameters(*model);
  if (fit.federated()) return train_federated(fit, model, parameters, data, communicator, callbacks, state);
  auto strategy = sync::make_sync_strategy(fit.strategy, config, communicator);
  return train_replica(fit, model, parameters, *strategy, data, communicator, callbacks, state);
}

FitResult fit_with_threads(const FitConfig& fit, const core::Config& config, const data::TrainTestSplit& data,
                           const FitCallbacks& callbacks, const core::Checkpoint* resume_from) {
  comm::ThreadGroup group(fit.workers, fit.timeout());
  std::vector<std::unique_ptr<comm::Communicator>> communicators;
  for (int rank = 0; rank < fit.workers; ++rank) communicators.push_back(group.communicator(rank));
  check_strategy(fit, config);

  FitResult result;
  std::vector<std::exception_ptr> errors(static_cast<size_t>(fit.workers));
  std::vector<std::thread> workers;
  for (int rank = 0; rank < fit.workers; ++rank) {
    // Each worker draws from its own generator, as a process rank would.
    workers.push_back(core::torch_thread(core::thread_seed(fit.seed, static_cast<uint64_t>(rank)), [&, rank] {
      try {
        FitResult mine = fit_replica(fit, config, data, *communicators[static_cast<size_t>(rank)],
                                     rank == 0 ? callbacks : FitCallbacks{}, resume_from);
        if (rank == 0) result = std::move(mine);
      } catch (...) {
        errors[static_cast<size_t>(rank)] = std::current_exception();
      }
    }));
  }
  for (auto& worker : workers) worker.join();
  std::exception_ptr first_timeout;
  for (const auto& error : errors) {
    if (!error) continue;
    try {
      std::rethrow_exception(error);
    } catch (const comm::CommError&) {
      if (!first_timeout) first_timeout = error;
    } catch (...) {
      throw;
    }
  }
  if (first_timeout) std::rethrow_exception(first_timeout);
  return result;
}

}  // namespace concord::supervised
