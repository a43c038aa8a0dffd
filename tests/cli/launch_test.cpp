// `concord launch` and its parts: the line prefixer, torchrun's variables, wait statuses, the
// process supervisor, and the real binary launching real processes (`sh -c` scripts stand in
// for ranks; each test takes a few seconds at most).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "concord/launch/free_port.h"
#include "concord/launch/line_prefixer.h"
#include "concord/launch/process_supervisor.h"
#include "concord/launch/torchrun_environment.h"
#include "concord/launch/wait_status.h"

#include "cli/concord_process.h"
#include "hang_guard.h"

extern char** environ;

namespace {

using concord::test::CommandResult;
using concord::test::run_concord;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using Clock = std::chrono::steady_clock;

constexpr const char* kSuite = "launch_test";

std::filesystem::path fresh_dir(const std::string& name) { return concord::test::fresh_dir(kSuite, name); }

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// `launch <flags> -- sh -c '<script>'`; the script must not contain single quotes.
CommandResult launch_script(const std::string& flags, const std::string& script) {
  return run_concord("launch " + flags + " -- sh -c '" + script + "'");
}

int count_occurrences(const std::string& text, const std::string& needle) {
  int count = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) {
    ++count;
  }
  return count;
}

// The launcher running in the background, its stdout and stderr going to a file.
class BackgroundLaunch {
 public:
  BackgroundLaunch(const std::vector<std::string>& arguments, const std::filesystem::path& log) : log_(log) {
    std::vector<std::string> argv{CONCORD_BINARY, "launch"};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    std::vector<char*> pointers;
    for (std::string& argument : argv) pointers.push_back(argument.data());
    pointers.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    // Its own process group, as a shell gives a foreground job: signalling the group is what a
    // terminal's Ctrl-C does.
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0);
    const int error = posix_spawn(&pid_, pointers[0], &actions, &attributes, pointers.data(), environ);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    if (error != 0) pid_ = -1;
  }
  ~BackgroundLaunch() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  pid_t pid() const { return pid_; }
  std::string output() const { return read_file(log_); }

  // The launcher's exit status, or -1 if it has not exited within `limit` (then it is killed).
  int wait_for_exit(std::chrono::seconds limit) {
    const auto give_up = Clock::now() + limit;
    int status = 0;
    while (Clock::now() < give_up) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

 private:
  std::filesystem::path log_;
  pid_t pid_ = -1;
  bool reaped_ = false;
};

bool wait_for_files(const std::vector<std::filesystem::path>& paths, std::chrono::seconds limit) {
  const auto give_up = Clock::now() + limit;
  while (Clock::now() < give_up) {
    bool all = true;
    for (const auto& path : paths) all = all && std::filesystem::exists(path);
    if (all) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// --- parts ---------------------------------------------------------------------------------------

TEST(LinePrefixer, EmitsOnlyWholeLinesWhateverTheChunking) {
  concord::launch::LinePrefixer lines("[rank 1] ");
  EXPECT_EQ(lines.feed("hel"), "");
  EXPECT_EQ(lines.feed("lo\nwor"), "[rank 1] hello\n");
  EXPECT_EQ(lines.feed("ld\n\nlast"), "[rank 1] world\n[rank 1] \n");
  EXPECT_EQ(lines.finish(), "[rank 1] last\n");
  EXPECT_EQ(lines.finish(), "");
}

TEST(LinePrefixer, SplitsALineLongerThanTheBound) {
  concord::launch::LinePrefixer lines("> ", 4);
  EXPECT_EQ(lines.feed("abcdefghij"), "> abcd\n> efgh\n");
  EXPECT_EQ(lines.feed("\n"), "> ij\n");
  EXPECT_EQ(lines.feed("wxyz\n"), "> wxyz\n");  // exactly the bound: one line, no empty piece
}

TEST(TorchrunEnvironment, RanksOffsetByNodeRank) {
  concord::launch::LaunchTopology topology;
  topology.nproc_per_node = 4;
  topology.nnodes = 3;
  topology.node_rank = 2;
  topology.master_addr = "10.0.0.1";
  topology.master_port = 1234;
  const auto pairs = concord::launch::torchrun_environment(topology, 1);
  const std::map<std::string, std::string> environment(pairs.begin(), pairs.end());
  EXPECT_EQ(environment.at("RANK"), "9");
  EXPECT_EQ(environment.at("WORLD_SIZE"), "12");
  EXPECT_EQ(environment.at("LOCAL_RANK"), "1");
  EXPECT_EQ(environment.at("LOCAL_WORLD_SIZE"), "4");
  EXPECT_EQ(environment.at("GROUP_RANK"), "2");
  EXPECT_EQ(environment.at("GROUP_WORLD_SIZE"), "3");
  EXPECT_EQ(environment.at("ROLE_RANK"), "9");
  EXPECT_EQ(environment.at("MASTER_ADDR"), "10.0.0.1");
  EXPECT_EQ(environment.at("MASTER_PORT"), "1234");
  EXPECT_THROW(concord::launch::torchrun_environment(topology, 4), std::invalid_argument);
  topology.node_rank = 3;
  EXPECT_THROW(concord::launch::torchrun_environment(topology, 0), std::invalid_argument);
}

// Found by tests/fuzz/launch_env_fuzz: `concord launch -n 4096 --nnodes 300` was accepted, and then
// every rank refused its WORLD_SIZE=1228800 (ranks accept at most 1,000,000).
TEST(TorchrunEnvironment, RefusesAWorldItsRanksWouldRefuse) {
  concord::launch::LaunchTopology topology;
  topology.nproc_per_node = 4096;
  topology.nnodes = 300;
  EXPECT_THROW(concord::launch::torchrun_environment(topology, 0), std::invalid_argument);
  topology.nnodes = 244;  // 999,424 processes
  EXPECT_NO_THROW(concord::launch::torchrun_environment(topology, 0));
  topology.nproc_per_node = 1 << 30;  // a product past 2^31 is refused too, not overflowed
  topology.nnodes = 4;
  EXPECT_THROW(concord::launch::torchrun_environment(topology, 0), std::invalid_argument);
}

TEST(WaitStatus, DescribesExitsAndSignals) {
  // system() returns the shell's wait status.
  EXPECT_EQ(concord::launch::describe_wait_status(std::system("exit 3")), "exited with status 3");
  EXPECT_EQ(concord::launch::describe_wait_status(std::system("kill -9 $$")), "was killed by signal 9 (SIGKILL)");
  EXPECT_TRUE(concord::launch::exited_cleanly(std::system("true")));
  EXPECT_FALSE(concord::launch::exited_cleanly(std::system("false")));
  EXPECT_EQ(concord::launch::signal_name(SIGTERM), "SIGTERM");
}

TEST(FreePort, IsBindable) {
  const int port = concord::launch::find_free_port();
  EXPECT_GT(port, 0);
  EXPECT_LT(port, 65536);
}

TEST(ProcessSupervisor, ReportsAProgramThatCannotStart) {
  concord::launch::ChildSpec child;
  child.name = "rank 0";
  child.argv = {"/no/such/program"};
  const auto result = concord::launch::supervise({child}, {});
  EXPECT_FALSE(result.success);
  EXPECT_EQ(result.failure, "cannot start '/no/such/program': No such file or directory");
}

TEST(ProcessSupervisor, AllCleanExitsSucceed) {
  concord::launch::ChildSpec child;
  child.name = "worker";
  child.argv = {"sh", "-c", "test \"$GREETING\" = hello"};
  child.environment = {{"GREETING", "hello"}};
  const auto result = concord::launch::supervise({child, child}, {});
  EXPECT_TRUE(result.success) << result.failure;
}

// Rank 0 finished and lets rank 1 fail (actor_processes dropped it): a rank 1 that will never end
// by itself (stopped, as a SIGSTOPped actor is) is stopped after the grace period, and the run
// succeeds on rank 0's word.
TEST(ProcessSupervisor, RanksRank0LetsFailAreStoppedAfterItFinishes) {
  concord::launch::ChildSpec rank0;
  rank0.name = "rank 0";
  rank0.argv = {"true"};
  concord::launch::ChildSpec stalled;
  stalled.name = "rank 1";
  stalled.argv = {"sh", "-c", "kill -STOP $$"};
  concord::launch::SupervisorOptions options;
  options.grace_period = std::chrono::milliseconds(300);
  options.tolerates_failure = [](std::size_t index) { return index != 0; };
  concord::launch::SupervisionResult result;
  concord::test::ends_within(std::chrono::seconds(120), "supervising a stopped rank 1", [&] {
    result = concord::launch::supervise({rank0, stalled}, options);
  });
  EXPECT_TRUE(result.success) << result.failure;
}

// --- the binary ----------------------------------------------------------------------------------

TEST(Launch, ChildrenSeeTorchrunVariables) {
  unsetenv("OMP_NUM_THREADS");  // so that the launcher sets it
  const auto dir = fresh_dir("env");
  const CommandResult result = launch_script(
      "-n 2", "echo $RANK/$WORLD_SIZE/$LOCAL_RANK/$LOCAL_WORLD_SIZE/$GROUP_RANK/$MASTER_ADDR/$OMP_NUM_THREADS > " +
                  dir.string() + "/rank$RANK; echo $MASTER_PORT > " + dir.string() + "/port$RANK");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(read_file(dir / "rank0"), "0/2/0/2/0/127.0.0.1/1\n");
  EXPECT_EQ(read_file(dir / "rank1"), "1/2/1/2/0/127.0.0.1/1\n");
  // With one node and no --master-port, a free port is chosen, the same for every rank.
  const std::string port = read_file(dir / "port0");
  EXPECT_EQ(port, read_file(dir / "port1"));
  EXPECT_GT(std::stoi(port), 0);
  EXPECT_THAT(result.output, HasSubstr("launching ranks 0-1 of 2"));
}

TEST(Launch, NodeRankOffsetsRanks) {
  const auto dir = fresh_dir("node_rank");
  const CommandResult result = launch_script(
      "-n 2 --nnodes 3 --node-rank 2 --master-addr 10.1.2.3",
      "echo $RANK/$WORLD_SIZE/$LOCAL_RANK/$GROUP_RANK/$MASTER_ADDR:$MASTER_PORT > " + dir.string() + "/rank$RANK");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(read_file(dir / "rank4"), "4/6/0/2/10.1.2.3:29500\n");  // torchrun's default port
  EXPECT_EQ(read_file(dir / "rank5"), "5/6/1/2/10.1.2.3:29500\n");
  const CommandResult port = launch_script("--master-port 29612", "echo $MASTER_PORT > " + dir.string() + "/port");
  ASSERT_EQ(port.exit_code, 0) << port.output;
  EXPECT_EQ(read_file(dir / "port"), "29612\n");
}

TEST(Launch, PrefixesEveryLineWithItsRank) {
  const CommandResult result =
      launch_script("-n 2", "echo out of $RANK; echo err of $RANK >&2; printf \"no newline $RANK\"");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  for (const std::string rank : {"0", "1"}) {
    EXPECT_THAT(result.output, HasSubstr("[rank " + rank + "] out of " + rank + "\n"));
    EXPECT_THAT(result.output, HasSubstr("[rank " + rank + "] err of " + rank + "\n"));
    EXPECT_THAT(result.output, HasSubstr("[rank " + rank + "] no newline " + rank + "\n"));
  }
}

TEST(Launch, FloodingChildrenLoseNoLines) {
  const CommandResult result = launch_script("-n 2", "seq 1 100000");
  ASSERT_EQ(result.exit_code, 0) << result.output.substr(0, 2000);
  EXPECT_EQ(count_occurrences(result.output, "[rank 0] "), 100000);
  EXPECT_EQ(count_occurrences(result.output, "[rank 1] "), 100000);
  EXPECT_THAT(result.output, HasSubstr("[rank 1] 100000\n"));
}

TEST(Launch, ConcordMeansThisBinary) {
  const CommandResult result = run_concord("launch -n 1 -- concord envs");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("[rank 0] CartPole-v1"));
}

// The other ranks would sleep for a minute; that they end by SIGTERM shows the launcher stopped them.
TEST(Launch, FailingRankIsNamedAndTheOthersStopped) {
  const CommandResult result = launch_script("-n 3", "if [ $RANK = 2 ]; then exit 3; fi; exec sleep 60");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("concord: error: rank 2 (pid "));
  EXPECT_THAT(result.output, HasSubstr(") exited with status 3\n"));
  EXPECT_THAT(result.output, HasSubstr("was killed by signal 15 (SIGTERM)"));  // ranks 0 and 1
}

// Issue 70, item 8: a rank that is stopped (here by itself) while another fails is named beside
// the failure, for its peers' timeouts are what a stalled rank looks like from outside. Rank 0
// waits until rank 1 is stopped before failing, so the order cannot change under load.
TEST(Launch, AStoppedRankIsNamedBesideTheFailure) {
  const std::string pid_file = (fresh_dir("stopped") / "rank1.pid").string();
  // Rank 1 writes its pid and stops itself; rank 0 fails once /proc says rank 1 is stopped (T).
  const CommandResult result = launch_script(
      "-n 2 --grace-seconds 1", "if [ $RANK = 1 ]; then echo $$ > " + pid_file +
                                    "; kill -STOP $$; exec sleep 60; fi; i=0; until [ -s " + pid_file +
                                    " ] && [ \"$(cut -d\" \" -f3 /proc/$(cat " + pid_file +
                                    ")/stat)\" = T ] || [ $i -ge 600 ]; do sleep 0.1; i=$((i+1)); done; exit 1");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("concord: error: rank 0 (pid "));
  EXPECT_THAT(result.output, ::testing::ContainsRegex("exited with status 1 \\(rank 1 \\(pid [0-9]+\\) is stopped, by "
                                                      "SIGSTOP or a debugger"))
      << result.output;
}

// Issue 70: a rank whose collective timed out declares the ranks that never reached it (beside the
// control file, as comm::ProcessGroupCommunicator's report does through launch::declare_stalled_ranks:
// tests/comm/process_group_test.cpp covers that side), and the launcher's line names them, not
// only the rank that noticed and failed.
TEST(Launch, ARankDeclaredStalledIsNamedBesideTheFailure) {
  const CommandResult result = launch_script(
      "-n 3 --grace-seconds 1",
      "if [ $RANK = 0 ]; then printf \"1 42\\n\" > $(dirname $CONCORD_LAUNCH_CONTROL)/stalled-by-0; exit 1; fi; "
      "exec sleep 60");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output, ::testing::ContainsRegex("rank 0 \\(pid [0-9]+\\) exited with status 1 \\(rank 1 "
                                                      "stalled: rank 0 timed out at collective 42, which rank 1 never "
                                                      "reached; the likelier cause\\)"))
      << result.output;
}

TEST(Launch, KilledRankIsNamedWithItsSignal) {
  const CommandResult result = launch_script("-n 2", "if [ $RANK = 1 ]; then kill -9 $$; fi; exec sleep 60");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("concord: error: rank 1 (pid "));
  EXPECT_THAT(result.output, HasSubstr(") was killed by signal 9 (SIGKILL)\n"));
}

TEST(Launch, RankIgnoringSigtermIsKilledAfterTheGracePeriod) {
  const CommandResult result = launch_script("-n 2 --grace-seconds 0.5",
                                             "if [ $RANK = 1 ]; then sleep 0.2; exit 4; fi; trap \"\" TERM; sleep 60");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("rank 1 (pid "));
  EXPECT_THAT(result.output, HasSubstr("exited with status 4"));
  EXPECT_THAT(result.output, HasSubstr("sending SIGKILL"));
  EXPECT_THAT(result.output, HasSubstr("was killed by signal 9 (SIGKILL)"));
}

TEST(Launch, SigtermToTheLauncherIsForwarded) {
  const auto dir = fresh_dir("sigterm");
  const std::string d = dir.string();
  // Rank 0 handles SIGTERM and exits cleanly; rank 1 dies of it.
  BackgroundLaunch launcher({"-n", "2", "--", "sh", "-c",
                             "if [ $RANK = 0 ]; then trap \"echo term > " + d +
                                 "/term0; exit 0\" TERM; fi; "
                                 "touch " +
                                 d + "/ready$RANK; while :; do sleep 0.1; done"},
                            dir / "log");
  ASSERT_GT(launcher.pid(), 0);
  ASSERT_TRUE(wait_for_files({dir / "ready0", dir / "ready1"}, std::chrono::seconds(10))) << launcher.output();
  kill(launcher.pid(), SIGTERM);
  EXPECT_EQ(launcher.wait_for_exit(std::chrono::seconds(10)), 1) << launcher.output();
  EXPECT_EQ(read_file(dir / "term0"), "term\n");
  const std::string output = launcher.output();
  EXPECT_THAT(output, HasSubstr("received SIGTERM"));
  EXPECT_THAT(output, HasSubstr("concord: error: interrupted by SIGTERM; rank 1 (pid "));
}

TEST(Launch, CtrlCReachesEveryRankOnceAndCleanStopsExit130) {
  const auto dir = fresh_dir("sigint");
  const std::string d = dir.string();
  // Each rank notes every SIGINT it gets, lingers long enough to get a second one, then exits 0
  // (rank 0) or 130 (rank 1, as `concord train` after its checkpoint): both are clean stops, and
  // the launcher reports the interruption as 130 too.
  BackgroundLaunch launcher(
      {"-n", "2", "--", "sh", "-c",
       "trap \"echo int >> " + d + "/int$RANK; stop=1\" INT; touch " + d +
           "/ready$RANK; while [ -z \"$stop\" ]; do sleep 0.1; done; sleep 0.5; exit $((RANK * 130))"},
      dir / "log");
  ASSERT_GT(launcher.pid(), 0);
  ASSERT_TRUE(wait_for_files({dir / "ready0", dir / "ready1"}, std::chrono::seconds(10))) << launcher.output();
  kill(-launcher.pid(), SIGINT);  // the whole foreground group, as the terminal's Ctrl-C
  EXPECT_EQ(launcher.wait_for_exit(std::chrono::seconds(10)), 128 + SIGINT) << launcher.output();
  // The ranks are outside the launcher's group, so only the launcher's forwarded copy reached them.
  EXPECT_EQ(read_file(dir / "int0"), "int\n");
  EXPECT_EQ(read_file(dir / "int1"), "int\n");
  EXPECT_THAT(launcher.output(), HasSubstr("stopped by SIGINT; every rank exited cleanly"));
}

// Rank 0 declares (as actor_processes with on_actor_failure = "continue" does) that its run goes on
// when another rank fails: the launcher then only warns, and the run succeeds on rank 0's word.
TEST(Launch, AFailureRank0DeclaredSurvivableDoesNotStopTheRun) {
  const auto dir = fresh_dir("survivable");
  const std::string d = dir.string();
  BackgroundLaunch launcher({"-n", "2", "--", "sh", "-c",
                             "i=0; if [ $RANK = 0 ]; then echo other-ranks-may-fail > \"$CONCORD_LAUNCH_CONTROL\"; "
                             "touch " +
                                 d +
                                 "/declared; "
                                 "until [ -e " +
                                 d +
                                 "/gone1 ] || [ $i -ge 100 ]; do sleep 0.1; i=$((i+1)); done; "
                                 "sleep 0.5; echo rank0 finished; exit 0; fi; "
                                 "until [ -e " +
                                 d +
                                 "/declared ] || [ $i -ge 100 ]; do sleep 0.1; i=$((i+1)); done; "
                                 "touch " +
                                 d + "/gone1; exit 3"},
                            dir / "log");
  ASSERT_GT(launcher.pid(), 0);
  EXPECT_EQ(launcher.wait_for_exit(std::chrono::seconds(30)), 0) << launcher.output();
  EXPECT_THAT(launcher.output(), HasSubstr("exited with status 3; the run goes on without it"));
  EXPECT_THAT(launcher.output(), HasSubstr("[rank 0] rank0 finished"));
}

TEST(Launch, SecondSignalKillsAtOnce) {
  const auto dir = fresh_dir("second_signal");
  const std::string d = dir.string();
  BackgroundLaunch launcher({"-n", "2", "--grace-seconds", "60", "--", "sh", "-c",
                             "trap \"\" TERM; touch " + d + "/ready$RANK; while :; do sleep 0.1; done"},
                            dir / "log");
  ASSERT_GT(launcher.pid(), 0);
  ASSERT_TRUE(wait_for_files({dir / "ready0", dir / "ready1"}, std::chrono::seconds(10))) << launcher.output();
  kill(launcher.pid(), SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(launcher.pid(), SIGTERM);
  EXPECT_EQ(launcher.wait_for_exit(std::chrono::seconds(10)), 1) << launcher.output();
  EXPECT_THAT(launcher.output(), HasSubstr("killing every rank"));
  EXPECT_THAT(launcher.output(), HasSubstr("was killed by signal 9 (SIGKILL)"));
}

// --- restarts ------------------------------------------------------------------------------------

// torchrun's --max-restarts: the failed group is stopped and started again, each rank seeing its
// restart count, each restart logged with the rank and cause.
TEST(Launch, AFailedGroupIsRestartedUpToMaxRestarts) {
  const CommandResult result =
      launch_script("-n 2 --max-restarts 2",
                    "echo attempt $TORCHELASTIC_RESTART_COUNT of $TORCHELASTIC_MAX_RESTARTS; "
                    "if [ $RANK = 1 ] && [ $TORCHELASTIC_RESTART_COUNT -lt 2 ]; then exit 3; fi; exit 0");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("restart 1 of 2: rank 1 (pid "));
  EXPECT_THAT(result.output, HasSubstr("restart 2 of 2: rank 1 (pid "));
  EXPECT_THAT(result.output, HasSubstr(") exited with status 3; no run directory declared, starting afresh"));
  EXPECT_EQ(count_occurrences(result.output, "restart "), 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("[rank 0] attempt 2 of 2"));
  EXPECT_THAT(result.output, HasSubstr("[rank 1] attempt 2 of 2"));
}

TEST(Launch, RestartsRunOutAndTheLastFailureIsTheError) {
  const CommandResult result = launch_script("-n 2 --max-restarts 1", "if [ $RANK = 1 ]; then exit 3; fi; exit 0");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_EQ(count_occurrences(result.output, "restart 1 of 1: "), 1) << result.output;
  EXPECT_EQ(count_occurrences(result.output, "restart "), 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("concord: error: rank 1 (pid "));
}

// Without --max-restarts nothing restarts (torchrun's default of 0).
TEST(Launch, NoRestartByDefault) {
  const CommandResult result = launch_script("-n 1", "echo attempt $TORCHELASTIC_RESTART_COUNT; exit 3");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_EQ(count_occurrences(result.output, "attempt 0"), 1) << result.output;
  EXPECT_EQ(count_occurrences(result.output, "restart "), 0) << result.output;
}

// The restarted group is told the run directory rank 0 declared before, and only then.
TEST(Launch, ARestartedGroupIsToldRank0sRunDirectory) {
  const auto dir = fresh_dir("restart_run_dir");
  const CommandResult result = launch_script(
      "-n 2 --max-restarts 1",
      "echo \"resume=[$CONCORD_RESTART_RUN_DIR]\"; if [ $TORCHELASTIC_RESTART_COUNT = 0 ]; then "
      "if [ $RANK = 0 ]; then echo \"run-dir " +
          dir.string() +
          "\" > \"$CONCORD_LAUNCH_CONTROL\"; exit 0; fi; i=0; "
          "until grep -qs run-dir \"$CONCORD_LAUNCH_CONTROL\" || [ $i -ge 100 ]; do sleep 0.1; i=$((i+1)); done; "
          "exit 3; fi; exit 0");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(count_occurrences(result.output, "resume=[]"), 2) << result.output;
  EXPECT_EQ(count_occurrences(result.output, "resume=[" + dir.string() + "]"), 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("; continuing from " + dir.string()));
}

// `concord train` in a restarted group continues rank 0's run from its checkpoint: one run
// directory, the step count going on from the checkpoint, the metrics without a repeated step.
// The first attempt trains 640 steps, then its wrapper fails as a crash after the checkpoint would.
TEST(Launch, ARestartedTrainContinuesFromTheCheckpoint) {
  const auto root = fresh_dir("restart_train");
  const std::string train = std::string(CONCORD_BINARY) +
                            " train --num-envs 4 --set algo.ppo.num_steps=32 --progress off --run-root " +
                            root.string();
  const CommandResult result =
      launch_script("-n 1 --max-restarts 1", "if [ $TORCHELASTIC_RESTART_COUNT = 0 ]; then " + train +
                                                 " --total-timesteps 640 || exit 9; exit 3; fi; exec " + train +
                                                 " --total-timesteps 1280");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("restart 1 of 1: rank 0 (pid "));
  EXPECT_THAT(result.output, HasSubstr("restarted: continuing"));
  EXPECT_THAT(result.output, HasSubstr("resumed at step 640 (update 5)"));
  const std::vector<std::filesystem::path> run_dirs = concord::test::run_directories(root);
  ASSERT_EQ(run_dirs.size(), 1u) << result.output;
  const std::vector<int64_t> steps = concord::test::csv_steps(run_dirs.front());
  std::vector<int64_t> expected;
  for (int64_t step = 128; step <= 1280; step += 128) expected.push_back(step);
  EXPECT_EQ(steps, expected);
}

// A group that failed before its first checkpoint (here: its checkpoint removed) leaves rows in
// metrics.csv; the restarted `concord train` starts afresh in the same run directory, and its rows
// replace them.
TEST(Launch, ARestartBeforeAnyCheckpointStartsAfreshInTheSameRunDirectory) {
  const auto root = fresh_dir("restart_afresh");
  const std::string train = std::string(CONCORD_BINARY) +
                            " train --num-envs 4 --set algo.ppo.num_steps=32 --total-timesteps 640 --progress off "
                            "--run-root " +
                            root.string();
  const CommandResult result = launch_script(
      "-n 1 --max-restarts 1", "if [ $TORCHELASTIC_RESTART_COUNT = 0 ]; then " + train + " || exit 9; rm " +
                                   root.string() + "/*/checkpoint.ckpt; exit 3; fi; exec " + train);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("holds no checkpoint.ckpt yet: starting afresh in it"));
  EXPECT_THAT(result.output, Not(HasSubstr("resumed at step")));
  const std::vector<std::filesystem::path> run_dirs = concord::test::run_directories(root);
  ASSERT_EQ(run_dirs.size(), 1u) << result.output;
  EXPECT_EQ(concord::test::csv_steps(run_dirs.front()), (std::vector<int64_t>{128, 256, 384, 512, 640}));
  EXPECT_TRUE(std::filesystem::exists(run_dirs.front() / "checkpoint.ckpt"));
}

// `concord fit <arguments> --steps 20` on two ranks, then every rank exits 3, and the group that
// --max-restarts starts again runs the same fit with --steps 40: the launcher's whole output.
CommandResult fit_restarted_at_step_20(const std::filesystem::path& root, const std::string& arguments) {
  const std::string fit =
      std::string(CONCORD_BINARY) + " fit " + arguments + " --progress off --run-root " + root.string();
  return launch_script("-n 2 --max-restarts 1", "if [ $TORCHELASTIC_RESTART_COUNT = 0 ]; then " + fit +
                                                    " --steps 20 || exit 9; exit 3; fi; exec " + fit + " --steps 40");
}

// The same for `concord fit` on two ranks: the restarted group takes every rank's state back from
// rank 0's checkpoint at step 20 and goes on to 40.
TEST(Launch, ARestartedFitContinuesFromTheCheckpoint) {
  const auto root = fresh_dir("restart_fit");
  const CommandResult result = fit_restarted_at_step_20(
      root, "--strategy local_sgd --set fit.checkpoint_interval=10 --set fit.eval_interval=10");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("restart 1 of 1: rank "));
  EXPECT_THAT(result.output, HasSubstr("resumed at steps 20"));
  const std::vector<std::filesystem::path> run_dirs = concord::test::run_directories(root);
  ASSERT_EQ(run_dirs.size(), 1u) << result.output;
  EXPECT_EQ(concord::test::csv_steps(run_dirs.front()), (std::vector<int64_t>{10, 20, 30, 40}));
}

// And for GAP (`concord fit --task gan`): every pair takes its networks, Adam moments, sampler
// and noise generator back from the checkpoint at update 20.
TEST(Launch, ARestartedGanRunContinuesFromTheCheckpoint) {
  const auto root = fresh_dir("restart_gan");
  const CommandResult result =
      fit_restarted_at_step_20(root,
                               "--task gan --swap-every 5 --set gan.checkpoint_interval=10 --set gan.eval_interval=10 "
                               "--set gan.score_samples=0 --set gan.hidden_units=32");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("restart 1 of 1: rank "));
  EXPECT_THAT(result.output, HasSubstr("resumed at steps 20"));
  EXPECT_THAT(result.output, HasSubstr("40 (7 swaps)"));
  const std::vector<std::filesystem::path> run_dirs = concord::test::run_directories(root);
  ASSERT_EQ(run_dirs.size(), 1u) << result.output;
  EXPECT_EQ(concord::test::csv_steps(run_dirs.front()), (std::vector<int64_t>{10, 20, 30, 40}));
}

void expect_one_line_error(const std::string& arguments, const std::string& needle, int exit_code) {
  const CommandResult result = run_concord(arguments);
  EXPECT_EQ(result.exit_code, exit_code) << arguments << "\n" << result.output;
  EXPECT_EQ(count_occurrences(result.output, "\n"), 1) << arguments << "\n" << result.output;
  EXPECT_THAT(result.output, StartsWith("concord: error: ")) << arguments;
  EXPECT_THAT(result.output, HasSubstr(needle)) << arguments;
}

TEST(Launch, BadFlagsGetOneClearLine) {
  expect_one_line_error("launch -n 2", "needs a command after '--'", 2);
  expect_one_line_error("launch -n 0 -- true", "--nproc-per-node", 2);
  expect_one_line_error("launch --nnodes 2 --node-rank 2 -- true", "--node-rank: must be below --nnodes", 2);
  expect_one_line_error("launch --master-port 70000 -- true", "--master-port", 2);
  expect_one_line_error("launch --grace-seconds 5000 -- true", "--grace-seconds", 2);
  expect_one_line_error("launch --max-restarts -1 -- true", "--max-restarts", 2);
}

TEST(Launch, ProgramThatCannotStartGetsOneClearLine) {
  expect_one_line_error("launch -n 2 -- no-such-program-xyz", "cannot start 'no-such-program-xyz'", 1);
  expect_one_line_error("launch -- /no/such/program", "cannot start '/no/such/program'", 1);
  expect_one_line_error("lunch", "commands: train, eval, envs, config, rollout, launch", 2);
}

}  // namespace
