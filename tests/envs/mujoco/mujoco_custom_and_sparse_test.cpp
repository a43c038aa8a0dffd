// MuJoCo/Custom-v0 (a user's own MJCF as a locomotion task) on a shipped model, with its errors,
// and #Exploration's sparse half-cheetah (MuJoCo/SparseHalfCheetah-v0).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "concord/core/rng.h"
#include "concord/envs/mujoco/model_directory.h"
#include "concord/envs/mujoco/mujoco_env.h"
#include "concord/envs/registry.h"

namespace concord::envs::mujoco {
namespace {

std::unique_ptr<MujocoEnv> make_task(const std::string& id, const EnvOptions& options = {}) {
  std::unique_ptr<Env> env = make_env(id, options);
  auto* task = dynamic_cast<MujocoEnv*>(env.get());
  if (task == nullptr) throw std::logic_error(id + " is not a MujocoEnv");
  env.release();
  return std::unique_ptr<MujocoEnv>(task);
}

std::string error_of(const std::string& id, const EnvOptions& options) {
  try {
    make_env(id, options);
  } catch (const std::exception& error) {
    return error.what();
  }
  return "";
}

TEST(MujocoCustomAndSparseTest, CustomActsWithTheActuatorsAndRewardsTheBodysForwardVelocity) {
  EnvOptions options;
  options.model_file = shipped_model("walker2d.xml");
  options.forward_body = "torso";
  auto env = make_task("MuJoCo/Custom-v0", options);
  const mjModel* m = env->model();
  EXPECT_EQ(env->spec().action_space.flat_size(), m->nu);
  EXPECT_EQ(env->spec().observation_space.flat_size(), m->nq + m->nv);
  EXPECT_DOUBLE_EQ(env->dt(), 5 * m->opt.timestep);
  const int torso = mj_name2id(m, mjOBJ_BODY, "torso");
  std::vector<float> obs(m->nq + m->nv);
  env->reset(1, obs.data());
  for (int i = 0; i < m->nq; ++i) EXPECT_LE(std::abs(env->data()->qpos[i] - m->qpos0[i]), 0.1);
  core::Rng rng(2);
  for (int t = 0; t < 50; ++t) {
    std::vector<float> action(m->nu);
    double squares = 0.0;
    for (float& a : action) {
      a = static_cast<float>(core::uniform(rng, -1.0, 1.0));
      squares += double{a} * a;
    }
    const double x_before = env->data()->xpos[3 * torso];
    Action a;
    a.values = action.data();
    const StepResult result = env->step(a, obs.data());
    const mjData* d = env->data();
    const double expected = (d->xpos[3 * torso] - x_before) / env->dt() - 0.1 * squares;
    EXPECT_NEAR(result.reward, expected, 1e-4 * std::max(1.0, std::abs(expected))) << "step " << t;
    EXPECT_FALSE(result.terminated);
    for (int i = 0; i < m->nq; ++i) EXPECT_EQ(obs[i], static_cast<float>(d->qpos[i]));
    for (int i = 0; i < m->nv; ++i) EXPECT_EQ(obs[m->nq + i], static_cast<float>(d->qvel[i]));
  }
}

TEST(MujocoCustomAndSparseTest, CustomSaysWhatIsMissing) {
  EXPECT_NE(error_of("MuJoCo/Custom-v0", {}).find("env.model_file is required"), std::string::npos);
  EnvOptions options;
  options.model_file = shipped_model("hopper.xml");
  options.forward_body = "tail";
  EXPECT_NE(error_of("MuJoCo/Custom-v0", options).find("has no body 'tail'"), std::string::npos);
  const std::filesystem::path still = std::filesystem::temp_directory_path() / "concord_no_actuators.xml";
  std::ofstream(still)
      << "<mujoco><worldbody><body><joint type='hinge'/><geom size='0.1'/></body></worldbody></mujoco>";
  options.model_file = still.string();
  options.forward_body.reset();
  EXPECT_NE(error_of("MuJoCo/Custom-v0", options).find("has no actuators"), std::string::npos);
  options.model_file = "/no/such/model.xml";
  EXPECT_NE(error_of("MuJoCo/Custom-v0", options).find("'/no/such/model.xml'"), std::string::npos);
  EnvOptions body_elsewhere;
  body_elsewhere.forward_body = "torso";
  EXPECT_NE(error_of("MuJoCo/Hopper-v5", body_elsewhere).find("env.forward_body"), std::string::npos);
}

// A fatal MuJoCo error (out of memory, a broken OpenGL) is one line and exit status 1, not MuJoCo's
// own "Press Enter to exit ..." wait on stdin.
TEST(MujocoCustomAndSparseTest, MujocoFatalErrorIsOneLineAndAnExit) {
  EXPECT_EXIT(
      {
        concord::envs::make_env("MuJoCo/InvertedPendulum-v5");  // installs the handlers
        mju_error("the test's fatal error");
      },
      ::testing::ExitedWithCode(1), "concord: MuJoCo: the test's fatal error");
}

TEST(MujocoCustomAndSparseTest, CustomObservesTheModelsSensorsWhenAsked) {
  // A cart on a rail under a motor, read by three sensors: the rail position, its velocity and the
  // cart's frame position (3 numbers), 5 in all.
  const std::filesystem::path file = std::filesystem::temp_directory_path() / "concord_cart_with_sensors.xml";
  std::ofstream(file) << "<mujoco><worldbody><body name='cart'><joint name='rail' type='slide' axis='1 0 0'/>"
                         "<geom size='0.1' mass='1'/></body></worldbody><actuator><motor joint='rail' gear='10' "
                         "ctrllimited='true' ctrlrange='-1 1'/></actuator><sensor><jointpos joint='rail'/>"
                         "<jointvel joint='rail'/><framepos objtype='body' objname='cart'/></sensor></mujoco>";
  EnvOptions options;
  options.model_file = file.string();
  options.observe_sensors = true;
  auto env = make_task("MuJoCo/Custom-v0", options);
  EXPECT_EQ(env->spec().observation_space.flat_size(), 5);
  std::vector<float> obs(5);
  env->reset(1, obs.data());
  float push = 1.0f;
  Action a;
  a.values = &push;
  for (int t = 0; t < 5; ++t) {
    const double x_before = env->data()->xpos[3];
    const StepResult result = env->step(a, obs.data());
    const mjData* d = env->data();
    // The readings describe the state after the step, as qpos and qvel do.
    EXPECT_EQ(obs[0], static_cast<float>(d->qpos[0]));
    EXPECT_EQ(obs[1], static_cast<float>(d->qvel[0]));
    EXPECT_EQ(obs[2], static_cast<float>(d->xpos[3]));
    const double expected = (d->xpos[3] - x_before) / env->dt() - 0.1;
    EXPECT_NEAR(result.reward, expected, 1e-5 * std::max(1.0, std::abs(expected)));
  }
  EXPECT_GT(obs[1], 0.0f);
  options.model_file = shipped_model("hopper.xml");
  EXPECT_NE(error_of("MuJoCo/Custom-v0", options).find("has no sensors"), std::string::npos);
}

// The x of the robot's centre of mass at its current qpos (VIME's com_subtree of the torso).
double centre_of_mass_x(MujocoEnv& env) {
  env.forward();
  const mjModel* m = env.model();
  const mjData* d = env.data();
  double weighted = 0.0, mass = 0.0;
  for (int b = 1; b < m->nbody; ++b) {
    weighted += m->body_mass[b] * d->xipos[3 * b];
    mass += m->body_mass[b];
  }
  return weighted / mass;
}

TEST(MujocoCustomAndSparseTest, SparseHalfCheetahPaysOneOnlyWithItsCentreOfMassPastFiveMetres) {
  auto env = make_task("MuJoCo/SparseHalfCheetah-v0");
  EXPECT_EQ(env->spec().observation_space.flat_size(), 17);
  EXPECT_EQ(env->spec().max_episode_steps, 1000);
  std::vector<float> obs(17);
  env->reset(3, obs.data());
  core::Rng rng(4);
  int paid = 0;
  for (int t = 0; t < 200; ++t) {
    std::vector<float> action(6);
    for (float& a : action) a = static_cast<float>(core::uniform(rng, -1.0, 1.0));
    // Half the steps start from a root placed near the goal: both sides of the rule are seen.
    if (t % 2 == 0) {
      env->data()->qpos[0] = core::uniform(rng, 4.5, 5.5);
      env->forward();
    }
    Action a;
    a.values = action.data();
    const StepResult result = env->step(a, obs.data());
    EXPECT_EQ(result.reward, centre_of_mass_x(*env) > 5.0 ? 1.0f : 0.0f) << "step " << t;
    EXPECT_FALSE(result.terminated);
    paid += result.reward > 0 ? 1 : 0;
  }
  EXPECT_GT(paid, 20);
  EXPECT_LT(paid, 180);
}

TEST(MujocoCustomAndSparseTest, SparseHalfCheetahJudgesTheCentreOfMassNotTheRootJoint) {
  // Standing still (zero action, no noise) with the root joint and the centre of mass on either
  // side of 5 m: the centre of mass decides.
  EnvOptions options;
  options.reset_noise_scale = 0.0;
  auto env = make_task("MuJoCo/SparseHalfCheetah-v0", options);
  std::vector<float> obs(17);
  env->reset(1, obs.data());
  const double offset = centre_of_mass_x(*env) - env->data()->qpos[0];
  ASSERT_GT(std::abs(offset), 0.02) << "the shipped model's centre of mass sits on its root";
  std::vector<float> still(6, 0.0f);
  Action a;
  a.values = still.data();
  // Root short of the goal by half the offset, centre of mass past it (or the other way round).
  env->data()->qpos[0] = 5.0 - offset / 2;
  env->forward();
  const StepResult result = env->step(a, obs.data());
  const double root = env->data()->qpos[0];
  const double centre = centre_of_mass_x(*env);
  ASSERT_NE(root > 5.0, centre > 5.0) << "root " << root << ", centre of mass " << centre;
  EXPECT_EQ(result.reward, centre > 5.0 ? 1.0f : 0.0f);
}

}  // namespace
}  // namespace concord::envs::mujoco
