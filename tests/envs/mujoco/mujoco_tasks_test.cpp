// The MuJoCo tasks against Gymnasium v5's rules, written out here from the state MuJoCo reports:
// spaces, observation layout, rewards, the health rule, reset noise, seeding, the vector engine,
// and the errors for a bad model file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "concord/core/rng.h"
#include "concord/envs/mujoco/half_cheetah.h"
#include "concord/envs/mujoco/hopper.h"
#include "concord/envs/mujoco/inverted_pendulum.h"
#include "concord/envs/mujoco/model_directory.h"
#include "concord/envs/mujoco/mujoco_env.h"
#include "concord/envs/mujoco/swimmer.h"
#include "concord/envs/mujoco/walker2d.h"
#include "concord/envs/registry.h"
#include "concord/envs/vector_env.h"

namespace concord::envs::mujoco {
namespace {

std::unique_ptr<MujocoEnv> make_task(const std::string& id, const EnvOptions& options = {}) {
  std::unique_ptr<Env> env = make_env(id, options);
  auto* task = dynamic_cast<MujocoEnv*>(env.get());
  if (task == nullptr) throw std::logic_error(id + " is not a MujocoEnv");
  env.release();
  return std::unique_ptr<MujocoEnv>(task);
}

// Random actions in [-1.5, 1.5] x the action bound: outside the control range sometimes, as a
// policy's Gaussian samples are.
std::vector<float> random_action(core::Rng& rng, const Space& space) {
  std::vector<float> action(space.flat_size());
  for (size_t i = 0; i < action.size(); ++i) {
    action[i] = static_cast<float>(core::uniform(rng, 1.5 * space.low()[i], 1.5 * space.high()[i]));
  }
  return action;
}

double square_sum(const std::vector<float>& action) {
  double sum = 0.0;
  for (float a : action) sum += double{a} * a;
  return sum;
}

std::string temp_file(const std::string& name, const std::string& text) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

std::string error_of(const std::string& id, const EnvOptions& options) {
  try {
    make_env(id, options);
  } catch (const std::exception& error) {
    return error.what();
  }
  return "";
}

struct Expected {
  const char* id;
  int64_t obs_dim;
  std::vector<float> low, high;
  std::optional<double> threshold;
};

TEST(MujocoTasksTest, SpecsMatchGymnasiumV5) {
  const std::vector<Expected> tasks = {
      {"MuJoCo/InvertedPendulum-v5", 4, {-3}, {3}, 950.0},
      {"MuJoCo/HalfCheetah-v5", 17, std::vector<float>(6, -1), std::vector<float>(6, 1), 4800.0},
      {"MuJoCo/Hopper-v5", 11, std::vector<float>(3, -1), std::vector<float>(3, 1), 3800.0},
      {"MuJoCo/Walker2d-v5", 17, std::vector<float>(6, -1), std::vector<float>(6, 1), std::nullopt},
      {"MuJoCo/Swimmer-v5", 8, std::vector<float>(2, -1), std::vector<float>(2, 1), 360.0},
      {"MuJoCo/InvertedDoublePendulum-v5", 9, {-1}, {1}, 9100.0},
  };
  for (const Expected& task : tasks) {
    SCOPED_TRACE(task.id);
    const std::unique_ptr<Env> env = make_env(task.id);
    const EnvSpec& spec = env->spec();
    EXPECT_EQ(spec.id, task.id);
    EXPECT_EQ(spec.max_episode_steps, 1000);
    EXPECT_EQ(spec.reward_threshold, task.threshold);
    EXPECT_EQ(spec.observation_space.shape(), std::vector<int64_t>{task.obs_dim});
    EXPECT_EQ(spec.observation_space.dtype(), Dtype::kFloat32);
    EXPECT_TRUE(std::isinf(spec.observation_space.low()[0]));
    ASSERT_EQ(spec.action_space.kind(), Space::Kind::kBox);
    EXPECT_EQ(spec.action_space.low(), task.low);
    EXPECT_EQ(spec.action_space.high(), task.high);
  }
}

TEST(MujocoTasksTest, FrameSkipAndTimestepsGiveGymnasiumsDt) {
  EXPECT_DOUBLE_EQ(make_task("MuJoCo/InvertedPendulum-v5")->dt(), 0.04);
  EXPECT_DOUBLE_EQ(make_task("MuJoCo/HalfCheetah-v5")->dt(), 0.05);
  EXPECT_DOUBLE_EQ(make_task("MuJoCo/Hopper-v5")->dt(), 0.008);
  EXPECT_DOUBLE_EQ(make_task("MuJoCo/Walker2d-v5")->dt(), 0.008);
  EXPECT_DOUBLE_EQ(make_task("MuJoCo/Swimmer-v5")->dt(), 0.04);
  EXPECT_DOUBLE_EQ(make_task("MuJoCo/InvertedDoublePendulum-v5")->dt(), 0.05);
  EnvOptions options;
  options.frame_skip = 1;
  EXPECT_DOUBLE_EQ(make_task("MuJoCo/HalfCheetah-v5", options)->dt(), 0.01);
}

TEST(MujocoTasksTest, EnvsOfOneFileShareOneCompiledModel) {
  const auto a = make_task("MuJoCo/Hopper-v5");
  const auto b = make_task("MuJoCo/Hopper-v5");
  EXPECT_EQ(a->model(), b->model());
  EXPECT_NE(a->data(), b->data());
}

// Observation = [qpos[first:], clip(qvel)], after reset and after steps.
void expect_layout(MujocoEnv& env, int first_qpos, double clip) {
  const int64_t dim = env.spec().observation_space.flat_size();
  std::vector<float> obs(dim);
  env.reset(3, obs.data());
  core::Rng rng(5);
  for (int t = 0; t < 30; ++t) {
    const mjModel* m = env.model();
    const mjData* d = env.data();
    ASSERT_EQ(dim, m->nq - first_qpos + m->nv);
    for (int i = first_qpos; i < m->nq; ++i) EXPECT_EQ(obs[i - first_qpos], static_cast<float>(d->qpos[i]));
    for (int i = 0; i < m->nv; ++i) {
      EXPECT_EQ(obs[m->nq - first_qpos + i], static_cast<float>(std::min(std::max(d->qvel[i], -clip), clip)));
    }
    const std::vector<float> action = random_action(rng, env.spec().action_space);
    Action a;
    a.values = action.data();
    if (env.step(a, obs.data()).terminated) env.reset(std::nullopt, obs.data());
  }
}

TEST(MujocoTasksTest, ObservationsAreQposThenQvel) {
  const double inf = std::numeric_limits<double>::infinity();
  expect_layout(*make_task("MuJoCo/InvertedPendulum-v5"), 0, inf);
  expect_layout(*make_task("MuJoCo/HalfCheetah-v5"), 1, inf);
  expect_layout(*make_task("MuJoCo/Hopper-v5"), 1, 10.0);
  expect_layout(*make_task("MuJoCo/Walker2d-v5"), 1, 10.0);
  expect_layout(*make_task("MuJoCo/Swimmer-v5"), 2, inf);
  EnvOptions keep;
  keep.exclude_current_positions_from_observation = false;
  auto cheetah = make_task("MuJoCo/HalfCheetah-v5", keep);
  EXPECT_EQ(cheetah->spec().observation_space.flat_size(), 18);
  expect_layout(*cheetah, 0, inf);
  auto swimmer = make_task("MuJoCo/Swimmer-v5", keep);
  EXPECT_EQ(swimmer->spec().observation_space.flat_size(), 10);
  expect_layout(*swimmer, 0, inf);
}

// Forward reward from qpos[0] before and after, health by Gymnasium's rule, control cost from the
// action as given (not as MuJoCo clamps it).
struct Rules {
  double forward_weight, ctrl_weight, healthy_reward;
  std::pair<double, double> z, angle;
  double state_limit;  // Hopper's healthy_state_range; infinity for none
  bool terminates;
};

bool healthy_by_rule(const MujocoEnv& env, const Rules& rules) {
  const mjData* d = env.data();
  const mjModel* m = env.model();
  const auto in = [](double v, const std::pair<double, double>& r) { return r.first < v && v < r.second; };
  bool state = true;
  for (int i = 2; i < m->nq; ++i) state = state && std::abs(d->qpos[i]) < rules.state_limit;
  for (int i = 0; i < m->nv; ++i) state = state && std::abs(d->qvel[i]) < rules.state_limit;
  return state && in(d->qpos[1], rules.z) && in(d->qpos[2], rules.angle);
}

// Returns how many episodes ended by termination in `steps` random steps.
int check_rewards(MujocoEnv& env, const Rules& rules, int steps) {
  std::vector<float> obs(env.spec().observation_space.flat_size());
  env.reset(11, obs.data());
  core::Rng rng(12);
  int terminations = 0;
  for (int t = 0; t < steps; ++t) {
    const std::vector<float> action = random_action(rng, env.spec().action_space);
    const double x_before = env.data()->qpos[0];
    Action a;
    a.values = action.data();
    const StepResult result = env.step(a, obs.data());
    const double velocity = (env.data()->qpos[0] - x_before) / env.dt();
    const bool healthy = rules.healthy_reward == 0.0 || healthy_by_rule(env, rules);
    const double expected = rules.forward_weight * velocity + (healthy ? rules.healthy_reward : 0.0) -
                            rules.ctrl_weight * square_sum(action);
    EXPECT_NEAR(result.reward, expected, 1e-4 * std::max(1.0, std::abs(expected))) << "step " << t;
    EXPECT_EQ(result.terminated, rules.terminates && !healthy) << "step " << t;
    // The step's terms under Gymnasium's info names.
    const LocomotionReward& terms = env.last_reward();
    EXPECT_DOUBLE_EQ(terms.x_velocity, velocity) << "step " << t;
    EXPECT_DOUBLE_EQ(terms.forward, rules.forward_weight * velocity) << "step " << t;
    EXPECT_EQ(terms.survive, healthy ? rules.healthy_reward : 0.0) << "step " << t;
    EXPECT_NEAR(terms.ctrl, -rules.ctrl_weight * square_sum(action), 1e-12) << "step " << t;
    EXPECT_EQ(terms.contact, 0.0) << "step " << t;
    EXPECT_EQ(static_cast<float>(terms.total()), result.reward) << "step " << t;
    EXPECT_EQ(terms.x_position, env.data()->qpos[0]) << "step " << t;
    if (result.terminated || result.truncated) {
      terminations += result.terminated ? 1 : 0;
      const LocomotionReward ended = terms;
      env.reset(std::nullopt, obs.data());
      // The reset keeps the ended step's terms apart and clears the last step's, but x_position.
      EXPECT_EQ(env.ended_reward().total(), ended.total()) << "step " << t;
      EXPECT_EQ(env.ended_reward().x_position, ended.x_position) << "step " << t;
      EXPECT_EQ(env.last_reward().total(), 0.0) << "step " << t;
      EXPECT_EQ(env.last_reward().x_position, env.data()->qpos[0]) << "step " << t;
    }
  }
  return terminations;
}

TEST(MujocoTasksTest, HalfCheetahRewardIsForwardVelocityMinusControlCost) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(check_rewards(*make_task("MuJoCo/HalfCheetah-v5"), {1.0, 0.1, 0.0, {}, {}, inf, false}, 300), 0);
  EnvOptions options;
  options.forward_reward_weight = 2.5;
  options.ctrl_cost_weight = 0.0;
  check_rewards(*make_task("MuJoCo/HalfCheetah-v5", options), {2.5, 0.0, 0.0, {}, {}, inf, false}, 50);
}

TEST(MujocoTasksTest, SwimmerRewardIsForwardVelocityMinusControlCost) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(check_rewards(*make_task("MuJoCo/Swimmer-v5"), {1.0, 1e-4, 0.0, {}, {}, inf, false}, 200), 0);
}

TEST(MujocoTasksTest, HopperRewardsHealthAndTerminatesByTheHealthRule) {
  const double inf = std::numeric_limits<double>::infinity();
  const Rules rules{1.0, 1e-3, 1.0, {0.7, inf}, {-0.2, 0.2}, 100.0, true};
  // Random hopping falls over within tens of steps, so both sides of the rule are exercised.
  EXPECT_GT(check_rewards(*make_task("MuJoCo/Hopper-v5"), rules, 600), 3);
}

TEST(MujocoTasksTest, Walker2dRewardsHealthAndTerminatesByTheHealthRule) {
  const Rules rules{1.0, 1e-3, 1.0, {0.8, 2.0}, {-1.0, 1.0}, std::numeric_limits<double>::infinity(), true};
  EXPECT_GT(check_rewards(*make_task("MuJoCo/Walker2d-v5"), rules, 600), 2);
}

TEST(MujocoTasksTest, HealthOptionsChangeTheRule) {
  const double inf = std::numeric_limits<double>::infinity();
  EnvOptions options;
  options.healthy_z_range = {0.5, inf};
  options.healthy_angle_range = {-0.5, 0.5};
  options.healthy_reward = 2.0;
  check_rewards(*make_task("MuJoCo/Hopper-v5", options), {1.0, 1e-3, 2.0, {0.5, inf}, {-0.5, 0.5}, 100.0, true}, 300);
  EnvOptions never;
  never.terminate_when_unhealthy = false;
  EXPECT_EQ(check_rewards(*make_task("MuJoCo/Hopper-v5", never),
                          {1.0, 1e-3, 1.0, {0.7, inf}, {-0.2, 0.2}, 100.0, false}, 300),
            0);
}

TEST(MujocoTasksTest, InvertedPendulumRewardsOneUntilThePoleLeansPastPointTwo) {
  auto env = make_task("MuJoCo/InvertedPendulum-v5");
  std::vector<float> obs(4);
  env->reset(1, obs.data());
  core::Rng rng(2);
  int ended = 0;
  for (int t = 0; t < 400; ++t) {
    const std::vector<float> action = random_action(rng, env->spec().action_space);
    Action a;
    a.values = action.data();
    const StepResult result = env->step(a, obs.data());
    const bool fallen = std::abs(env->data()->qpos[1]) > 0.2;
    EXPECT_EQ(result.terminated, fallen);
    EXPECT_EQ(result.reward, fallen ? 0.0f : 1.0f);
    if (result.terminated) {
      ++ended;
      env->reset(std::nullopt, obs.data());
    }
  }
  EXPECT_GT(ended, 3);
}

TEST(MujocoTasksTest, InvertedDoublePendulumPenalisesTheTipsDistanceAndSpeeds) {
  auto env = make_task("MuJoCo/InvertedDoublePendulum-v5");
  std::vector<float> obs(9);
  env->reset(4, obs.data());
  core::Rng rng(6);
  const int tip = mj_name2id(env->model(), mjOBJ_SITE, "tip");
  int ended = 0;
  for (int t = 0; t < 300; ++t) {
    const std::vector<float> action = random_action(rng, env->spec().action_space);
    Action a;
    a.values = action.data();
    const StepResult result = env->step(a, obs.data());
    const mjData* d = env->data();
    const double x = d->site_xpos[3 * tip], y = d->site_xpos[3 * tip + 2];
    const bool fallen = y <= 1.0;
    const double expected = (fallen ? 0.0 : 10.0) - 0.01 * x * x - (y - 2) * (y - 2) - 1e-3 * d->qvel[1] * d->qvel[1] -
                            5e-3 * d->qvel[2] * d->qvel[2];
    EXPECT_EQ(result.terminated, fallen);
    EXPECT_NEAR(result.reward, expected, 1e-4 * std::max(1.0, std::abs(expected)));
    const float layout[9] = {static_cast<float>(d->qpos[0]),
                             static_cast<float>(std::sin(d->qpos[1])),
                             static_cast<float>(std::sin(d->qpos[2])),
                             static_cast<float>(std::cos(d->qpos[1])),
                             static_cast<float>(std::cos(d->qpos[2])),
                             static_cast<float>(std::clamp(d->qvel[0], -10.0, 10.0)),
                             static_cast<float>(std::clamp(d->qvel[1], -10.0, 10.0)),
                             static_cast<float>(std::clamp(d->qvel[2], -10.0, 10.0)),
                             static_cast<float>(std::clamp(d->qfrc_constraint[0], -10.0, 10.0))};
    if (!result.terminated) {
      for (int i = 0; i < 9; ++i) EXPECT_EQ(obs[i], layout[i]) << "element " << i;
    }
    if (result.terminated) {
      ++ended;
      env->reset(std::nullopt, obs.data());
    }
  }
  EXPECT_GT(ended, 3);
}

TEST(MujocoTasksTest, ResetNoiseStaysWithinItsScale) {
  struct Case {
    const char* id;
    double scale;
    bool normal_velocity;
  };
  for (const Case& task :
       {Case{"MuJoCo/InvertedPendulum-v5", 0.01, false}, Case{"MuJoCo/HalfCheetah-v5", 0.1, true},
        Case{"MuJoCo/Hopper-v5", 5e-3, false}, Case{"MuJoCo/Walker2d-v5", 5e-3, false},
        Case{"MuJoCo/Swimmer-v5", 0.1, false}, Case{"MuJoCo/InvertedDoublePendulum-v5", 0.1, true}}) {
    SCOPED_TRACE(task.id);
    auto env = make_task(task.id);
    std::vector<float> obs(env->spec().observation_space.flat_size());
    double qpos_max = 0.0, qvel_max = 0.0, qvel_square = 0.0;
    int64_t qvel_count = 0;
    for (int k = 0; k < 200; ++k) {
      env->reset(k == 0 ? std::optional<uint64_t>(7) : std::nullopt, obs.data());
      const mjModel* m = env->model();
      for (int i = 0; i < m->nq; ++i) qpos_max = std::max(qpos_max, std::abs(env->data()->qpos[i] - m->qpos0[i]));
      for (int i = 0; i < m->nv; ++i) {
        qvel_max = std::max(qvel_max, std::abs(env->data()->qvel[i]));
        qvel_square += env->data()->qvel[i] * env->data()->qvel[i];
        ++qvel_count;
      }
    }
    EXPECT_LE(qpos_max, task.scale);
    EXPECT_GT(qpos_max, 0.9 * task.scale);
    if (task.normal_velocity) {
      // scale x N(0, 1): the standard deviation is the scale, and some draws exceed it.
      EXPECT_NEAR(std::sqrt(qvel_square / qvel_count), task.scale, 0.1 * task.scale);
      EXPECT_GT(qvel_max, 2 * task.scale);
    } else {
      EXPECT_LE(qvel_max, task.scale);
    }
  }
  EnvOptions quiet;
  quiet.reset_noise_scale = 0.0;
  auto env = make_task("MuJoCo/Hopper-v5", quiet);
  std::vector<float> obs(11);
  env->reset(1, obs.data());
  for (int i = 0; i < env->model()->nq; ++i) EXPECT_EQ(env->data()->qpos[i], env->model()->qpos0[i]);
}

std::vector<float> trajectory(const std::string& id, uint64_t seed, int steps) {
  auto env = make_task(id);
  const int64_t dim = env->spec().observation_space.flat_size();
  std::vector<float> out(dim);
  env->reset(seed, out.data());
  core::Rng rng(99);
  std::vector<float> obs(dim);
  for (int t = 0; t < steps; ++t) {
    const std::vector<float> action = random_action(rng, env->spec().action_space);
    Action a;
    a.values = action.data();
    const StepResult result = env->step(a, obs.data());
    out.insert(out.end(), obs.begin(), obs.end());
    out.push_back(result.reward);
    if (result.terminated) env->reset(std::nullopt, obs.data());
  }
  return out;
}

TEST(MujocoTasksTest, SameSeedSameTrajectoryOtherSeedAnother) {
  for (const char* id : {"MuJoCo/HalfCheetah-v5", "MuJoCo/Hopper-v5"}) {
    SCOPED_TRACE(id);
    EXPECT_EQ(trajectory(id, 5, 60), trajectory(id, 5, 60));
    EXPECT_NE(trajectory(id, 5, 60), trajectory(id, 6, 60));
  }
}

std::vector<float> vector_rollout(int num_threads) {
  VectorEnvConfig config;
  config.env_id = "MuJoCo/Hopper-v5";
  config.num_envs = 4;
  config.num_threads = num_threads;
  config.seed = 17;
  config.chunk_size = 1;
  VectorEnv envs(config);
  std::vector<float> out;
  std::vector<float> actions(4 * 3);
  core::Rng rng(3);
  const auto record = [&out](const Batch& batch) {
    const float* obs = batch.observations_as<float>();
    out.insert(out.end(), obs, obs + batch.size * batch.obs_dim);
    out.insert(out.end(), batch.rewards, batch.rewards + batch.size);
  };
  record(envs.reset());
  for (int t = 0; t < 60; ++t) {
    for (float& a : actions) a = static_cast<float>(core::uniform(rng, -1, 1));
    record(envs.step(actions.data()));
  }
  return out;
}

TEST(MujocoTasksTest, VectorEnvGivesTheSameStepsOnOneOrTwoThreads) {
  const std::vector<float> one = vector_rollout(1);
  EXPECT_EQ(one.size(), 61u * 4 * 12);
  EXPECT_EQ(vector_rollout(2), one);
}

TEST(MujocoTasksTest, AsyncVectorEnvStepsMujocoEnvs) {
  VectorEnvConfig config;
  config.env_id = "MuJoCo/HalfCheetah-v5";
  config.num_envs = 4;
  config.num_threads = 2;
  config.batch_size = 2;
  config.seed = 1;
  VectorEnv envs(config);
  envs.async_reset();
  std::vector<float> actions(2 * 6, 0.5f);
  for (int k = 0; k < 20; ++k) {
    const Batch batch = envs.recv();
    ASSERT_EQ(batch.size, 2);
    const float* obs = batch.observations_as<float>();
    for (int64_t i = 0; i < batch.size * batch.obs_dim; ++i) ASSERT_TRUE(std::isfinite(obs[i]));
    const std::vector<int32_t> ids(batch.env_ids, batch.env_ids + batch.size);
    envs.send(actions.data(), ids.data(), 2);
  }
}

TEST(MujocoTasksTest, AModelFileThatIsMissingOrBrokenIsOneLineWithMujocosMessage) {
  EnvOptions missing;
  missing.model_file = "/nonexistent/cheetah.xml";
  const std::string absent = error_of("MuJoCo/HalfCheetah-v5", missing);
  EXPECT_NE(absent.find("MuJoCo model file '/nonexistent/cheetah.xml': "), std::string::npos) << absent;
  EXPECT_EQ(absent.find('\n'), std::string::npos) << absent;

  EnvOptions broken;
  broken.model_file = temp_file("concord_broken_model.xml", "<mujoco><worldbody><body></mujoco>");
  const std::string bad = error_of("MuJoCo/HalfCheetah-v5", broken);
  EXPECT_NE(bad.find("MuJoCo model file '" + *broken.model_file + "': "), std::string::npos) << bad;
  EXPECT_NE(bad.find("rror"), std::string::npos) << bad;  // MuJoCo's own "XML Error ..."
  EXPECT_EQ(bad.find('\n'), std::string::npos) << bad;
}

TEST(MujocoTasksTest, AModelThatDoesNotFitTheTaskNamesWhatIsMissing) {
  EnvOptions pendulum;
  pendulum.model_file = shipped_model("inverted_pendulum.xml");
  EXPECT_EQ(error_of("MuJoCo/HalfCheetah-v5", pendulum),
            "MuJoCo/HalfCheetah-v5: model file '" + *pendulum.model_file + "' has 1 actuators, the task needs 6");
  EnvOptions unlimited;
  unlimited.model_file =
      temp_file("concord_unlimited_model.xml",
                "<mujoco><worldbody><body><joint name='slider' type='slide'/><geom size='0.1'/><body>"
                "<joint name='hinge' type='hinge' axis='0 1 0'/><geom size='0.1' pos='0 0 0.5'/></body></body>"
                "</worldbody><actuator><motor joint='slider' name='push'/></actuator></mujoco>");
  EXPECT_EQ(error_of("MuJoCo/InvertedPendulum-v5", unlimited),
            "MuJoCo/InvertedPendulum-v5: model file '" + *unlimited.model_file +
                "': actuator 'push' has no control range (ctrllimited), which the action space needs");
}

TEST(MujocoTasksTest, BadOptionsAreRefusedByName) {
  EnvOptions sticky;
  sticky.sticky_action_probability = 0.2;
  EXPECT_EQ(error_of("MuJoCo/HalfCheetah-v5", sticky),
            "env.sticky_action_probability is set, but MuJoCo/HalfCheetah-v5 has no such setting");
  EnvOptions health;
  health.healthy_reward = 1.0;
  EXPECT_EQ(error_of("MuJoCo/HalfCheetah-v5", health),
            "env.healthy_reward is set, but MuJoCo/HalfCheetah-v5 has no such setting");
  EnvOptions skip;
  skip.frame_skip = 0;
  EXPECT_EQ(error_of("MuJoCo/Hopper-v5", skip), "MuJoCo/Hopper-v5: env.frame_skip = 0 must be >= 1");
  EnvOptions noise;
  noise.reset_noise_scale = -1.0;
  EXPECT_EQ(error_of("MuJoCo/Hopper-v5", noise),
            "MuJoCo/Hopper-v5: env.reset_noise_scale = -1 must be a finite number >= 0");
  EXPECT_EQ(parse_range("0.7, inf", "k"), std::make_pair(0.7, std::numeric_limits<double>::infinity()));
  EXPECT_THROW(parse_range("0.7", "k"), std::invalid_argument);
  EXPECT_THROW(parse_range("a,b", "k"), std::invalid_argument);
  EnvOptions backwards;
  backwards.healthy_z_range = {2.0, 1.0};
  EXPECT_NE(error_of("MuJoCo/Walker2d-v5", backwards).find("env.healthy_z_range"), std::string::npos);
}

TEST(MujocoTasksTest, NonFiniteActionsAreRefused) {
  auto env = make_task("MuJoCo/InvertedPendulum-v5");
  std::vector<float> obs(4);
  env->reset(1, obs.data());
  float nan = std::numeric_limits<float>::quiet_NaN();
  Action a;
  a.values = &nan;
  EXPECT_THROW(env->step(a, obs.data()), std::invalid_argument);
}

TEST(MujocoTasksTest, DivergingPhysicsEndsTheEpisodeAndIsCounted) {
  // A cart pushed with a force of 3e15 N: MuJoCo finds a huge acceleration, resets the state and
  // warns; the env ends the episode with reward 0 and counts the step.
  EnvOptions options;
  options.model_file = temp_file(
      "concord_exploding_model.xml",
      "<mujoco><worldbody><body><joint name='slider' type='slide' axis='1 0 0'/><geom size='0.1'/><body>"
      "<joint name='hinge' type='hinge' axis='0 1 0'/><geom type='capsule' size='0.05' fromto='0 0 0 0 0 "
      "0.6'/></body></body>"
      "</worldbody><actuator><motor joint='slider' gear='1e15' ctrllimited='true' ctrlrange='-3 3'/></actuator>"
      "</mujoco>");
  auto env = make_task("MuJoCo/InvertedPendulum-v5", options);
  std::vector<float> obs(4);
  env->reset(1, obs.data());
  const int64_t before = MujocoEnv::unstable_steps_in_process();
  float push = 3.0f;
  Action a;
  a.values = &push;
  const StepResult result = env->step(a, obs.data());
  EXPECT_TRUE(result.terminated);
  EXPECT_EQ(result.reward, 0.0f);
  EXPECT_EQ(env->unstable_steps(), 1);
  EXPECT_EQ(MujocoEnv::unstable_steps_in_process(), before + 1);
  for (float x : obs) EXPECT_TRUE(std::isfinite(x));
}

}  // namespace
}  // namespace concord::envs::mujoco
