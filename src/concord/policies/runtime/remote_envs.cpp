#include "concord/policies/runtime/remote_envs.h"

#include <cstring>
#include <memory>
#include <stdexcept>
#include <utility>

#include <torch/torch.h>

#include "concord/policies/runtime/message_tags.h"

namespace concord::policies::runtime {
namespace {

using Tags = tags::Envs;

enum Op : int64_t { kStep = 0, kReset = 1, kStop = 2 };

// Bytes of one env's row of a packed Batch: observation, final observation, reward, episode
// return, episode length (4 bytes each), terminated, truncated, has_final.
int64_t row_bytes(int64_t obs_bytes) { return 2 * obs_bytes + 12 + 3; }

// A command: the op, then the actions of `envs` envs (int64 for a Discrete action space, float32
// otherwise; the op is exact in either).
torch::Tensor make_command(bool discrete, int64_t envs, int64_t act_dim) {
  return torch::zeros({1 + envs * (discrete ? 1 : act_dim)}, discrete ? torch::kInt64 : torch::kFloat32);
}

int64_t op_of(const torch::Tensor& command) {
  return command.scalar_type() == torch::kInt64 ? command.data_ptr<int64_t>()[0]
                                                : static_cast<int64_t>(command.data_ptr<float>()[0]);
}

void set_op(torch::Tensor& command, int64_t op) {
  if (command.scalar_type() == torch::kInt64) {
    command.data_ptr<int64_t>()[0] = op;
  } else {
    command.data_ptr<float>()[0] = static_cast<float>(op);
  }
}

// Copies `bytes` bytes from `from` to `*to`, advancing *to (take: the other way).
void put(uint8_t** to, const void* from, int64_t bytes) {
  std::memcpy(*to, from, static_cast<size_t>(bytes));
  *to += bytes;
}
void take(const uint8_t** from, void* to, int64_t bytes) {
  std::memcpy(to, *from, static_cast<size_t>(bytes));
  *from += bytes;
}

}  // namespace

RemoteEnvs::RemoteEnvs(comm::Communicator& communicator, const envs::EnvSpec& spec, int64_t envs_per_rank,
                       std::string policy)
    : communicator_(communicator),
      spec_(spec),
      policy_(std::move(policy)),
      actors_(communicator.world_size() - 1),
      envs_per_rank_(envs_per_rank),
      num_envs_(envs_per_rank * (communicator.world_size() - 1)),
      obs_dim_(spec.observation_space.flat_size()),
      obs_bytes_(spec.observation_space.byte_size()),
      act_dim_(spec.action_space.flat_size()),
      discrete_(spec.action_space.is_discrete()) {
  if (actors_ < 1 || envs_per_rank_ < 1) {
    throw std::logic_error("RemoteEnvs: needs at least one other rank and one env on each");
  }
  for (int a = 0; a < actors_; ++a) {
    commands_.push_back(make_command(discrete_, envs_per_rank_, act_dim_));
    results_.push_back(torch::empty({envs_per_rank_ * row_bytes(obs_bytes_)}, torch::kUInt8));
  }
  const auto n = static_cast<size_t>(num_envs_);
  observations_.resize(n * static_cast<size_t>(obs_bytes_));
  final_observations_.resize(n * static_cast<size_t>(obs_bytes_));
  terminated_.resize(n);
  truncated_.resize(n);
  has_final_.resize(n);
  rewards_.resize(n);
  episode_returns_.resize(n);
  episode_lengths_.resize(n);
  for (int64_t i = 0; i < num_envs_; ++i) env_ids_.push_back(static_cast<int32_t>(i));
  broken_.assign(static_cast<size_t>(actors_), false);
}

RemoteEnvs::~RemoteEnvs() {
  try {
    close();
  } catch (...) {  // NOLINT(bugprone-empty-catch): the run's own error, if any, is what matters
  }
}

envs::Batch RemoteEnvs::reset(std::optional<uint64_t> seed) {
  if (seed.has_value()) throw std::logic_error("RemoteEnvs: the actor ranks seed their envs; reset() takes no seed");
  return exchange(kReset, nullptr);
}

envs::Batch RemoteEnvs::step(const int64_t* actions) {
  if (!discrete_) throw std::invalid_argument("RemoteEnvs: " + spec_.id + " takes continuous actions");
  return exchange(kStep, actions);
}

envs::Batch RemoteEnvs::step(const float* actions) {
  if (discrete_) throw std::invalid_argument("RemoteEnvs: " + spec_.id + " takes discrete actions");
  return exchange(kStep, actions);
}

void RemoteEnvs::close() {
  if (closed_) return;
  closed_ = true;
  std::vector<std::unique_ptr<comm::Request>> sent;
  for (int a = 0; a < actors_; ++a) {
    if (broken_[static_cast<size_t>(a)]) continue;
    torch::Tensor& command = commands_[static_cast<size_t>(a)];
    command.zero_();
    set_op(command, kStop);
    sent.push_back(communicator_.send_async(command, a + 1, Tags::kCommand));
  }
  for (auto& request : sent) request->wait();
}

envs::Batch RemoteEnvs::exchange(int64_t op, const void* actions) {
  if (closed_) throw std::logic_error("RemoteEnvs: used after close()");
  const int64_t action_bytes = envs_per_rank_ * (discrete_ ? 8 : 4 * act_dim_);
  std::vector<std::unique_ptr<comm::Request>> sent, received;
  for (int a = 0; a < actors_; ++a) {
    torch::Tensor& command = commands_[static_cast<size_t>(a)];
    auto* bytes = static_cast<uint8_t*>(command.data_ptr());
    set_op(command, op);
    if (actions != nullptr) {
      std::memcpy(bytes + command.element_size(), static_cast<const uint8_t*>(actions) + a * action_bytes,
                  static_cast<size_t>(action_bytes));
    }
    sent.push_back(communicator_.send_async(command, a + 1, Tags::kCommand));
    received.push_back(communicator_.recv_async(results_[static_cast<size_t>(a)], a + 1, Tags::kBatch));
  }
  // Every rank's messages are settled before an error leaves, so that the healthy ranks can be
  // told to stop.
  std::string failure;
  for (int a = 0; a < actors_; ++a) {
    try {
      sent[static_cast<size_t>(a)]->wait();
      received[static_cast<size_t>(a)]->wait();
    } catch (const comm::CommError& error) {
      broken_[static_cast<size_t>(a)] = true;
      if (failure.empty()) {
        failure =
            "policy '" + policy_ + "': actor rank " + std::to_string(a + 1) + " did not step its envs: " + error.what();
      }
    }
  }
  if (!failure.empty()) throw std::runtime_error(failure);
  // The shares' rows, in rank order.
  const int64_t k = envs_per_rank_;
  for (int a = 0; a < actors_; ++a) {
    const auto* from = static_cast<const uint8_t*>(results_[static_cast<size_t>(a)].data_ptr());
    const int64_t row = a * k;
    take(&from, observations_.data() + row * obs_bytes_, k * obs_bytes_);
    take(&from, final_observations_.data() + row * obs_bytes_, k * obs_bytes_);
    take(&from, rewards_.data() + row, k * 4);
    take(&from, episode_returns_.data() + row, k * 4);
    take(&from, episode_lengths_.data() + row, k * 4);
    take(&from, terminated_.data() + row, k);
    take(&from, truncated_.data() + row, k);
    take(&from, has_final_.data() + row, k);
  }
  envs::Batch batch;
  batch.size = num_envs_;
  batch.obs_dim = obs_dim_;
  batch.obs_dtype = spec_.observation_space.dtype();
  batch.env_ids = env_ids_.data();
  batch.observations = observations_.data();
  batch.rewards = rewards_.data();
  batch.terminated = terminated_.data();
  batch.truncated = truncated_.data();
  batch.has_final = has_final_.data();
  batch.final_observations = final_observations_.data();
  batch.episode_returns = episode_returns_.data();
  batch.episode_lengths = episode_lengths_.data();
  return batch;
}

void serve_envs(envs::VectorEnv& envs, comm::Communicator& communicator, const std::string& policy) {
  const bool discrete = envs.spec().action_space.is_discrete();
  const int64_t k = envs.num_envs();
  const int64_t obs_bytes = envs.obs_bytes();
  torch::Tensor command = make_command(discrete, k, envs.act_dim());
  torch::Tensor result = torch::zeros({k * row_bytes(obs_bytes)}, torch::kUInt8);
  const std::string rank = "rank " + std::to_string(communicator.rank());
  while (true) {
    try {
      communicator.recv(command, 0, Tags::kCommand);
    } catch (const comm::CommError& error) {
      throw std::runtime_error("policy '" + policy + "': " + rank +
                               " took no command from the learner (rank 0): " + error.what());
    }
    const int64_t op = op_of(command);
    envs::Batch batch;
    if (op == kStop) return;
    if (op == kReset) {
      batch = envs.reset();
    } else if (op == kStep) {
      batch = discrete ? envs.step(command.data_ptr<int64_t>() + 1) : envs.step(command.data_ptr<float>() + 1);
    } else {
      throw std::runtime_error("policy '" + policy + "': " + rank + " got an unknown command " + std::to_string(op) +
                               " from rank 0");
    }
    auto* to = static_cast<uint8_t*>(result.data_ptr());
    put(&to, batch.observations, k * obs_bytes);
    // Rows without a final observation send whatever the engine's buffer holds; only has_final's
    // rows are read.
    put(&to, batch.final_observations, k * obs_bytes);
    put(&to, batch.rewards, k * 4);
    put(&to, batch.episode_returns, k * 4);
    put(&to, batch.episode_lengths, k * 4);
    put(&to, batch.terminated, k);
    put(&to, batch.truncated, k);
    put(&to, batch.has_final, k);
    try {
      communicator.send(result, 0, Tags::kBatch);
    } catch (const comm::CommError& error) {
      throw std::runtime_error("policy '" + policy + "': " + rank +
                               " could not send its envs' results to rank 0: " + error.what());
    }
  }
}

}  // namespace concord::policies::runtime
