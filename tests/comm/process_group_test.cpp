// The c10d communicator (Gloo; NCCL in CUDA builds) between real processes on loopback: each test starts copies of this
// executable as ranks (rank_processes.h); main() below sends those to worker_main().
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "comm/rank_processes.h"
#include "concord/comm/launch_environment.h"
#include "core/temp_dir.h"

namespace concord::comm {
namespace {

using ::testing::HasSubstr;

// --- The ranks' side: one scenario per CONCORD_TEST_WORKER value ---

ConnectOptions options_from_environment() {
  ConnectOptions options;
  if (const char* timeout = std::getenv("CONCORD_TEST_TIMEOUT_MS"))
    options.timeout = std::chrono::milliseconds(std::atoi(timeout));
  if (const char* fingerprint = std::getenv("CONCORD_TEST_FINGERPRINT")) options.config_fingerprint = fingerprint;
  if (const char* backend = std::getenv("CONCORD_TEST_BACKEND")) options.backend = backend;
  return options;
}

#define REQUIRE(condition)                                                             \
  do {                                                                                 \
    if (!(condition)) {                                                                \
      std::fprintf(stderr, "rank check failed: %s (line %d)\n", #condition, __LINE__); \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)

// Every operation, with exact expected values for any world size.
int collectives(Communicator& comm) {
  const int n = comm.world_size();
  const int rank = comm.rank();
  torch::Tensor sum = torch::arange(5, torch::kFloat32) + static_cast<float>(rank);
  comm.allreduce(sum, ReduceOp::kSum);
  const float offset = static_cast<float>(n * (n - 1) / 2);
  REQUIRE(torch::equal(sum, torch::arange(5, torch::kFloat32) * static_cast<float>(n) + offset));
  torch::Tensor max = torch::tensor({static_cast<int64_t>(rank)});
  comm.allreduce(max, ReduceOp::kMax);
  REQUIRE(max.item<int64_t>() == n - 1);
  torch::Tensor min = torch::tensor({static_cast<double>(rank) - 1.0});
  comm.allreduce(min, ReduceOp::kMin);
  REQUIRE(min.item<double>() == -1.0);

  torch::Tensor broadcast = torch::full({4}, static_cast<float>(rank));
  comm.broadcast(broadcast, n - 1);
  REQUIRE(torch::equal(broadcast, torch::full({4}, static_cast<float>(n - 1))));

  const auto gathered = comm.allgather(torch::tensor({rank * 2}, torch::kInt32));
  REQUIRE(static_cast<int>(gathered.size()) == n);
  for (int r = 0; r < n; ++r) REQUIRE(gathered[static_cast<size_t>(r)].item<int>() == r * 2);

  std::vector<torch::Tensor> inputs;
  for (int j = 0; j < n; ++j) inputs.push_back(torch::tensor({static_cast<float>(rank * 10 + j)}));
  torch::Tensor scattered = torch::zeros({1});
  comm.reduce_scatter(scattered, inputs, ReduceOp::kSum);
  REQUIRE(scattered.item<float>() == 10.0f * offset + static_cast<float>(n * rank));

  // A ring of tagged messages, sent before received (Gloo sends do not wait for the receiver).
  if (n > 1) {
    const int next = (rank + 1) % n;
    const int previous = (rank + n - 1) % n;
    auto sent = comm.send_async(torch::tensor({static_cast<float>(rank)}), next, 3);
    torch::Tensor received = torch::zeros({1});
    comm.recv(received, previous, 3);
    sent->wait();
    REQUIRE(received.item<float>() == static_cast<float>(previous));
  }
  comm.barrier();
  return 0;
}

// Rank 1 dies mid-run without a word; rank 0's next operation must fail within its timeout.
int peer_dies(Communicator& comm) {
  comm.barrier();
  if (comm.rank() == 1) ::raise(SIGKILL);
  try {
    torch::Tensor value = torch::ones({1024});
    comm.allreduce(value);
    comm.allreduce(value);
  } catch (const CommError& error) {
    std::fprintf(stderr, "comm error: %s\n", error.what());
    return 3;
  }
  return 0;
}

// Issue 70: rank 1 stalls while busy (not stopped: its threads run on) before the third
// collective; rank 0's times out and must name rank 1, not itself and not rank 2, which reached it.
int busy_stall(Communicator& comm) {
  torch::Tensor value = torch::ones({16});
  comm.allreduce(value);
  comm.allreduce(value);
  if (comm.rank() == 1) {
    const auto until = std::chrono::steady_clock::now() + comm.timeout() * 2;
    volatile uint64_t spins = 0;
    while (std::chrono::steady_clock::now() < until) spins = spins + 1;
    return 0;
  }
  try {
    comm.allreduce(value);
  } catch (const CommError& error) {
    std::fprintf(stderr, "comm error: %s\n", error.what());
    return 3;
  }
  return 0;
}

// The addresses (hex, as /proc/net/tcp and tcp6 write them) of this network namespace's TCP
// sockets listening on `port`, one "listen <address>" line each.
std::string listening_on(int port) {
  char port_hex[8];
  std::snprintf(port_hex, sizeof(port_hex), "%04X", port);
  std::string lines;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the column names
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      fields >> slot >> local >> remote >> state;
      const std::size_t colon = local.find(':');
      if (state == "0A" && colon != std::string::npos && local.substr(colon + 1) == port_hex) {
        lines += "listen " + local.substr(0, colon) + "\n";
      }
    }
  }
  return lines;
}

// Rank 0 reports where the store it serves listens, while both ranks are connected.
int report_listening(Communicator& comm) {
  if (comm.rank() == 0) {
    const std::string lines = listening_on(std::atoi(std::getenv("MASTER_PORT")));
    std::fprintf(stderr, "%s", lines.c_str());
  }
  comm.barrier();
  return 0;
}

int worker_main(const std::string& scenario) {
  try {
    const LaunchEnvironment environment = LaunchEnvironment::from_environment();
    std::unique_ptr<Communicator> comm = connect(environment, options_from_environment());
    if (scenario == "collectives") return collectives(*comm);
    if (scenario == "peer_dies") return peer_dies(*comm);
    if (scenario == "join") return 0;
    if (scenario == "listening") return report_listening(*comm);
    if (scenario == "busy_stall") return busy_stall(*comm);
    std::fprintf(stderr, "unknown scenario %s\n", scenario.c_str());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 4;
  }
}

// --- The tests ---

class ProcessGroup : public test::TempDirTest {
 protected:
  ProcessGroup() : TempDirTest("concord_comm_") {}
};

TEST_F(ProcessGroup, CollectivesAndMessagesAreExactWithTwoRanks) {
  for (const test::RankResult& rank : test::run_ranks("collectives", 2, dir_)) {
    EXPECT_EQ(rank.exit_code, 0) << rank.output;
  }
}

TEST_F(ProcessGroup, CollectivesAndMessagesAreExactWithThreeRanks) {
  for (const test::RankResult& rank : test::run_ranks("collectives", 3, dir_)) {
    EXPECT_EQ(rank.exit_code, 0) << rank.output;
  }
}

// NCCL, one GPU per rank (as many ranks as GPUs, at most 2). The tensors are on the CPU: the
// communicator stages them through the rank's GPU, and the results must be as exact as Gloo's.
TEST_F(ProcessGroup, NcclCollectivesAreExactOnOneGpuPerRank) {
#ifdef USE_C10D_NCCL
  const int gpus = static_cast<int>(torch::cuda::device_count());
  if (gpus == 0) GTEST_SKIP() << "no CUDA device";
  const int ranks = std::min(gpus, 2);
  std::map<int, std::map<std::string, std::string>> variables;
  for (int rank = 0; rank < ranks; ++rank) {
    variables[rank] = {{"CONCORD_TEST_BACKEND", "nccl"}, {"LOCAL_RANK", std::to_string(rank)}};
  }
  for (const test::RankResult& rank : test::run_ranks("collectives", ranks, dir_, variables)) {
    EXPECT_EQ(rank.exit_code, 0) << rank.output;
  }
#else
  GTEST_SKIP() << "this LibTorch has no NCCL";
#endif
}

TEST_F(ProcessGroup, APeerThatNeverJoinsIsNamedAfterTheTimeout) {
  // Only rank 0 of a world of 2 starts.
  const std::string port = std::to_string(test::free_port());
  const test::RankResult rank0 = test::finish_rank(test::start_rank("join",
                                                                    {{"RANK", "0"},
                                                                     {"WORLD_SIZE", "2"},
                                                                     {"MASTER_ADDR", "127.0.0.1"},
                                                                     {"MASTER_PORT", port},
                                                                     {"CONCORD_TEST_TIMEOUT_MS", "1500"}},
                                                                    dir_ / "rank0.log"),
                                                   std::chrono::seconds(30));
  EXPECT_EQ(rank0.exit_code, 4);
  EXPECT_THAT(rank0.output, HasSubstr("rank(s) 1 of WORLD_SIZE=2 never joined within 1.500 s"));
}

TEST_F(ProcessGroup, ARankWithoutRank0CannotReachTheStore) {
  const std::string port = std::to_string(test::free_port());
  const test::RankResult rank1 = test::finish_rank(test::start_rank("join",
                                                                    {{"RANK", "1"},
                                                                     {"WORLD_SIZE", "2"},
                                                                     {"MASTER_ADDR", "127.0.0.1"},
                                                                     {"MASTER_PORT", port},
                                                                     {"CONCORD_TEST_TIMEOUT_MS", "1500"}},
                                                                    dir_ / "rank1.log"),
                                                   std::chrono::seconds(30));
  EXPECT_EQ(rank1.exit_code, 4);
  EXPECT_THAT(rank1.output, HasSubstr("rank 1 could not reach the rendezvous store at 127.0.0.1:" + port));
}

TEST_F(ProcessGroup, AWrongWorldSizeIsRefusedByBothRanks) {
  const auto ranks =
      test::run_ranks("join", 2, dir_, {{1, {{"WORLD_SIZE", "3"}}}, {0, {{"CONCORD_TEST_TIMEOUT_MS", "5000"}}}});
  EXPECT_EQ(ranks[1].exit_code, 4);
  EXPECT_THAT(ranks[1].output,
              HasSubstr("WORLD_SIZE mismatch: rank 0 was started with WORLD_SIZE=2, rank 1 with WORLD_SIZE=3"));
  EXPECT_EQ(ranks[0].exit_code, 4);
  EXPECT_THAT(ranks[0].output, HasSubstr("WORLD_SIZE mismatch"));
}

TEST_F(ProcessGroup, AConfigMismatchIsRefused) {
  const auto ranks = test::run_ranks(
      "join", 2, dir_, {{0, {{"CONCORD_TEST_FINGERPRINT", "aaaa"}}}, {1, {{"CONCORD_TEST_FINGERPRINT", "bbbb"}}}});
  for (const test::RankResult& rank : ranks) {
    EXPECT_EQ(rank.exit_code, 4);
    EXPECT_THAT(rank.output, HasSubstr("config mismatch"));
  }
}

TEST_F(ProcessGroup, APortInUseIsNamed) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = 0;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t length = sizeof(address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  const std::string port = std::to_string(ntohs(address.sin_port));
  const test::RankResult rank0 = test::finish_rank(test::start_rank("join",
                                                                    {{"RANK", "0"},
                                                                     {"WORLD_SIZE", "2"},
                                                                     {"MASTER_ADDR", "127.0.0.1"},
                                                                     {"MASTER_PORT", port},
                                                                     {"CONCORD_TEST_TIMEOUT_MS", "2000"}},
                                                                    dir_ / "rank0.log"),
                                                   std::chrono::seconds(30));
  ::close(fd);
  EXPECT_EQ(rank0.exit_code, 4);
  EXPECT_THAT(rank0.output, HasSubstr("port " + port + " is already in use"));
}

// The rendezvous store has no authentication, so on loopback it must listen on loopback only,
// never on every interface (0.0.0.0 or ::), where anyone reaching the machine could join the run.
TEST_F(ProcessGroup, ALoopbackRendezvousListensOnLoopbackOnly) {
  const auto ranks = test::run_ranks("listening", 2, dir_);
  ASSERT_EQ(ranks[0].exit_code, 0) << ranks[0].output;
  ASSERT_EQ(ranks[1].exit_code, 0) << ranks[1].output;
  // 127.0.0.1, in /proc/net/tcp or, from c10d's dual-stack IPv6 socket, as ::ffff:127.0.0.1.
  EXPECT_THAT(ranks[0].output,
              ::testing::AnyOf(HasSubstr("listen 0100007F\n"), HasSubstr("listen 0000000000000000FFFF00000100007F\n")));
  EXPECT_THAT(ranks[0].output, ::testing::Not(HasSubstr("listen 00000000\n"))) << "0.0.0.0";
  EXPECT_THAT(ranks[0].output, ::testing::Not(HasSubstr("listen 00000000000000000000000000000000\n"))) << "::";
}

// Rank 0 would wait forever on its dead peer without its 5 s timeout; exit code 3 is its timeout.
TEST_F(ProcessGroup, APeerKilledMidRunIsAnErrorWithinTheTimeout) {
  const auto ranks = test::run_ranks("peer_dies", 2, dir_, {{0, {{"CONCORD_TEST_TIMEOUT_MS", "5000"}}}});
  EXPECT_EQ(ranks[1].exit_code, -SIGKILL);
  EXPECT_EQ(ranks[0].exit_code, 3) << ranks[0].output;
  EXPECT_THAT(ranks[0].output, HasSubstr("allreduce of 4096 bytes on rank 0 of 2"));
}

// Rank 0 times out first (rank 2's timeout is twice its own): its error names rank 1, which never reached
// the collective, from the counts every rank publishes in the store, and not rank 2, which did.
TEST_F(ProcessGroup, ARankStalledWhileBusyIsNamedByThePeerThatTimesOut) {
  const auto ranks = test::run_ranks("busy_stall", 3, dir_,
                                     {{0, {{"CONCORD_TEST_TIMEOUT_MS", "1500"}}},
                                      {1, {{"CONCORD_TEST_TIMEOUT_MS", "1500"}}},
                                      {2, {{"CONCORD_TEST_TIMEOUT_MS", "3000"}}}});
  EXPECT_EQ(ranks[1].exit_code, 0) << ranks[1].output;
  EXPECT_EQ(ranks[0].exit_code, 3) << ranks[0].output;
  EXPECT_THAT(ranks[0].output, HasSubstr("allreduce of 64 bytes on rank 0 of 3 timed out"));
  EXPECT_THAT(
      ranks[0].output,
      HasSubstr("; rank 1 never reached this collective (its count of collectives entered: 2; this rank's: 3): it "
                "stalled (busy or blocked outside the collectives, or stopped)"));
  EXPECT_THAT(ranks[0].output, ::testing::Not(HasSubstr("rank 2 never")));
}

// --- Reading the launcher's variables (in this process) ---

class LaunchVariables : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* name :
         {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "OMPI_COMM_WORLD_RANK",
          "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"}) {
      ::unsetenv(name);
    }
  }
};

TEST_F(LaunchVariables, NoneMeansASingleProcess) {
  const LaunchEnvironment environment = LaunchEnvironment::from_environment();
  EXPECT_FALSE(environment.is_distributed());
  EXPECT_EQ(environment.world_size, 1);
}

TEST_F(LaunchVariables, TorchrunVariables) {
  ::setenv("RANK", "3", 1);
  ::setenv("WORLD_SIZE", "4", 1);
  ::setenv("LOCAL_RANK", "1", 1);
  ::setenv("LOCAL_WORLD_SIZE", "2", 1);
  ::setenv("MASTER_ADDR", "10.0.0.1", 1);
  ::setenv("MASTER_PORT", "1234", 1);
  const LaunchEnvironment environment = LaunchEnvironment::from_environment();
  EXPECT_EQ(environment.launcher, "torchrun");
  EXPECT_EQ(environment.rank, 3);
  EXPECT_EQ(environment.world_size, 4);
  EXPECT_EQ(environment.local_rank, 1);
  EXPECT_EQ(environment.local_world_size, 2);
  EXPECT_EQ(environment.master_addr, "10.0.0.1");
  EXPECT_EQ(environment.master_port, 1234);
}

TEST_F(LaunchVariables, OpenMpiVariablesWithDefaultStore) {
  ::setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  ::setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  ::setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
  const LaunchEnvironment environment = LaunchEnvironment::from_environment();
  EXPECT_EQ(environment.launcher, "mpirun");
  EXPECT_EQ(environment.rank, 1);
  EXPECT_EQ(environment.world_size, 2);
  EXPECT_EQ(environment.master_addr, "127.0.0.1");
  EXPECT_EQ(environment.master_port, 29500);
}

TEST_F(LaunchVariables, MalformedVariablesAreNamed) {
  ::setenv("RANK", "0", 1);
  EXPECT_THROW(
      {
        try {
          LaunchEnvironment::from_environment();
        } catch (const CommError& error) {
          EXPECT_THAT(error.what(), HasSubstr("WORLD_SIZE is not set while RANK is"));
          throw;
        }
      },
      CommError);
  ::setenv("WORLD_SIZE", "2", 1);
  ::setenv("RANK", "2", 1);
  EXPECT_THROW(LaunchEnvironment::from_environment(), CommError);
  ::setenv("RANK", "x", 1);
  EXPECT_THROW(LaunchEnvironment::from_environment(), CommError);
  ::setenv("RANK", "0", 1);
  ::setenv("MASTER_PORT", "70000", 1);
  EXPECT_THROW(LaunchEnvironment::from_environment(), CommError);
}

TEST_F(LaunchVariables, UnavailableBackendsAreRefusedWithTheReason) {
  LaunchEnvironment environment;
  ConnectOptions options;
#ifndef USE_C10D_NCCL
  options.backend = "nccl";
  try {
    connect(environment, options);
    FAIL();
  } catch (const CommError& error) {
    EXPECT_THAT(error.what(), HasSubstr("needs a CUDA build of LibTorch with NCCL"));
  }
#endif
  options.backend = "mpi";
  try {
    connect(environment, options);
    FAIL();
  } catch (const CommError& error) {
    EXPECT_THAT(error.what(), HasSubstr("OMPI_COMM_WORLD_RANK"));
  }
  options.backend = "carrier-pigeon";
  try {
    connect(environment, options);
    FAIL();
  } catch (const CommError& error) {
    EXPECT_STREQ(error.what(), "unknown comm backend 'carrier-pigeon' for comm.backend (known: gloo, nccl, mpi)");
  }
}

}  // namespace
}  // namespace concord::comm

int main(int argc, char** argv) {
  if (const char* scenario = std::getenv("CONCORD_TEST_WORKER")) return concord::comm::worker_main(scenario);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
