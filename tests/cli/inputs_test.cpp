// Issue 70's probe as tests: every input bounded, every fault named. One writer per run directory;
// the bounds of every count, timeout and coefficient a user can type (docs/inputs.md).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "concord/cli/config_bounds.h"
#include "concord/cli/config_presets.h"
#include "concord/cli/run_config.h"
#include "concord/core/did_you_mean.h"
#include "concord/core/run_dir_lock.h"

#include "cli/concord_process.h"
#include "comm/bad_store_listener.h"

namespace {

using concord::test::CommandResult;
using concord::test::run_concord;
using concord::test::run_shell;

constexpr const char* kSuite = "inputs_test";

std::filesystem::path fresh_dir(const std::string& name) { return concord::test::fresh_dir(kSuite, name); }

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(RunDirLock, ASecondLockOfOneDirectoryIsRefusedUntilTheFirstIsReleased) {
  const auto dir = fresh_dir("lock");
  {
    concord::core::RunDirLock first(dir);
    EXPECT_TRUE(first.held());
    try {
      concord::core::RunDirLock second(dir / "." / "");  // the same directory, spelled otherwise
      ADD_FAILURE() << "a second lock was granted";
    } catch (const std::runtime_error& error) {
      EXPECT_THAT(error.what(), ::testing::HasSubstr("is in use by this process (pid "));
    }
    concord::core::RunDirLock moved = std::move(first);
    EXPECT_TRUE(moved.held());
    EXPECT_FALSE(first.held());  // NOLINT(bugprone-use-after-move): a moved-from lock holds nothing
  }
  EXPECT_TRUE(concord::core::RunDirLock(dir).held());
}

// Issue 70, item 4: two resumes of one run directory started together; exactly one runs, the
// other is refused in one line naming the pid of the one that runs. The one that runs is then
// stopped with SIGINT (it would train for 2^40 steps).
TEST(Inputs, TwoResumesOfOneRunDirectoryExactlyOneRuns) {
  const auto root = fresh_dir("two_resumes");
  ASSERT_EQ(run_concord("train --num-envs 4 --set algo.ppo.num_steps=32 --progress off --total-timesteps 256 "
                        "--run-root " +
                        root.string())
                .exit_code,
            0);
  std::filesystem::path run_dir;
  for (const auto& entry : std::filesystem::directory_iterator(root)) run_dir = entry.path();
  const std::string resume = std::string(CONCORD_BINARY) + " train --resume " + run_dir.string() +
                             " --total-timesteps 1099511627776 --progress off";
  const auto out = [&root](int i) { return (root / ("resume" + std::to_string(i) + ".txt")).string(); };
  // Every wait is bounded (60 s); then SIGINT (and SIGKILL for one that ignores it).
  const std::string script =
      resume + " > " + out(1) + " 2>&1 & p1=$!; " + resume + " > " + out(2) + " 2>&1 & p2=$!; " +
      "i=0; while kill -0 $p1 2>/dev/null && kill -0 $p2 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); "
      "done; "
      "i=0; until grep -q 'resumed at step' " +
      out(1) + " " + out(2) +
      " || [ $i -ge 600 ]; do sleep "
      "0.1; i=$((i+1)); done; "
      "kill -INT $p1 $p2 2>/dev/null; "
      "i=0; while { kill -0 $p1 || kill -0 $p2; } 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; "
      "kill -KILL $p1 $p2 2>/dev/null; wait $p1; s1=$?; wait $p2; s2=$?; echo \"$p1 $s1 $p2 $s2\"";
  std::istringstream result(run_shell(script).output);
  long pids[2] = {0, 0};
  int statuses[2] = {0, 0};
  result >> pids[0] >> statuses[0] >> pids[1] >> statuses[1];
  const std::string outputs[2] = {read_text(out(1)), read_text(out(2))};
  int ran = 0;
  for (int i = 0; i < 2; ++i) {
    const bool refused = outputs[i].find("is in use by another concord process") != std::string::npos;
    if (refused) {
      EXPECT_EQ(statuses[i], 1) << outputs[i];
      EXPECT_THAT(outputs[i], ::testing::HasSubstr("run directory '" + run_dir.string() +
                                                   "' is in use by another concord process (pid " +
                                                   std::to_string(pids[1 - i]) + ")"));
      EXPECT_THAT(outputs[i], ::testing::Not(::testing::HasSubstr("resumed at step")));
    } else {
      ++ran;
      EXPECT_THAT(outputs[i], ::testing::HasSubstr("resumed at step 256")) << outputs[i];
    }
  }
  EXPECT_EQ(ran, 1) << outputs[0] << "\n----\n" << outputs[1];
  // Once the one that ran has gone, the directory resumes again.
  const CommandResult again =
      run_concord("train --resume " + run_dir.string() + " --total-timesteps 128 --progress off");
  EXPECT_EQ(again.exit_code, 0) << again.output;
}

// Issue 70, item 7: a run that fails before its first checkpoint says there is none (not "the last
// checkpoint is intact"), and a resume of it says so too instead of a bare "no such file". A
// learning rate of 1e30 is finite, so within the bounds, and makes the losses nan within two updates.
TEST(Inputs, AFailureBeforeTheFirstCheckpointSaysThereIsNone) {
  const auto root = fresh_dir("no_checkpoint");
  const CommandResult failed = run_concord(
      "train --set algo.ppo.learning_rate=1e30 --num-envs 4 --set algo.ppo.num_steps=32 --total-timesteps 20000 "
      "--progress off --run-root " +
      root.string());
  EXPECT_EQ(failed.exit_code, 1) << failed.output;
  EXPECT_THAT(failed.output,
              ::testing::HasSubstr("training stopped, no checkpoint yet (the run wrote none before it)"));
  EXPECT_THAT(failed.output, ::testing::Not(::testing::HasSubstr("intact")));
  std::filesystem::path run_dir;
  for (const auto& entry : std::filesystem::directory_iterator(root)) run_dir = entry.path();
  ASSERT_FALSE(std::filesystem::exists(run_dir / "checkpoint.ckpt"));
  const CommandResult resumed = run_concord("train --resume " + run_dir.string());
  EXPECT_EQ(resumed.exit_code, 1);
  EXPECT_THAT(resumed.output, ::testing::HasSubstr("no such file: no checkpoint yet (the run ended before writing "
                                                   "one); start a new run"));
}

// Issue 70's probe inputs, through the real binary: each is refused in one line naming the key
// and its bound, exit 1, before a run directory exists. Run four at a time (each is a LibTorch
// start-up, about a second of CPU).
TEST(Inputs, TheProbesInputsAreRefusedInOneLineNamingTheKey) {
  const auto root = fresh_dir("probe");
  const std::string train = "train --total-timesteps 2048 --progress off --run-root " + root.string() + " ";
  // Each row: the flags, then what the line must say (several keys of one command: every one).
  const std::vector<std::pair<std::string, std::vector<std::string>>> table = {
      {"--config ppo_cartpole --policy sync_vector --set env.num_threads=100000",
       {"env.num_threads=100000 is too large (at most "}},
      {"--set run.torch_threads=100000", {"run.torch_threads=100000 is too large (at most "}},
      {"--policy hogwild --set policy.hogwild.actors=100000", {"policy.hogwild.actors=100000 is too large (at most "}},
      {"--algo dqn --policy apex --set policy.apex.actors=100000 --set env.num_envs=100000",
       {"policy.apex.actors=100000 is too large (at most "}},
      {"--policy central_inference --set policy.central_inference.actors=100000 --set "
       "policy.central_inference.predictors=100000 --set policy.central_inference.trainers=100000",
       {"policy.central_inference.actors=100000 is too large",
        "policy.central_inference.predictors=100000 is too large",
        "policy.central_inference.trainers=100000 is too large"}},
      {"--num-envs 8 --threads 64", {"env.num_threads=64 is "}},
      {"--set algo.ppo.update_epochs=2000000000", {"algo.ppo.update_epochs=2000000000 is too large (at most 10000)"}},
      {"--algo dqn --set algo.dqn.gradient_steps=2000000000",
       {"algo.dqn.gradient_steps=2000000000 is too large (at most 100000)"}},
      {"--set algo.ppo.learning_rate=inf --set algo.ppo.vf_coef=inf",
       {"algo.ppo.learning_rate must be a finite number, got inf",
        "algo.ppo.vf_coef must be a finite number, got inf"}},
      {"--config ppo_cartpole --set algo.ppo.num_minibatches=1000",
       {"algo.ppo.num_minibatches=1000 is more than the 256 samples of a rollout"}},
      {"--set comm.timeout_seconds=inf", {"comm.timeout_seconds must be a finite number, got inf"}},
      {"--set env.recv_timeout_seconds=nan", {"env.recv_timeout_seconds must be a finite number, got nan"}},
  };
  std::vector<std::future<CommandResult>> results;
  for (size_t first = 0; first < table.size(); first += 4) {
    std::vector<std::future<CommandResult>> batch;
    for (size_t i = first; i < std::min(first + 4, table.size()); ++i) {
      batch.push_back(std::async(std::launch::async, [&, i] { return run_concord(train + table[i].first); }));
    }
    for (auto& result : batch) results.push_back(std::move(result));
    for (size_t i = first; i < std::min(first + 4, table.size()); ++i) results[i].wait();
  }
  for (size_t i = 0; i < table.size(); ++i) {
    const CommandResult result = results[i].get();
    EXPECT_EQ(result.exit_code, 1) << table[i].first << "\n" << result.output;
    EXPECT_EQ(std::count(result.output.begin(), result.output.end(), '\n'), 1) << table[i].first << "\n"
                                                                               << result.output;
    EXPECT_THAT(result.output, ::testing::StartsWith("concord: error: ")) << table[i].first;
    for (const std::string& needle : table[i].second) {
      EXPECT_THAT(result.output, ::testing::HasSubstr(needle)) << table[i].first;
    }
  }
  EXPECT_TRUE(std::filesystem::is_empty(root));
  // run.allow_oversubscribe lets a user who means it go beyond the machine's threads.
  EXPECT_NO_THROW(concord::cli::resolve_config(
      {{}, {"run.allow_oversubscribe=true", "policy.hogwild.workers=100000"}, "", -1, 0, 0, "", ""}));
}

// The refusal `concord config --set KEY=VALUE` (resolve_config) gives, or "" if none.
std::string refusal(const std::vector<std::string>& overrides) {
  try {
    concord::cli::resolve_config({{}, overrides, "", -1, 0, 0, "", ""});
    return "";
  } catch (const concord::core::ConfigError& error) {
    return error.what();
  }
}

// Every number `concord config` lists, tried at the probe's values: every int key at 0, -1 and
// 2^31, every float key at inf, -inf and nan. Each is accepted or refused in one line naming the
// key; the thread counts and iteration counts the issue found unbounded, and every other int key
// but the few that count memory or env steps, refuse 2^31.
TEST(Inputs, EveryNumberKeyIsBoundedAndItsRefusalNamesIt) {
  const concord::core::ConfigSchema schema = concord::cli::concord_schema();
  // Keys whose 2^31 is a size the memory estimate judges, or a length in env steps (2^50 at most):
  // these names under any algo.<name>., and the keys listed.
  const std::vector<std::string> large_in_algos = {".num_steps", ".buffer_size", ".learning_starts",
                                                   ".exploration_steps"};
  const std::set<std::string> large = {"env.num_envs",       "train.total_timesteps", "train.checkpoint_interval_steps",
                                       "log.interval_steps", "rollout.steps",         "run.seed",
                                       "fit.steps",          "fit.fedavg.rounds",     "gan.steps"};
  const auto is_large = [&](const std::string& key) {
    if (large.count(key) > 0) return true;
    if (key.rfind("algo.", 0) != 0) return false;
    return std::any_of(large_in_algos.begin(), large_in_algos.end(), [&](const std::string& suffix) {
      return key.size() > suffix.size() && key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0;
    });
  };
  int ints = 0;
  int floats = 0;
  for (const auto& [key, entry] : schema.entries()) {
    if (std::holds_alternative<int64_t>(entry.default_value)) {
      ++ints;
      for (const std::string value : {"0", "-1", "2147483648"}) {
        const std::string problem = refusal({key + "=" + value});
        if (!problem.empty()) {
          EXPECT_THAT(problem, ::testing::HasSubstr(key)) << key << "=" << value;
          EXPECT_EQ(problem.find('\n'), std::string::npos) << problem;
        }
        if (value == "-1" && key != "algo.sac.sde_sample_freq") EXPECT_NE(problem, "") << key << "=-1";
        if (value == "2147483648" && !is_large(key)) EXPECT_NE(problem, "") << key << "=2^31";
      }
    } else if (std::holds_alternative<double>(entry.default_value)) {
      ++floats;
      const bool nan_default = std::isnan(std::get<double>(entry.default_value));
      for (const std::string value : {"inf", "-inf", "nan"}) {
        const std::string problem = refusal({key + "=" + value});
        if (value == "nan" && nan_default) {
          EXPECT_EQ(problem, "") << key << "=nan means the task's own value";
        } else {
          EXPECT_EQ(problem, key + " must be a finite number, got " + value) << key << "=" << value;
        }
      }
    }
  }
  EXPECT_GT(ints, 80);
  EXPECT_GT(floats, 60);
  // Every default and every shipped preset lies within the bounds.
  EXPECT_EQ(refusal({}), "");
  for (const std::string& preset : concord::cli::preset_names()) {
    std::string error;
    const std::string file = concord::cli::resolve_config_file(preset, error);
    EXPECT_NO_THROW(concord::cli::resolve_config({{file}, {}, "", -1, 0, 0, "", ""})) << preset;
  }
  // A thread count's bound is this machine's, the override lifts it.
  const std::string above = std::to_string(concord::cli::thread_limit() + 1);
  EXPECT_THAT(refusal({"policy.hogwild.workers=" + above}),
              ::testing::HasSubstr("set run.allow_oversubscribe=true to start more"));
  EXPECT_EQ(refusal({"policy.hogwild.workers=" + above, "run.allow_oversubscribe=true"}), "");
  // A resumed run keeps the threads it started with (its config may not change): only an int bounds them.
  concord::core::Config resumed = concord::cli::resolve_config({{}, {}, "", -1, 0, 0, "", ""});
  resumed.apply_override("policy.hogwild.workers=" + above);
  EXPECT_NO_THROW(concord::cli::check_config_bounds(resumed, /*machine_limits=*/false));
  EXPECT_THROW(concord::cli::check_config_bounds(resumed), concord::core::ConfigError);
  // Waits: above 0, and short of what would overflow the clock.
  EXPECT_EQ(refusal({"comm.timeout_seconds=0"}), "comm.timeout_seconds must be above 0, got 0");
  EXPECT_EQ(refusal({"comm.timeout_seconds=1e300"}), "comm.timeout_seconds=1e+300 is too large (at most 1000000)");
  // Every problem at once, in one line.
  EXPECT_EQ(refusal({"algo.ppo.update_epochs=0", "comm.timeout_seconds=-1"}),
            "algo.ppo.update_epochs must be at least 1, got 0; comm.timeout_seconds must be above 0, got -1");
}

// Issue 70, items 2 and 3: a rank joining a "store" that sends 64 KiB of 0xff, or that accepts
// and never answers, ends in one line naming the address, exit 1 (not std::length_error's abort,
// not a wait past comm.timeout_seconds blaming a rank 0 that never existed).
TEST(Inputs, ARankJoiningSomethingThatIsNotAStoreEndsInOneLine) {
  const auto root = fresh_dir("not_a_store");
  const auto join = [&root](int port, const std::string& timeout) {
    return run_concord("train --config ppo_cartpole --policy multi_learner --progress off --set comm.timeout_seconds=" +
                           timeout + " --run-root " + root.string(),
                       "RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port));
  };
  {
    concord::test::Listener garbage(concord::test::Listener::Mode::kGarbage);
    const CommandResult result = join(garbage.port(), "8");
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_EQ(result.output,
              "concord: error: rank 1 found no rendezvous store at 127.0.0.1:" + std::to_string(garbage.port()) +
                  ": the service there answered a store query with 0xff (check MASTER_ADDR/MASTER_PORT)\n");
  }
  {
    concord::test::Listener silent(concord::test::Listener::Mode::kSilent);
    const CommandResult result = join(silent.port(), "1");
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_EQ(std::count(result.output.begin(), result.output.end(), '\n'), 1) << result.output;
    EXPECT_THAT(result.output, ::testing::StartsWith("concord: error: rank 1 found no rendezvous store at 127.0.0.1:" +
                                                     std::to_string(silent.port()) +
                                                     ": a process there accepted the connection but did not answer"));
  }
  EXPECT_TRUE(std::filesystem::is_empty(root));
}

// Issue 70, item 11: the smaller inputs. An empty run root is refused (it used to mean ./runs
// silently); a name with a control character or of megabytes is refused by length and position,
// not echoed whole; "did you mean" skips names too far apart in length to be a typo.
TEST(Inputs, EmptyRootsAndNamesWithControlCharactersOrOfMegabytesAreRefused) {
  const auto root = fresh_dir("small_items");
  const CommandResult empty_flag = run_concord("train --run-root ''");
  EXPECT_EQ(empty_flag.exit_code, 2) << empty_flag.output;
  EXPECT_THAT(empty_flag.output, ::testing::HasSubstr("--run-root: expects a directory, got ''"));
  EXPECT_EQ(refusal({"run.root=\"\""}), "run.root is empty: name the directory runs go under (default runs)");
  EXPECT_EQ(refusal({"env.id=\"CartPole\\nv1\""}), "env.id holds a control character (0x0a at byte 8)");
  const auto big = root / "big.toml";
  std::ofstream(big) << "[env]\nid = \"" << std::string(5'000'000, 'x') << "\"\n";
  const CommandResult huge = run_concord("train --config " + big.string() + " --run-root " + root.string());
  EXPECT_EQ(huge.exit_code, 1);
  EXPECT_EQ(huge.output, "concord: error: env.id is 5000000 bytes long (at most 4096)\n");
  EXPECT_TRUE(concord::core::similar_names(std::string(1'000'000, 'x'), {"CartPole-v1"}).empty());
  EXPECT_EQ(concord::core::similar_names("CartPole-v9", {"CartPole-v1"}), std::vector<std::string>{"CartPole-v1"});
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(root), {}), 1);  // big.toml alone
}

// Issue 70, item 10: a FIFO given to `concord eval` is refused (opening it would wait for a writer
// forever), as it is given to --config.
TEST(Inputs, AFifoIsNoCheckpoint) {
  const auto fifo = fresh_dir("fifo") / "checkpoint.ckpt";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  const CommandResult eval = run_concord("eval " + fifo.string());
  EXPECT_EQ(eval.exit_code, 1);
  EXPECT_EQ(eval.output,
            "concord: error: checkpoint '" + fifo.string() + "': is not a regular file (a FIFO, socket or device)\n");
  const CommandResult directory = run_concord("eval " + fifo.parent_path().string());
  EXPECT_EQ(directory.exit_code, 1);
  EXPECT_THAT(directory.output, ::testing::HasSubstr("is not a regular file"));
}

// Issue 70, item 9: a signal in the program's first instants ends it with one line and status
// 128 + n. The signal is made pending before the program starts (blocked, raised, then exec'd with
// it still blocked), so it arrives the moment the program unblocks it: in the executable's
// .preinit_array, before LibTorch's initialisers, whatever the machine's speed.
TEST(Inputs, ASignalAtStartUpEndsTheProgramInOneLine) {
  const auto dir = fresh_dir("early_signal");
  for (const int signal_number : {SIGINT, SIGTERM}) {
    const std::string output = (dir / ("stderr" + std::to_string(signal_number))).string();
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      sigset_t only;
      sigemptyset(&only);
      sigaddset(&only, signal_number);
      sigprocmask(SIG_BLOCK, &only, nullptr);
      raise(signal_number);
      const int fd = open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, STDERR_FILENO);
      dup2(fd, STDOUT_FILENO);
      execl(CONCORD_BINARY, CONCORD_BINARY, "config", static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    EXPECT_EQ(WEXITSTATUS(status), 128 + signal_number);
    EXPECT_EQ(read_text(output),
              std::string("concord: stopped by ") + (signal_number == SIGINT ? "SIGINT" : "SIGTERM") + "\n");
  }
}

}  // namespace
