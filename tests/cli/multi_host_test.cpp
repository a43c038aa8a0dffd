// `concord train --policy multi_learner` across two "hosts": two Linux network namespaces joined
// by a veth pair, each with its own interfaces and addresses, so rank 1 reaches rank 0's store and
// Gloo pairs only over the veth link (10.77.0.2 -> 10.77.0.1), as it would across machines.
//
//   namespace concord_a_<pid>: lo, cva<pid> 10.77.0.1/24  <-- veth -->  cvb<pid> 10.77.0.2/24, lo :concord_b_<pid>
//
// Creating namespaces needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and iproute2's `ip`; without
// them the test is skipped, saying which is missing. The namespaces (and with them the veth pair)
// are deleted however the test ends.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/concord_process.h"
#include "comm/rank_processes.h"

namespace {

const std::string kCartPoleConfig = std::string(CONCORD_SOURCE_DIR) + "/configs/ppo_cartpole.toml";

// iproute2's `ip`, or empty when it is not installed.
std::string ip_binary() {
  for (const char* path : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
    if (::access(path, X_OK) == 0) return path;
  }
  return "";
}

// Runs a shell command; returns its exit status and appends its output to `log`.
int shell(const std::string& command, std::string& log) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buffer[512];
  while (fgets(buffer, sizeof(buffer), pipe) != nullptr) log += buffer;
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Two network namespaces joined by a veth pair, deleted in the destructor. `error` is non-empty
// when setting them up failed, and names the command and its output.
class NamespacePair {
 public:
  static constexpr const char* kAddressA = "10.77.0.1";
  static constexpr const char* kAddressB = "10.77.0.2";

  explicit NamespacePair(std::string ip) : ip_(std::move(ip)) {
    const std::string id = std::to_string(::getpid());
    a_ = "concord_a_" + id;
    b_ = "concord_b_" + id;
    veth_a_ = "cva" + id;  // interface names are at most 15 characters
    veth_b_ = "cvb" + id;
    const std::vector<std::string> setup = {
        ip_ + " netns add " + a_,
        ip_ + " netns add " + b_,
        ip_ + " link add " + veth_a_ + " type veth peer name " + veth_b_,
        ip_ + " link set " + veth_a_ + " netns " + a_,
        ip_ + " link set " + veth_b_ + " netns " + b_,
        ip_ + " -n " + a_ + " addr add " + kAddressA + "/24 dev " + veth_a_,
        ip_ + " -n " + b_ + " addr add " + kAddressB + "/24 dev " + veth_b_,
        ip_ + " -n " + a_ + " link set lo up",
        ip_ + " -n " + b_ + " link set lo up",
        ip_ + " -n " + a_ + " link set " + veth_a_ + " up",
        ip_ + " -n " + b_ + " link set " + veth_b_ + " up",
    };
    for (const std::string& command : setup) {
      std::string output;
      if (shell(command, output) != 0) {
        error_ = "`" + command + "` failed: " + output;
        return;
      }
    }
  }

  ~NamespacePair() {
    // Deleting a namespace destroys the veth end inside it, and a veth pair dies with either end;
    // the explicit link delete covers a failure before the ends were moved.
    std::string ignored;
    shell(ip_ + " netns delete " + a_, ignored);
    shell(ip_ + " netns delete " + b_, ignored);
    shell(ip_ + " link delete " + veth_a_, ignored);
  }

  NamespacePair(const NamespacePair&) = delete;
  NamespacePair& operator=(const NamespacePair&) = delete;

  const std::string& error() const { return error_; }
  const std::string& a() const { return a_; }
  const std::string& b() const { return b_; }

  // Output of `ip ... <arguments>` run inside namespace `name`.
  std::string inside(const std::string& name, const std::string& arguments) const {
    std::string output;
    shell(ip_ + " -n " + name + " " + arguments, output);
    return output;
  }

 private:
  std::string ip_;
  std::string a_, b_, veth_a_, veth_b_;
  std::string error_;
};

// torchrun's variables for `rank` of a 2-host run whose store rank 0 serves on 10.77.0.1.
std::map<std::string, std::string> host_variables(int rank) {
  return {{"RANK", std::to_string(rank)},
          {"WORLD_SIZE", "2"},
          {"LOCAL_RANK", "0"},
          {"LOCAL_WORLD_SIZE", "1"},
          {"MASTER_ADDR", NamespacePair::kAddressA},
          {"MASTER_PORT", "29500"}};  // each namespace has its own, empty, port space
}

// The local addresses (hex, as /proc/net/tcp and tcp6 write them, each followed by a space) of the
// sockets listening on the store's port 29500 inside namespace `name`; all zeros is the wildcard.
std::string store_listeners(const std::string& ip, const std::string& name) {
  std::string tables;
  shell(ip + " netns exec " + name + " cat /proc/net/tcp /proc/net/tcp6", tables);
  std::istringstream lines(tables);
  std::string listeners;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    fields >> slot >> local >> remote >> state;
    const std::size_t colon = local.find(':');
    if (state == "0A" && colon != std::string::npos && local.substr(colon + 1) == "733C") {  // 29500
      std::string address = local.substr(0, colon);
      // An IPv6 wildcard is 32 zeros; an IPv4-mapped address ends in the IPv4 one.
      if (address.size() == 32)
        address = address.find_first_not_of('0') == std::string::npos ? "00000000" : address.substr(24);
      listeners += address + " \n";
    }
  }
  return listeners;
}

TEST(MultiHost, RanksInTwoNetworkNamespacesTrainTogether) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root to create network namespaces (`ip netns add`); run the test as root";
  }
  const std::string ip = ip_binary();
  if (ip.empty()) GTEST_SKIP() << "iproute2's `ip` is not installed (scripts/setup.sh installs it)";
  std::string probe;
  if (shell(ip + " netns list", probe) != 0) GTEST_SKIP() << "`ip netns` is unavailable here: " << probe;

  const NamespacePair hosts(ip);
  if (!hosts.error().empty()) GTEST_SKIP() << "cannot create network namespaces here: " << hosts.error();
  ASSERT_NE(hosts.inside(hosts.b(), "route get 10.77.0.1").find("src 10.77.0.2"), std::string::npos)
      << "host b should reach host a through its veth end";

  const auto root = concord::test::fresh_dir("multi_host", "train");
  std::vector<concord::test::RankProcess> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    // Rank 1 starts once rank 0's store listens (it waits for rank 1 to join meanwhile): the store,
    // which has no authentication, must listen on host a's address towards MASTER_ADDR, not on
    // every interface.
    if (rank == 1) {
      std::string listeners;
      for (int tries = 0; tries < 600 && listeners.empty(); ++tries) {
        listeners = store_listeners(ip, hosts.a());
        if (listeners.empty()) ::usleep(100 * 1000);
      }
      EXPECT_NE(listeners, "") << "rank 0's store never listened on port 29500";
      EXPECT_EQ(listeners.find("00000000 "), std::string::npos) << "a wildcard listener:\n" << listeners;
      EXPECT_NE(listeners.find("01004D0A "), std::string::npos) << "not on 10.77.0.1:\n" << listeners;
    }
    // Same arguments on both hosts (run.root is part of the config both ranks must agree on);
    // only rank 0 writes a run directory.
    std::vector<std::string> arguments = {"netns", "exec", rank == 0 ? hosts.a() : hosts.b(), CONCORD_BINARY};
    std::istringstream words("train --config " + kCartPoleConfig +
                             " --policy multi_learner --total-timesteps 2048 --seed 1 --progress off"
                             " --set comm.timeout_seconds=60 --run-root " +
                             root.string());
    for (std::string word; words >> word;) arguments.push_back(word);
    ranks.push_back(concord::test::start_process(ip, arguments, host_variables(rank),
                                                 root / ("rank" + std::to_string(rank) + ".log")));
  }
  const concord::test::RankResult rank0 = concord::test::finish_rank(ranks[0], std::chrono::seconds(180));
  const concord::test::RankResult rank1 = concord::test::finish_rank(ranks[1], std::chrono::seconds(180));
  ASSERT_EQ(rank0.exit_code, 0) << "rank 0 (" << hosts.a() << "):\n" << rank0.output << "\nrank 1:\n" << rank1.output;
  ASSERT_EQ(rank1.exit_code, 0) << "rank 1 (" << hosts.b() << "):\n" << rank1.output << "\nrank 0:\n" << rank0.output;

  std::vector<std::filesystem::path> run_dirs;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    if (entry.is_directory()) run_dirs.push_back(entry.path());
  }
  ASSERT_EQ(run_dirs.size(), 1u) << "rank 0 alone writes the run directory";
  EXPECT_TRUE(std::filesystem::exists(run_dirs[0] / "checkpoint.ckpt")) << rank0.output;
}

}  // namespace
