#pragma once

// The environment variables torchrun gives each process, by name: written by `concord launch`
// (launch/torchrun_environment.h) and read by every rank (comm/launch_environment.h), so the two
// sides cannot drift apart. Meanings as in torchrun's documentation.
namespace concord::comm::torchrun {

inline constexpr const char* kRank = "RANK";                        // global rank
inline constexpr const char* kWorldSize = "WORLD_SIZE";             // processes in the run
inline constexpr const char* kLocalRank = "LOCAL_RANK";             // rank on this machine
inline constexpr const char* kLocalWorldSize = "LOCAL_WORLD_SIZE";  // processes on this machine
inline constexpr const char* kGroupRank = "GROUP_RANK";             // this machine's index
inline constexpr const char* kGroupWorldSize = "GROUP_WORLD_SIZE";  // machines in the run
inline constexpr const char* kRoleRank = "ROLE_RANK";               // rank within the role
inline constexpr const char* kRoleWorldSize = "ROLE_WORLD_SIZE";    // processes in the role
inline constexpr const char* kRoleName = "ROLE_NAME";               // the role ("default")
inline constexpr const char* kMasterAddr = "MASTER_ADDR";           // rank 0's rendezvous host
inline constexpr const char* kMasterPort = "MASTER_PORT";           // rank 0's rendezvous port
inline constexpr const char* kRestartCount = "TORCHELASTIC_RESTART_COUNT";
inline constexpr const char* kMaxRestarts = "TORCHELASTIC_MAX_RESTARTS";

// The largest value a rank accepts in any of these variables: a launcher must not start a larger
// world, whose ranks would each refuse their WORLD_SIZE.
inline constexpr int kLargestValue = 1'000'000;

}  // namespace concord::comm::torchrun
