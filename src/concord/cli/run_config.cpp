#include "concord/cli/run_config.h"

#include <limits>

#include <CLI/CLI.hpp>

#include "concord/algos/algorithm_registry.h"
#include "concord/cli/config_bounds.h"
#include "concord/cli/config_presets.h"
#include "concord/envs/registry.h"
#include "concord/explore/bonus_registry.h"
#include "concord/policies/policy_registry.h"
#include "concord/supervised/fit_config.h"
#include "concord/supervised/gan_config.h"
#include "concord/sync/sync_registry.h"

namespace concord::cli {

namespace {

// The MuJoCo tasks' settings (Gymnasium v5's keyword arguments). Their defaults differ by task, so
// a number left at nan, a string left empty and frame_skip left at 0 mean the task's own value.
void declare_mujoco_env_keys(core::ConfigSchema& schema) {
  const double unset = std::numeric_limits<double>::quiet_NaN();
  schema.declare("env.model_file", std::string(""),
                 "MuJoCo tasks: an MJCF file in place of the shipped model (e.g. Gymnasium's own assets); empty: "
                 "the shipped one");
  schema.declare("env.frame_skip", int64_t{0}, "MuJoCo tasks: physics steps per env step; 0: the task's own");
  const char* const weights[][2] = {
      {"env.forward_reward_weight", "weight of the forward velocity in the reward"},
      {"env.ctrl_cost_weight", "weight of the control cost sum(a^2)"},
      {"env.healthy_reward", "reward for each step in a healthy state (InvertedDoublePendulum: the alive bonus)"},
      {"env.reset_noise_scale", "scale of the noise added to the initial qpos and qvel"},
      {"env.contact_cost_weight", "Ant, Humanoid: weight of the contact cost"},
      {"env.reward_dist_weight", "Reacher: weight of the fingertip's distance to the target"},
      {"env.reward_control_weight", "Reacher: weight of the control cost sum(a^2)"},
  };
  for (const auto& [key, doc] : weights) {
    schema.declare(key, unset, std::string("MuJoCo tasks: ") + doc + "; nan: the task's own");
  }
  schema.declare("env.healthy_z_range", std::string(""),
                 "MuJoCo Hopper, Walker2d: \"low,high\" open interval of the torso height that is healthy (inf "
                 "allowed); empty: the task's own");
  schema.declare("env.healthy_angle_range", std::string(""),
                 "MuJoCo Hopper, Walker2d: \"low,high\" open interval of the torso pitch that is healthy; empty: "
                 "the task's own");
  schema.declare("env.contact_force_range", std::string(""),
                 "MuJoCo Ant: \"low,high\" range the contact forces are clipped to (observation and cost); empty: "
                 "the task's own");
  schema.declare("env.contact_cost_range", std::string(""),
                 "MuJoCo Humanoid: \"low,high\" range the contact cost is clipped to; empty: the task's own");
  schema.declare("env.include_cfrc_ext_in_observation", true,
                 "MuJoCo Ant, Humanoid, HumanoidStandup: observe the bodies' contact forces (cfrc_ext)");
  schema.declare("env.include_cinert_in_observation", true,
                 "MuJoCo Humanoid, HumanoidStandup: observe the bodies' inertias (cinert)");
  schema.declare("env.include_cvel_in_observation", true,
                 "MuJoCo Humanoid, HumanoidStandup: observe the bodies' velocities (cvel)");
  schema.declare("env.include_qfrc_actuator_in_observation", true,
                 "MuJoCo Humanoid, HumanoidStandup: observe the actuator forces (qfrc_actuator)");
  schema.declare("env.uph_cost_weight", unset,
                 "MuJoCo HumanoidStandup: weight of the torso's height over the timestep; nan: the task's own (1)");
  schema.declare("env.impact_cost_weight", unset,
                 "MuJoCo HumanoidStandup: weight of sum(cfrc_ext^2) in the impact cost; nan: the task's own (5e-7)");
  schema.declare("env.impact_cost_range", std::string(""),
                 "MuJoCo HumanoidStandup: \"low,high\" range the impact cost is clipped to; empty: the task's own");
  schema.declare("env.observe_sensors", false,
                 "MuJoCo/Custom-v0: observe the model's sensors (sensordata) in place of qpos and qvel");
  schema.declare("env.forward_body", std::string(""),
                 "MuJoCo/Custom-v0: the body whose forward (x) velocity is rewarded; empty: the first body "
                 "under the world");
  schema.declare("env.exclude_current_positions_from_observation", true,
                 "MuJoCo tasks: leave the root's x (Swimmer: x and y) out of the observation");
  schema.declare("env.terminate_when_unhealthy", true, "MuJoCo Hopper, Walker2d: an unhealthy state ends the episode");
}

}  // namespace

core::ConfigSchema concord_schema() {
  core::ConfigSchema schema;
  schema.declare("run.seed", int64_t{1}, "Seed for environments, networks and sampling");
  schema.declare("run.root", std::string("runs"), "Directory under which each run gets its own directory");
  schema.declare("run.log_level", std::string("info"), "trace, debug, info, warn, error or off");
  schema.declare("run.progress", std::string("auto"),
                 "auto (a bar on a terminal, plain lines otherwise), bar, plain or off");
  schema.declare("run.progress_interval_seconds", 5.0, "Seconds between plain progress lines");
  schema.declare("log.csv", true, "Write metrics to metrics.csv in the run directory");
  schema.declare("log.tensorboard", true, "Write metrics to TensorBoard event files in the run directory");
  schema.declare("log.interval_seconds", 1.0, "Seconds between metric records of `concord rollout`");
  schema.declare("log.interval_steps", int64_t{0},
                 "Training: env steps between metric records (CSV, TensorBoard); 0 records every update");

  schema.declare("env.id", std::string("CartPole-v1"), "Environment id (see `concord envs`)");
  schema.declare("env.num_envs", int64_t{16}, "Environments stepped as one batch");
  schema.declare("env.num_threads", int64_t{1}, "Threads stepping the environments (the caller counts as one)");
  schema.declare("env.batch_size", int64_t{0},
                 "0: synchronous; 0 < b < num_envs: asynchronous, each recv returns the first b envs ready");
  schema.declare("env.recv_timeout_seconds", 60.0, "Longest wait for an asynchronous batch before failing");
  schema.declare("env.step_timeout_seconds", envs::kDefaultStepTimeoutSeconds,
                 "Python envs: the longest one reset() or step() may take before the run fails naming the env "
                 "(a watchdog thread stops a call past it; 0: no bound, no watch); other environments refuse a "
                 "value other than the default");
  schema.declare("env.sticky_action_probability", 0.1,
                 "MinAtar: chance that the previous action is repeated instead of the chosen one; other "
                 "environments refuse a value other than the default");
  schema.declare("env.max_episode_steps", int64_t{0},
                 "Truncate episodes after this many steps, in place of the environment's own limit "
                 "(Gymnasium's max_episode_steps); 0: the environment's own");
  schema.declare("env.difficulty_ramping", true,
                 "MinAtar: games speed up as they go on; other environments refuse a value other than the default");
  declare_mujoco_env_keys(schema);

  schema.declare("run.device", std::string("cpu"), "Where networks and rollouts live: cpu, cuda, cuda:N or auto");
  schema.declare("run.torch_threads", int64_t{1}, "LibTorch intra-op threads (small networks run fastest on one)");
  schema.declare("run.allow_oversubscribe", false,
                 "Allow thread counts (env.num_threads, run.torch_threads, a policy's workers, actors, agents, "
                 "predictors, trainers; fit.workers, gan.pairs) above 8 per hardware thread of this machine");
  schema.declare("run.flush_denormals", true,
                 "Treat floats below 1.2e-38 as zero on every training thread (the CPU's FTZ and DAZ modes): "
                 "Adam's moments of parameters that get no gradient decay into such values, which the CPU "
                 "computes on many times slower");

  std::string algorithms;
  for (const std::string& name : algos::algorithm_names()) algorithms += (algorithms.empty() ? "" : ", ") + name;
  schema.declare(
      "train.algo", std::string("ppo"),
      "Algorithm: " + algorithms + " (dqn and sac learn off-policy: policies " + policies::off_policy_policies() + ")");
  schema.declare("train.policy", std::string("single"), "Distribution policy: " + policies::policy_summaries());
  schema.declare("train.total_timesteps", int64_t{500000}, "Environment steps to train for, over all envs");
  schema.declare("train.checkpoint_interval_steps", int64_t{100000}, "Steps between checkpoints (one more at the end)");
  schema.declare("train.checkpoint_interval_seconds", 0.0,
                 "Also checkpoint when this many seconds of wall time passed since the last one (0: off)");
  schema.declare("train.capture_video", false,
                 "Film one episode of the agent into RUN/videos/step_STEP.mp4 at each checkpoint and at the end "
                 "(--capture-video)");
  schema.declare("train.keep_checkpoints", int64_t{1},
                 "Checkpoints kept: 1 keeps only checkpoint.ckpt; K > 1 also keeps each as checkpoint-STEP.ckpt, "
                 "the K newest of them");
  algos::declare_algorithm_keys(schema);
  policies::declare_policy_keys(schema);
  explore::declare_explore_keys(schema);
  sync::declare_sync_keys(schema);

  schema.declare("comm.backend", std::string("gloo"),
                 "c10d backend between processes: gloo (CPU), nccl (CUDA builds), mpi (LibTorch built with MPI)");
  schema.declare("comm.timeout_seconds", 60.0,
                 "Bound on the rendezvous and on every collective or message between processes (and, in `concord fit`, "
                 "between thread replicas): it must cover what one rank does alone between two (an evaluation, a "
                 "federated round's unequal share)");
  schema.declare("comm.store_on_all_interfaces", false,
                 "Rank 0's rendezvous store (no authentication) listens on every interface instead of only on "
                 "loopback (loopback MASTER_ADDR) or on its address towards MASTER_ADDR");
  schema.declare("comm.interface", std::string(""),
                 "Network interface for Gloo (e.g. eth0); empty: GLOO_SOCKET_IFNAME, else the route to MASTER_ADDR");

  schema.declare("eval.episodes", int64_t{10}, "Episodes `concord eval` runs");

  supervised::declare_fit_keys(schema);
  supervised::declare_gan_keys(schema);

  schema.declare("rollout.steps", int64_t{1000000}, "Environment steps a random-policy rollout takes");
  return schema;
}

CLI::Validator config_file_or_preset() {
  return CLI::Validator(
      [](std::string& text) {
        std::string error;
        const std::string resolved = resolve_config_file(text, error);
        if (!resolved.empty()) text = resolved;
        return error;
      },
      "FILE or PRESET");
}

CLI::Validator count_between(int64_t lowest, int64_t highest) {
  return CLI::Validator(
      [lowest, highest](std::string& text) -> std::string {
        int64_t value = 0;
        const bool whole = CLI::detail::lexical_cast(text, value);
        if (whole && value >= lowest && value <= highest) return "";
        return "expects a whole number from " + std::to_string(lowest) + " to " + std::to_string(highest) + ", got '" +
               text + "'";
      },
      "INT in [" + std::to_string(lowest) + " - " + std::to_string(highest) + "]");
}

void add_run_flags(CLI::App& command, RunFlags& flags) {
  command
      .add_option("-c,--config", flags.config_files,
                  "TOML config file(s), merged in order, or shipped presets by name (configs/NAME.toml)")
      ->transform(config_file_or_preset())
      ->allow_extra_args(false);  // one file per --config, so that `concord config --config X SECTION` works
  command.add_option("--set", flags.overrides, "Override a config key: --set env.num_envs=32 (repeatable)");
  command.add_option("--env", flags.env_id, "Environment id (env.id)");
  command.add_option("--seed", flags.seed, "Seed (run.seed)")->transform(count_between(0, int64_t{1} << 62));
  command.add_option("--num-envs", flags.num_envs, "Number of environments (env.num_envs)")
      ->transform(count_between(1, int64_t{1} << 20));
  command.add_option("--threads", flags.num_threads, "Environment threads (env.num_threads)")
      ->transform(count_between(1, int64_t{1} << 20));
  command.add_option("--run-root", flags.run_root, "Directory for run directories (run.root)")
      ->check(CLI::Validator(
          [](std::string& text) { return text.empty() ? std::string("expects a directory, got ''") : std::string(); },
          "DIR"));
  command.add_option("--progress", flags.progress, "auto, bar, plain or off (run.progress)")
      ->check(CLI::IsMember({"auto", "bar", "plain", "off"}));
}

core::Config resolve_config(const RunFlags& flags) {
  core::Config config(concord_schema());
  // The CLI's --config resolved presets already; callers such as Python's concord.train did not.
  for (const std::string& file : flags.config_files) {
    std::string error;
    const std::string resolved = resolve_config_file(file, error);
    if (resolved.empty()) throw core::ConfigError("config: " + error);
    config.merge_file(resolved);
  }
  for (const std::string& assignment : flags.overrides) config.apply_override(assignment);
  if (!flags.env_id.empty()) config.set("env.id", flags.env_id, "--env");
  if (flags.seed >= 0) config.set("run.seed", flags.seed, "--seed");
  if (flags.num_envs > 0) config.set("env.num_envs", flags.num_envs, "--num-envs");
  if (flags.num_threads > 0) config.set("env.num_threads", flags.num_threads, "--threads");
  if (!flags.run_root.empty()) config.set("run.root", flags.run_root, "--run-root");
  if (!flags.progress.empty()) config.set("run.progress", flags.progress, "--progress");
  check_config_bounds(config);
  return config;
}

comm::ConnectOptions connect_options(const core::Config& config) {
  comm::ConnectOptions options;
  options.backend = config.get_string("comm.backend");
  options.interface = config.get_string("comm.interface");
  options.store_on_all_interfaces = config.get_bool("comm.store_on_all_interfaces");
  return options;
}

}  // namespace concord::cli
