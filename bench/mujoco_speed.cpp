// mujoco_speed: env steps per second of the MuJoCo tasks in the vector engine, beside the physics'
// own limit on the same model.
//
// For each task (its shipped model, or --model-dir's files of the same names):
//   limit      MuJoCo alone: mj_step on one mjData of the same model with random controls, in this
//              program, in physics steps/s divided by the task's frame_skip (env steps/s a task
//              could reach if it cost nothing beyond the physics);
//   testspeed  `mujoco-testspeed <model> <steps> 1 0.01` (MuJoCo's own tool, one thread), its
//              "Steps per second" divided by frame_skip; "-" where the tool is not installed;
//   sync-kT    VectorEnv step() over --num-envs envs on k threads, random actions drawn every step
//              included, in env steps/s per thread (per core), and as a share of `limit` and of
//              `testspeed` (the target: within 10% of testspeed).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <mujoco/mujoco.h>

#include "concord/core/rng.h"
#include "concord/envs/mujoco/model_directory.h"
#include "concord/envs/mujoco/mujoco_env.h"
#include "concord/envs/random_actions.h"
#include "concord/envs/registry.h"
#include "concord/envs/vector_env.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Task {
  std::string id;
  std::string model;  // file name under assets/mujoco
};

const std::vector<Task> kTasks = {{"MuJoCo/InvertedPendulum-v5", "inverted_pendulum.xml"},
                                  {"MuJoCo/HalfCheetah-v5", "half_cheetah.xml"},
                                  {"MuJoCo/Hopper-v5", "hopper.xml"},
                                  {"MuJoCo/Walker2d-v5", "walker2d.xml"},
                                  {"MuJoCo/Swimmer-v5", "swimmer.xml"},
                                  {"MuJoCo/InvertedDoublePendulum-v5", "inverted_double_pendulum.xml"},
                                  {"MuJoCo/Reacher-v5", "reacher.xml"},
                                  {"MuJoCo/Ant-v5", "ant.xml"},
                                  {"MuJoCo/Humanoid-v5", "humanoid.xml"},
                                  {"MuJoCo/HumanoidStandup-v5", "humanoid_standup.xml"}};

template <typename Step>
double measure(double seconds, Step&& step) {
  const auto warmup_end = Clock::now() + std::chrono::duration<double>(std::min(0.1, seconds / 5));
  while (Clock::now() < warmup_end) step();
  int64_t steps = 0;
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(seconds);
  auto now = start;
  while (now < end) {
    steps += step();
    now = Clock::now();
  }
  return static_cast<double>(steps) / std::chrono::duration<double>(now - start).count();
}

// Physics steps/s of mj_step alone on `path`, controls redrawn uniformly in their ranges every 100
// steps (testspeed perturbs its controls likewise), resetting where the state diverges.
double raw_physics(const std::string& path, double seconds) {
  char error[1000] = "";
  mjModel* m = mj_loadXML(path.c_str(), nullptr, error, sizeof error);
  if (m == nullptr) throw std::runtime_error(path + ": " + error);
  mjData* d = mj_makeData(m);
  concord::core::Rng rng(1);
  int64_t count = 0;
  const double rate = measure(seconds, [&] {
    if (count++ % 100 == 0) {
      for (int i = 0; i < m->nu; ++i) {
        d->ctrl[i] = concord::core::uniform(rng, m->actuator_ctrlrange[2 * i], m->actuator_ctrlrange[2 * i + 1]);
      }
    }
    mj_step(m, d);
    return int64_t{1};
  });
  mj_deleteData(d);
  mj_deleteModel(m);
  return rate;
}

// mujoco-testspeed's "Steps per second", or 0 where it cannot run.
double testspeed(const std::string& path, int steps) {
  const std::string command = "mujoco-testspeed '" + path + "' " + std::to_string(steps) + " 1 0.01 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return 0.0;
  std::array<char, 512> line{};
  double rate = 0.0;
  while (fgets(line.data(), static_cast<int>(line.size()), pipe) != nullptr) {
    const std::string text(line.data());
    if (const auto colon = text.find("Steps per second"); colon != std::string::npos) {
      rate = std::strtod(text.c_str() + text.find(':', colon) + 1, nullptr);
    }
  }
  pclose(pipe);
  return rate;
}

double vector_sync(const std::string& id, const concord::envs::EnvOptions& options, int num_envs, int threads,
                   double seconds) {
  concord::envs::VectorEnvConfig config;
  config.env_id = id;
  config.num_envs = num_envs;
  config.num_threads = threads;
  config.seed = 1;
  config.options = options;
  concord::envs::VectorEnv env(config);
  concord::core::Rng rng(7);
  std::vector<float> actions(static_cast<size_t>(num_envs * env.act_dim()));
  env.reset();
  return measure(seconds, [&] {
    concord::envs::sample_actions(env.spec().action_space, rng, num_envs, actions.data());
    env.step(actions.data());
    return int64_t{num_envs};
  });
}

std::string load_average() {
  std::ifstream file("/proc/loadavg");
  std::string one, five, fifteen;
  file >> one >> five >> fifteen;
  return one.empty() ? "unknown" : one + " " + five + " " + fifteen;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"MuJoCo tasks' env steps per second per core, beside mj_step's and mujoco-testspeed's limit"};
  double seconds = 2.0;
  int num_envs = 16;
  int testspeed_steps = 20000;
  std::vector<int> threads_list = {1, 2};
  std::string model_dir;
  bool quick = false;
  app.add_option("--seconds", seconds, "Wall time measured per cell")->check(CLI::PositiveNumber);
  app.add_option("--num-envs", num_envs, "Envs of the vector env")->check(CLI::PositiveNumber);
  app.add_option("--threads", threads_list, "Thread counts (the calling thread included)");
  app.add_option("--testspeed-steps", testspeed_steps, "Physics steps mujoco-testspeed runs (0: skip it)");
  app.add_option("--model-dir", model_dir, "Run the tasks on this folder's models of the same file names");
  std::vector<std::string> only;
  app.add_option("--tasks", only, "Only these task ids (default: every task)");
  app.add_flag("--quick", quick, "0.2 s a cell, 2,000 testspeed steps: a smoke run");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    seconds = 0.2;
    testspeed_steps = 2000;
  }

  for (const std::string& id : only) {
    if (std::none_of(kTasks.begin(), kTasks.end(), [&](const Task& task) { return task.id == id; })) {
      std::fprintf(stderr, "mujoco_speed: --tasks: '%s' is not one of the MuJoCo tasks measured here\n", id.c_str());
      return 2;
    }
  }
  std::printf("mujoco_speed: env steps/s per core (thousands); %d envs, %.1f s a cell, random actions included\n",
              num_envs, seconds);
  std::printf("machine: %u hardware threads, load average at start %s; MuJoCo %s\n",
              std::thread::hardware_concurrency(), load_average().c_str(), mj_versionString());
  std::printf("limit = mj_step alone on the same model / frame_skip; testspeed likewise from mujoco-testspeed\n\n");
  std::printf("%-34s %4s %9s %9s", "task", "skip", "limit", "testspeed");
  for (int t : threads_list) {
    std::printf(" %9s %6s %6s", ("sync-" + std::to_string(t) + "T").c_str(), "/limit", "/tool");
  }
  std::printf("\n");
  for (const Task& task : kTasks) {
    if (!only.empty() && std::find(only.begin(), only.end(), task.id) == only.end()) continue;
    concord::envs::EnvOptions options;
    std::string path = concord::envs::mujoco::shipped_model(task.model);
    if (!model_dir.empty()) {
      path = model_dir + "/" + task.model;
      options.model_file = path;
    }
    const auto env = concord::envs::make_env(task.id, options);
    const int skip = dynamic_cast<const concord::envs::mujoco::MujocoEnv&>(*env).frame_skip();
    const double limit = raw_physics(path, seconds) / skip;
    const double tool = testspeed_steps > 0 ? testspeed(path, testspeed_steps) / skip : 0.0;
    std::printf("%-34s %4d %9.1f", task.id.c_str(), skip, limit / 1e3);
    if (tool > 0) {
      std::printf(" %9.1f", tool / 1e3);
    } else {
      std::printf(" %9s", "-");
    }
    std::fflush(stdout);
    for (int t : threads_list) {
      const double per_core = vector_sync(task.id, options, num_envs, t, seconds) / t;
      std::printf(" %9.1f %5.0f%%", per_core / 1e3, 100.0 * per_core / limit);
      if (tool > 0) {
        std::printf(" %5.0f%%", 100.0 * per_core / tool);
      } else {
        std::printf(" %6s", "-");
      }
      std::fflush(stdout);
    }
    std::printf("\n");
  }
  std::printf("\nload average at end %s\n", load_average().c_str());
  return 0;
}
