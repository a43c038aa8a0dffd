#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "concord/comm/communicator.h"
#include "concord/envs/batched_envs.h"
#include "concord/envs/vector_env.h"

namespace concord::policies::runtime {

// The envs of other ranks, stepped from this one (SEED RL's actors, which only step envs): rank 0
// holds a RemoteEnvs over every other rank's share of the envs, and each of those ranks serves
// its share with serve_envs(). A call is one message to each actor rank (the command and its
// actions) and one back (its Batch, packed), all in flight at once; the Batch holds the shares'
// rows in rank order, as one VectorEnv of all the envs would.
//
//   rank 0 (RemoteEnvs):                          rank r > 0 (serve_envs):
//     reset()/step(a): to each r: command, a_r       loop: take a command
//                      from each r: its Batch          reset or step its envs, send the Batch
//     close():         to each r: stop                 stop: return
//
// Every wait is bounded by the communicator's timeout; an actor rank that fails or stalls fails
// the call with one line naming the policy and the rank. Not thread-safe (one thread uses the
// communicator).
class RemoteEnvs final : public envs::BatchedEnvs {
 public:
  // `spec` is the env's; every rank after this one serves `envs_per_rank` envs.
  RemoteEnvs(comm::Communicator& communicator, const envs::EnvSpec& spec, int64_t envs_per_rank, std::string policy);
  // Tells the actor ranks to stop if close() was not called (errors ignored: a failed run's own
  // error is the one to see).
  ~RemoteEnvs() override;

  const envs::EnvSpec& spec() const override { return spec_; }
  int64_t num_envs() const override { return num_envs_; }
  int64_t batch_size() const override { return num_envs_; }
  bool is_async() const override { return false; }
  int64_t obs_dim() const override { return obs_dim_; }
  int64_t obs_bytes() const override { return obs_bytes_; }
  int64_t act_dim() const override { return act_dim_; }
  // Reseeding from here is not offered: the actor ranks seed their envs (throws std::logic_error).
  envs::Batch reset(std::optional<uint64_t> seed = std::nullopt) override;
  envs::Batch step(const int64_t* actions) override;
  envs::Batch step(const float* actions) override;

  // Tells every actor rank to stop serving (but those whose messages failed); idempotent.
  void close();

 private:
  envs::Batch exchange(int64_t op, const void* actions);

  comm::Communicator& communicator_;
  envs::EnvSpec spec_;
  std::string policy_;
  int actors_;
  int64_t envs_per_rank_, num_envs_, obs_dim_, obs_bytes_, act_dim_;
  bool discrete_;
  bool closed_ = false;
  std::vector<bool> broken_;                       // actor ranks whose messages failed: told nothing more
  std::vector<torch::Tensor> commands_, results_;  // per actor rank
  // The Batch's rows, all ranks together.
  std::vector<uint8_t> observations_, final_observations_, terminated_, truncated_, has_final_;
  std::vector<float> rewards_, episode_returns_;
  std::vector<int32_t> episode_lengths_, env_ids_;
};

// An actor rank's side: serves `envs` to rank 0's RemoteEnvs until it says stop. Throws
// std::runtime_error naming the policy if a message does not come within the communicator's
// timeout (rank 0 stalled or died), or a command is malformed.
void serve_envs(envs::VectorEnv& envs, comm::Communicator& communicator, const std::string& policy);

}  // namespace concord::policies::runtime
