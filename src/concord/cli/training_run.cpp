#include "concord/cli/training_run.h"

#include <cmath>
#include <stdexcept>

#include <torch/torch.h>

#include "concord/algos/algorithm_registry.h"
#include "concord/cli/config_error_keys.h"
#include "concord/cli/run_config.h"
#include "concord/cli/run_context.h"
#include "concord/comm/launch_environment.h"
#include "concord/comm/thread_group.h"
#include "concord/core/crc32c.h"
#include "concord/core/device.h"
#include "concord/core/rng.h"
#include "concord/envs/registry.h"
#include "concord/explore/bonus_registry.h"
#include "concord/launch/launch_control.h"
#include "concord/policies/policy_registry.h"

namespace concord::cli {
namespace {

// derive_seed(run.seed, kRankSeedStream + rank) seeds rank > 0.
constexpr uint64_t kRankSeedStream = 0x52414e4b;  // "RANK"
// derive_seed(seed, kResumeSeedStream ^ step) seeds a run resumed at `step`.
constexpr uint64_t kResumeSeedStream = 0x524553554d45ULL << 16;  // "RESUME"

int64_t positive_steps(const core::Config& config, const std::string& key) {
  const int64_t steps = config.get_int(key);
  if (steps < 1) throw core::ConfigError(key + " must be at least 1, got " + std::to_string(steps));
  return steps;
}

double checked_checkpoint_interval_seconds(const core::Config& config) {
  const double seconds = config.get_double("train.checkpoint_interval_seconds");
  if (!(seconds >= 0.0) || !std::isfinite(seconds)) {
    throw core::ConfigError("train.checkpoint_interval_seconds must be >= 0 (0: off), got " + std::to_string(seconds));
  }
  return seconds;
}

int64_t checked_log_interval_steps(const core::Config& config) {
  const int64_t steps = config.get_int("log.interval_steps");
  if (steps < 0)
    throw core::ConfigError("log.interval_steps must be >= 0 (0: every update), got " + std::to_string(steps));
  return steps;
}

void check_keep_checkpoints(const core::Config& config) {
  const int64_t keep = config.get_int("train.keep_checkpoints");
  if (keep < 1 || keep > 1'000'000) {
    throw core::ConfigError("train.keep_checkpoints must be between 1 and 1000000, got " + std::to_string(keep));
  }
}

// The ranks of a run whose policy spans processes: those a launcher started, or a world of one
// (none for a policy that runs on threads unless launched).
std::unique_ptr<comm::Communicator> join_ranks(const core::Config& config, const std::string& policy) {
  const comm::LaunchEnvironment launch = comm::LaunchEnvironment::from_environment();
  if (!policies::policy_may_span_processes(policy)) {
    if (launch.world_size > 1) {
      throw std::invalid_argument("policy '" + policy + "' runs in one process, but this is rank " +
                                  std::to_string(launch.rank) + " of WORLD_SIZE=" + std::to_string(launch.world_size) +
                                  " (" + launch.launcher + "); use a multi-process policy such as multi_learner");
    }
    return nullptr;
  }
  if (!launch.is_distributed()) {
    return policies::policy_spans_processes(policy) ? comm::ThreadGroup(1).communicator(0) : nullptr;
  }
  comm::ConnectOptions options = connect_options(config);
  const double timeout_seconds = config.get_double("comm.timeout_seconds");
  if (!(timeout_seconds > 0.0)) throw core::ConfigError("comm.timeout_seconds must be > 0");
  options.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000.0));
  char fingerprint[16];
  std::snprintf(fingerprint, sizeof(fingerprint), "%08x", core::crc32c(config.to_toml()));
  options.config_fingerprint = fingerprint;
  options.on_stalled_peers = [rank = launch.rank](const std::vector<int>& stalled, int64_t collective) {
    launch::declare_stalled_ranks(rank, stalled, collective);
  };
  return comm::connect(launch, options);
}

// What the update keeps per sample of a minibatch: about two floats per layer output (before and
// after its activation; backward's gradients reuse what it frees), checked against a run's peak in
// bench/RESULTS.md, "Memory"; a convolution's outputs are counted over the observation's grid,
// the size of MinAtar's first feature map.
double activation_bytes_per_sample(torch::nn::Module& network, const envs::Space& observation_space) {
  const std::vector<int64_t>& shape = observation_space.shape();
  const double grid = shape.size() == 3 ? static_cast<double>(shape[0] * shape[1]) : 1.0;
  double outputs = 0.0;
  for (const torch::Tensor& parameter : network.parameters()) {
    if (parameter.dim() == 2) outputs += static_cast<double>(parameter.size(0));
    if (parameter.dim() == 4) outputs += static_cast<double>(parameter.size(0)) * grid;
  }
  return 2.0 * 4.0 * outputs;
}

}  // namespace

TrainingRun::TrainingRun(const core::Config& config, const core::Checkpoint* resume_from)
    : total_steps_(positive_steps(config, "train.total_timesteps")),
      checkpoint_interval_(positive_steps(config, "train.checkpoint_interval_steps")),
      checkpoint_interval_seconds_(checked_checkpoint_interval_seconds(config)),
      log_interval_steps_(checked_log_interval_steps(config)),
      device_(core::resolve_device(config.get_string("run.device"),
                                   comm::LaunchEnvironment::from_environment().local_rank)),
      algo_(config.get_string("train.algo")),
      policy_name_(config.get_string("train.policy")),
      env_config_(vector_env_config(config)),
      env_spec_(envs::make_env(env_config_.env_id, env_config_.options)->spec()) {
  check_keep_checkpoints(config);
  communicator_ = join_ranks(config, policy_name_);
  // Rank 0 keeps the run's seed, so one rank reproduces a single-process run; the others draw
  // their envs and samples from streams of their own.
  uint64_t seed = static_cast<uint64_t>(config.get_int("run.seed"));
  if (rank() > 0) seed = core::derive_seed(seed, kRankSeedStream + static_cast<uint64_t>(rank()));
  // A resumed run's envs and samples continue on streams of their own, derived from the
  // checkpoint's step: with the run's seed they would replay the episodes of its first steps.
  // (The envs' generators and episodes in progress are not in checkpoints:
  // docs/checkpoints-and-logs.md, "What a resume restores".)
  if (resume_from != nullptr) {
    const auto step = resume_from->metadata.find("global_step");
    if (step != resume_from->metadata.end() && step->is_number_integer()) {
      seed = core::derive_seed(seed, kResumeSeedStream ^ static_cast<uint64_t>(step->get<int64_t>()));
    }
  }
  env_config_.seed = seed;
  torch::manual_seed(seed);
  set_torch_threads(config);
  try {
    learner_ = algos::make_learner(algo_, config, env_spec_.observation_space, env_spec_.action_space, device_);
  } catch (const std::invalid_argument& error) {
    // The algorithm's validate() names its fields; the user wrote algo.<algo>.<field> or algo.<field>.
    throw std::invalid_argument(with_config_keys(error.what(), config.schema(), {"algo." + algo_ + ".", "algo."}));
  }
  // Before the envs and the policy's buffers exist: a size that cannot fit is refused here.
  const std::string rollout_key = "algo." + algo_ + ".num_steps";
  const bool rollouts = config.schema().contains(rollout_key);
  check_memory_estimate(config, env_spec_, rollouts ? config.get_int(rollout_key) : 0, rollouts ? rollout_key : "",
                        activation_bytes_per_sample(learner_->network(), env_spec_.observation_space));
  bonus_ = explore::make_bonus(config, env_spec_.observation_space);
  if (resume_from != nullptr) {
    learner_->load(*resume_from);
    if (bonus_) bonus_->load(*resume_from);
  }
  policy_ = policies::make_policy(policy_name_, policies::PolicyContext{config, env_config_, *learner_, device_,
                                                                        communicator_.get(), bonus_.get()});
  // The policy drops a dead actor and goes on: `concord launch` must not stop the run for it.
  if (rank() == 0 && policy_->survives_failed_ranks()) launch::declare_other_ranks_may_fail();
}

void TrainingRun::train(policies::TrainingState& state, const policies::TrainingCallbacks& callbacks) {
  policy_->train(state, total_steps_, checkpoint_interval_, callbacks);
}

}  // namespace concord::cli
