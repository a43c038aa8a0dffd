// Reacher-v5, Ant-v5, Humanoid-v5 and HumanoidStandup-v5 against Gymnasium v5's rules, written out
// here from the state MuJoCo reports after each step: spaces, observation layouts, every reward
// term, the health rules and reset distributions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "concord/core/rng.h"
#include "concord/envs/mujoco/humanoid_observation.h"
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

void expect_reward(float reward, double expected, int step) {
  EXPECT_NEAR(reward, expected, 1e-4 * std::max(1.0, std::abs(expected))) << "step " << step;
}

TEST(MujocoReacherAntHumanoidTest, SpecsMatchGymnasiumV5) {
  struct Expected {
    const char* id;
    int64_t obs_dim;
    float bound;
    int64_t actions;
    int max_steps;
    std::optional<double> threshold;
    double dt;
  };
  for (const Expected& task : {Expected{"MuJoCo/Reacher-v5", 10, 1.0f, 2, 50, -3.75, 0.02},
                               Expected{"MuJoCo/Ant-v5", 105, 1.0f, 8, 1000, 6000.0, 0.05},
                               Expected{"MuJoCo/Humanoid-v5", 348, 0.4f, 17, 1000, std::nullopt, 0.015},
                               Expected{"MuJoCo/HumanoidStandup-v5", 348, 0.4f, 17, 1000, std::nullopt, 0.015}}) {
    SCOPED_TRACE(task.id);
    const auto env = make_task(task.id);
    const EnvSpec& spec = env->spec();
    EXPECT_EQ(spec.observation_space.shape(), std::vector<int64_t>{task.obs_dim});
    EXPECT_EQ(spec.observation_space.dtype(), Dtype::kFloat32);
    EXPECT_EQ(spec.action_space.low(), std::vector<float>(task.actions, -task.bound));
    EXPECT_EQ(spec.action_space.high(), std::vector<float>(task.actions, task.bound));
    EXPECT_EQ(spec.max_episode_steps, task.max_steps);
    EXPECT_EQ(spec.reward_threshold, task.threshold);
    EXPECT_DOUBLE_EQ(env->dt(), task.dt);
  }
  EnvOptions options;
  options.include_cfrc_ext_in_observation = false;
  EXPECT_EQ(make_task("MuJoCo/Ant-v5", options)->spec().observation_space.flat_size(), 27);
  options.exclude_current_positions_from_observation = false;
  EXPECT_EQ(make_task("MuJoCo/Ant-v5", options)->spec().observation_space.flat_size(), 29);
  EnvOptions keep;
  keep.exclude_current_positions_from_observation = false;
  EXPECT_EQ(make_task("MuJoCo/Humanoid-v5", keep)->spec().observation_space.flat_size(), 350);
}

TEST(MujocoReacherAntHumanoidTest, ReacherPaysDistanceAndControlAndNeverEnds) {
  auto env = make_task("MuJoCo/Reacher-v5");
  std::vector<float> obs(10);
  core::Rng rng(3);
  const mjModel* m = env->model();
  const int tip = mj_name2id(m, mjOBJ_BODY, "fingertip"), target = mj_name2id(m, mjOBJ_BODY, "target");
  for (int episode = 0; episode < 20; ++episode) {
    env->reset(episode == 0 ? std::optional<uint64_t>(5) : std::nullopt, obs.data());
    const mjData* d = env->data();
    // Reset: the target inside the disc of radius 0.2, still; the arm near qpos0, barely moving.
    EXPECT_LT(std::hypot(d->qpos[2], d->qpos[3]), 0.2);
    EXPECT_EQ(d->qvel[2], 0.0);
    EXPECT_EQ(d->qvel[3], 0.0);
    for (int i = 0; i < 2; ++i) {
      EXPECT_LE(std::abs(d->qpos[i]), 0.1);
      EXPECT_LE(std::abs(d->qvel[i]), 0.005);
    }
    for (int t = 0; t < 10; ++t) {
      const std::vector<float> action = random_action(rng, env->spec().action_space);
      Action a;
      a.values = action.data();
      const StepResult result = env->step(a, obs.data());
      const double dx = d->xpos[3 * tip] - d->xpos[3 * target], dy = d->xpos[3 * tip + 1] - d->xpos[3 * target + 1];
      expect_reward(result.reward, -std::hypot(dx, dy) - square_sum(action), t);
      EXPECT_FALSE(result.terminated);
      const float layout[10] = {static_cast<float>(std::cos(d->qpos[0])),
                                static_cast<float>(std::cos(d->qpos[1])),
                                static_cast<float>(std::sin(d->qpos[0])),
                                static_cast<float>(std::sin(d->qpos[1])),
                                static_cast<float>(d->qpos[2]),
                                static_cast<float>(d->qpos[3]),
                                static_cast<float>(d->qvel[0]),
                                static_cast<float>(d->qvel[1]),
                                static_cast<float>(dx),
                                static_cast<float>(dy)};
      for (int i = 0; i < 10; ++i) EXPECT_EQ(obs[i], layout[i]) << "element " << i;
    }
  }
  EnvOptions weights;
  weights.reward_dist_weight = 2.0;
  weights.reward_control_weight = 0.0;
  auto weighted = make_task("MuJoCo/Reacher-v5", weights);
  weighted->reset(1, obs.data());
  std::vector<float> push = {1.0f, -1.0f};
  Action a;
  a.values = push.data();
  const StepResult result = weighted->step(a, obs.data());
  expect_reward(result.reward, -2.0 * std::hypot(obs[8], obs[9]), 0);
}

// Ant: the reward's four terms from the state, the clipped contact forces in the observation,
// and termination by the closed healthy_z_range. Returns the terminations and the steps on which
// some contact force was observed.
std::pair<int, int> check_ant(MujocoEnv& env, double contact_weight, std::pair<double, double> z, int steps) {
  const mjModel* m = env.model();
  const int torso = mj_name2id(m, mjOBJ_BODY, "torso");
  std::vector<float> obs(env.spec().observation_space.flat_size());
  env.reset(2, obs.data());
  core::Rng rng(4);
  int terminations = 0, touching = 0;
  for (int t = 0; t < steps; ++t) {
    const std::vector<float> action = random_action(rng, env.spec().action_space);
    const double x_before = env.data()->xpos[3 * torso];
    Action a;
    a.values = action.data();
    const StepResult result = env.step(a, obs.data());
    const mjData* d = env.data();
    double contact = 0.0;
    bool any = false;
    for (int i = 0; i < 6 * m->nbody; ++i) {
      const double f = std::clamp(d->cfrc_ext[i], -1.0, 1.0);
      contact += f * f;
      if (i >= 6) {
        EXPECT_EQ(obs[27 + i - 6], static_cast<float>(f)) << "step " << t;
        any = any || f != 0.0;
      }
    }
    touching += any ? 1 : 0;
    for (int i = 2; i < m->nq; ++i) EXPECT_EQ(obs[i - 2], static_cast<float>(d->qpos[i]));
    for (int i = 0; i < m->nv; ++i) EXPECT_EQ(obs[13 + i], static_cast<float>(d->qvel[i]));
    const bool healthy = z.first <= d->qpos[2] && d->qpos[2] <= z.second;
    const double expected = (d->xpos[3 * torso] - x_before) / env.dt() + (healthy ? 1.0 : 0.0) -
                            0.5 * square_sum(action) - contact_weight * contact;
    expect_reward(result.reward, expected, t);
    EXPECT_EQ(result.terminated, !healthy) << "step " << t;
    if (result.terminated) {
      ++terminations;
      env.reset(std::nullopt, obs.data());
    }
  }
  return {terminations, touching};
}

TEST(MujocoReacherAntHumanoidTest, AntRewardsAndContactForcesFollowV5) {
  const auto [terminations, touching] = check_ant(*make_task("MuJoCo/Ant-v5"), 5e-4, {0.2, 1.0}, 150);
  EXPECT_GT(touching, 20);  // feet on the floor: cfrc_ext is computed after the step
  (void)terminations;
  // A narrow health range makes random walking end episodes, both sides of the rule tested.
  EnvOptions options;
  options.healthy_z_range = {0.55, 1.0};
  options.contact_cost_weight = 0.01;
  EXPECT_GT(check_ant(*make_task("MuJoCo/Ant-v5", options), 0.01, {0.55, 1.0}, 150).first, 2);
}

TEST(MujocoReacherAntHumanoidTest, HumanoidObservesBodiesAndRewardsTheCentreOfMass) {
  auto env = make_task("MuJoCo/Humanoid-v5");
  const mjModel* m = env->model();
  std::vector<float> obs(348);
  env->reset(6, obs.data());
  core::Rng rng(8);
  const auto mass_x = [m](const mjData* d) {
    double weighted = 0.0, mass = 0.0;
    for (int b = 0; b < m->nbody; ++b) {
      weighted += m->body_mass[b] * d->xipos[3 * b];
      mass += m->body_mass[b];
    }
    return weighted / mass;
  };
  int terminations = 0, clipped = 0;
  for (int t = 0; t < 200; ++t) {
    const std::vector<float> action = random_action(rng, env->spec().action_space);
    const double x_before = mass_x(env->data());
    Action a;
    a.values = action.data();
    const StepResult result = env->step(a, obs.data());
    const mjData* d = env->data();
    double forces = 0.0;
    for (int i = 0; i < 6 * m->nbody; ++i) forces += d->cfrc_ext[i] * d->cfrc_ext[i];
    clipped += 5e-7 * forces > 10.0 ? 1 : 0;
    const bool healthy = 1.0 < d->qpos[2] && d->qpos[2] < 2.0;
    const double expected = 1.25 * (mass_x(d) - x_before) / env->dt() + (healthy ? 5.0 : 0.0) -
                            0.1 * square_sum(action) - std::min(5e-7 * forces, 10.0);
    expect_reward(result.reward, expected, t);
    EXPECT_EQ(result.terminated, !healthy);
    // [qpos[2:], qvel, cinert[1:], cvel[1:], qfrc_actuator[6:], cfrc_ext[1:]]
    int k = 0;
    const auto check = [&](const mjtNum* values, int first, int end) {
      for (int i = first; i < end; ++i, ++k) ASSERT_EQ(obs[k], static_cast<float>(values[i])) << "element " << k;
    };
    check(d->qpos, 2, 24);
    check(d->qvel, 0, 23);
    check(d->cinert, 10, 140);
    check(d->cvel, 6, 84);
    check(d->qfrc_actuator, 6, 23);
    check(d->cfrc_ext, 6, 84);
    EXPECT_EQ(k, 348);
    if (result.terminated) {
      ++terminations;
      env->reset(std::nullopt, obs.data());
    }
  }
  EXPECT_GT(terminations, 2);  // a humanoid under random torques falls within tens of steps
  (void)clipped;
}

TEST(MujocoReacherAntHumanoidTest, HumanoidStandupPaysTheTorsosHeightOverTheTimestep) {
  auto env = make_task("MuJoCo/HumanoidStandup-v5");
  const mjModel* m = env->model();
  std::vector<float> obs(348);
  env->reset(9, obs.data());
  EXPECT_NEAR(env->data()->qpos[2], 0.105, 0.011);  // lying down
  core::Rng rng(10);
  for (int t = 0; t < 100; ++t) {
    const std::vector<float> action = random_action(rng, env->spec().action_space);
    Action a;
    a.values = action.data();
    const StepResult result = env->step(a, obs.data());
    const mjData* d = env->data();
    double forces = 0.0;
    for (int i = 0; i < 6 * m->nbody; ++i) forces += d->cfrc_ext[i] * d->cfrc_ext[i];
    const double expected = d->qpos[2] / 0.003 - 0.1 * square_sum(action) - std::min(0.5e-6 * forces, 10.0) + 1.0;
    expect_reward(result.reward, expected, t);
    EXPECT_FALSE(result.terminated);
    EXPECT_EQ(obs[0], static_cast<float>(d->qpos[2]));
    EXPECT_EQ(obs[347], static_cast<float>(d->cfrc_ext[6 * m->nbody - 1]));
  }
}

TEST(MujocoReacherAntHumanoidTest, HumanoidStandupWeighsItsTermsByItsOptions) {
  // Gymnasium v5's uph_cost_weight, impact_cost_weight and impact_cost_range.
  EnvOptions options;
  options.uph_cost_weight = 2.0;
  options.impact_cost_weight = 1e-4;
  options.impact_cost_range = {0.5, 3.0};
  auto env = make_task("MuJoCo/HumanoidStandup-v5", options);
  const mjModel* m = env->model();
  std::vector<float> obs(348);
  env->reset(9, obs.data());
  core::Rng rng(10);
  for (int t = 0; t < 50; ++t) {
    const std::vector<float> action = random_action(rng, env->spec().action_space);
    Action a;
    a.values = action.data();
    const StepResult result = env->step(a, obs.data());
    const mjData* d = env->data();
    double forces = 0.0;
    for (int i = 0; i < 6 * m->nbody; ++i) forces += d->cfrc_ext[i] * d->cfrc_ext[i];
    const double impact = std::min(std::max(1e-4 * forces, 0.5), 3.0);
    expect_reward(result.reward, 2.0 * d->qpos[2] / 0.003 - 0.1 * square_sum(action) - impact + 1.0, t);
  }
  EnvOptions bad;
  bad.impact_cost_range = {3.0, 0.5};
  EXPECT_THROW(make_task("MuJoCo/HumanoidStandup-v5", bad), std::invalid_argument);
  EnvOptions not_humanoid;
  not_humanoid.include_cinert_in_observation = false;
  EXPECT_THROW(make_task("MuJoCo/Ant-v5", not_humanoid), std::invalid_argument);
}

TEST(MujocoReacherAntHumanoidTest, HumanoidsLeaveOutTheBlocksTheirIncludeOptionsTurnOff) {
  for (const char* id : {"MuJoCo/Humanoid-v5", "MuJoCo/HumanoidStandup-v5"}) {
    auto full = make_task(id);
    const mjModel* m = full->model();
    const int bodies = m->nbody - 1;
    const int kept = (m->nq - 2) + m->nv;  // qpos[2:], qvel
    // Each block off alone: its rows leave, the others keep their order.
    struct Block {
      std::optional<bool> EnvOptions::*flag;
      int first, size;  // where the block stands in the full observation
    };
    const Block blocks[] = {{&EnvOptions::include_cinert_in_observation, kept, 10 * bodies},
                            {&EnvOptions::include_cvel_in_observation, kept + 10 * bodies, 6 * bodies},
                            {&EnvOptions::include_qfrc_actuator_in_observation, kept + 16 * bodies, m->nv - 6},
                            {&EnvOptions::include_cfrc_ext_in_observation, kept + 16 * bodies + m->nv - 6, 6 * bodies}};
    std::vector<float> full_obs(full->spec().observation_space.flat_size());
    ASSERT_EQ(full_obs.size(), 348u) << id;
    full->reset(5, full_obs.data());
    for (const Block& block : blocks) {
      EnvOptions options;
      options.*block.flag = false;
      auto env = make_task(id, options);
      std::vector<float> obs(env->spec().observation_space.flat_size());
      ASSERT_EQ(obs.size(), full_obs.size() - block.size) << id;
      env->reset(5, obs.data());
      std::vector<float> expected(full_obs.begin(), full_obs.begin() + block.first);
      expected.insert(expected.end(), full_obs.begin() + block.first + block.size, full_obs.end());
      EXPECT_EQ(obs, expected) << id << ", block at " << block.first;
    }
    EnvOptions none;
    none.include_cinert_in_observation = none.include_cvel_in_observation = false;
    none.include_qfrc_actuator_in_observation = none.include_cfrc_ext_in_observation = false;
    EXPECT_EQ(make_task(id, none)->spec().observation_space.flat_size(), kept) << id;
  }
}

TEST(MujocoReacherAntHumanoidTest, AModelThatDoesNotFitNamesWhatDiffers) {
  EnvOptions options;
  options.model_file = shipped_model("hopper.xml");
  for (const char* id : {"MuJoCo/Reacher-v5", "MuJoCo/Ant-v5", "MuJoCo/Humanoid-v5", "MuJoCo/HumanoidStandup-v5"}) {
    try {
      make_env(id, options);
      ADD_FAILURE() << id << " accepted the hopper";
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what()).find(std::string(id) + ": model file"), std::string::npos) << error.what();
      EXPECT_NE(std::string(error.what()).find("actuators"), std::string::npos) << error.what();
    }
  }
  EnvOptions other;
  other.contact_force_range = {1.0, -1.0};
  EXPECT_THROW(make_env("MuJoCo/Ant-v5", other), std::invalid_argument);
  EXPECT_THROW(make_env("MuJoCo/Reacher-v5", other), std::invalid_argument);  // not Reacher's setting
}

// Each task's info_terms() are Gymnasium v5's `info` keys, and the values are the reward's own
// terms: over some steps (and the resets between episodes) the reward is their documented sum,
// and the positions are those of qpos.
struct InfoRules {
  const char* id;
  std::vector<std::string> keys;
  double constant = 0.0;  // the reward = last_reward().total() + constant (HumanoidStandup's + 1)
  int height = 1;         // qpos coordinate of z_distance_from_origin
};

TEST(MujocoReacherAntHumanoidTest, InfoTermsAreGymnasiumsKeysAndTheRewardsOwnTerms) {
  const std::vector<std::string> xy = {"x_position", "y_position",     "distance_from_origin", "x_velocity",
                                       "y_velocity", "reward_forward", "reward_ctrl"};
  auto with = [](std::vector<std::string> keys, std::vector<std::string> more) {
    keys.insert(keys.end(), more.begin(), more.end());
    return keys;
  };
  const std::vector<InfoRules> tasks = {
      {"MuJoCo/Reacher-v5", {"reward_dist", "reward_ctrl"}},
      {"MuJoCo/InvertedPendulum-v5", {"reward_survive"}},
      {"MuJoCo/InvertedDoublePendulum-v5", {"reward_survive", "distance_penalty", "velocity_penalty"}},
      {"MuJoCo/HumanoidStandup-v5",
       {"x_position", "y_position", "z_distance_from_origin", "reward_linup", "reward_quadctrl", "reward_impact"},
       1.0,
       2},
      {"MuJoCo/Swimmer-v5", xy},
      {"MuJoCo/Ant-v5", with(xy, {"reward_survive", "reward_contact"})},
      {"MuJoCo/Humanoid-v5", with(xy, {"reward_survive", "reward_contact"})},
      {"MuJoCo/Hopper-v5",
       {"x_position", "z_distance_from_origin", "x_velocity", "reward_forward", "reward_ctrl", "reward_survive"}},
      {"MuJoCo/Walker2d-v5",
       {"x_position", "z_distance_from_origin", "x_velocity", "reward_forward", "reward_ctrl", "reward_survive"}},
      {"MuJoCo/HalfCheetah-v5", {"x_position", "x_velocity", "reward_forward", "reward_ctrl"}},
  };
  for (const InfoRules& rules : tasks) {
    SCOPED_TRACE(rules.id);
    auto env = make_task(rules.id);
    std::vector<std::string> keys;
    for (const InfoTerm& term : env->info_terms()) keys.push_back(term.name);
    std::vector<std::string> expected_keys = rules.keys;
    std::sort(keys.begin(), keys.end());
    std::sort(expected_keys.begin(), expected_keys.end());
    EXPECT_EQ(keys, expected_keys);
    const mjModel* m = env->model();
    const mjData* d = env->data();
    const int torso = mj_name2id(m, mjOBJ_BODY, "torso");
    const std::string id = rules.id;
    auto y_of = [&] {
      if (id == "MuJoCo/Ant-v5") return d->xpos[3 * torso + 1];
      if (id == "MuJoCo/Humanoid-v5") return mass_center_xy(m, d).second;
      return d->qpos[1];
    };
    auto has = [&](const char* key) {
      return std::find(rules.keys.begin(), rules.keys.end(), key) != rules.keys.end();
    };
    auto expect_positions = [&](const LocomotionReward& terms, int t) {
      if (!has("x_position")) return;
      EXPECT_EQ(terms.x_position, d->qpos[0]) << "step " << t;
      EXPECT_EQ(terms.y_position, d->qpos[1]) << "step " << t;
      EXPECT_DOUBLE_EQ(terms.distance_from_origin, std::hypot(d->qpos[0], d->qpos[1])) << "step " << t;
      EXPECT_EQ(terms.z_distance_from_origin, d->qpos[rules.height] - m->qpos0[rules.height]) << "step " << t;
    };
    std::vector<float> obs(env->spec().observation_space.flat_size());
    env->reset(7, obs.data());
    expect_positions(env->last_reward(), -1);
    core::Rng rng(8);
    for (int t = 0; t < 60; ++t) {
      const std::vector<float> action = random_action(rng, env->spec().action_space);
      Action a;
      a.values = action.data();
      const double y_before = y_of();
      const StepResult result = env->step(a, obs.data());
      const LocomotionReward& terms = env->last_reward();
      EXPECT_EQ(static_cast<float>(terms.total() + rules.constant), result.reward) << "step " << t;
      if (!result.terminated) EXPECT_NE(terms.total(), 0.0) << "step " << t;
      expect_positions(terms, t);
      if (has("y_velocity")) {
        EXPECT_EQ(terms.y_velocity, (y_of() - y_before) / env->dt()) << "step " << t;
      }
      if (has("reward_ctrl") || has("reward_quadctrl")) {
        EXPECT_LT(terms.ctrl, 0.0) << "step " << t;
      }
      if (result.terminated || result.truncated) {
        const double ended = terms.total();
        env->reset(std::nullopt, obs.data());
        EXPECT_EQ(env->ended_reward().total(), ended) << "step " << t;
        EXPECT_EQ(env->last_reward().total(), 0.0) << "step " << t;
        expect_positions(env->last_reward(), t);
      }
    }
  }
}

// Humanoid-v5's and HumanoidStandup-v5's info also holds tendon_length and tendon_velocity:
// mjData's arrays over the model's tendons as each step or reset leaves them (those Gymnasium
// reads), and a reset keeps the ended step's apart, as ended_reward(). No other task has arrays.
TEST(MujocoReacherAntHumanoidTest, HumanoidsReportTheirTendonsAsArrayInfoTerms) {
  for (const char* id : {"MuJoCo/Humanoid-v5", "MuJoCo/HumanoidStandup-v5"}) {
    SCOPED_TRACE(id);
    auto env = make_task(id);
    const mjModel* m = env->model();
    const mjData* d = env->data();
    ASSERT_EQ(m->ntendon, 2);
    const std::vector<ArrayInfoTerm>& terms = env->array_info_terms();
    ASSERT_EQ(terms.size(), 2u);
    EXPECT_STREQ(terms[0].name, "tendon_length");
    EXPECT_STREQ(terms[1].name, "tendon_velocity");
    for (const ArrayInfoTerm& term : terms) {
      EXPECT_EQ(term.size, 2);
      EXPECT_TRUE(term.at_reset);
    }
    auto row = [&](const double* values) { return std::vector<double>(values, values + m->ntendon); };
    auto expect_data = [&](int t) {
      EXPECT_EQ(row(env->array_values(0)), row(d->ten_length)) << "step " << t;
      EXPECT_EQ(row(env->array_values(1)), row(d->ten_velocity)) << "step " << t;
    };
    // Each fixed tendon is its knee minus its hip_y (humanoid.xml), in the state a reset leaves.
    auto joint = [&](const char* name) { return mj_name2id(m, mjOBJ_JOINT, name); };
    const int knees[] = {joint("left_knee"), joint("right_knee")};
    const int hips[] = {joint("left_hip_y"), joint("right_hip_y")};
    std::vector<float> obs(env->spec().observation_space.flat_size());
    env->reset(3, obs.data());
    expect_data(-1);
    for (int k = 0; k < 2; ++k) {
      EXPECT_DOUBLE_EQ(env->array_values(0)[k], d->qpos[m->jnt_qposadr[knees[k]]] - d->qpos[m->jnt_qposadr[hips[k]]]);
      EXPECT_DOUBLE_EQ(env->array_values(1)[k], d->qvel[m->jnt_dofadr[knees[k]]] - d->qvel[m->jnt_dofadr[hips[k]]]);
    }
    core::Rng rng(4);
    int resets = 0;
    for (int t = 0; t < 40; ++t) {
      const std::vector<float> action = random_action(rng, env->spec().action_space);
      Action a;
      a.values = action.data();
      const StepResult result = env->step(a, obs.data());
      expect_data(t);
      EXPECT_NE(row(env->array_values(1)), std::vector<double>(2, 0.0)) << "step " << t;
      if (result.terminated || result.truncated || t % 15 == 14) {
        const std::vector<double> length = row(d->ten_length), velocity = row(d->ten_velocity);
        env->reset(std::nullopt, obs.data());
        ++resets;
        EXPECT_EQ(row(env->ended_array_values(0)), length) << "step " << t;
        EXPECT_EQ(row(env->ended_array_values(1)), velocity) << "step " << t;
        expect_data(t);
        EXPECT_NE(row(env->array_values(0)), length) << "step " << t;  // the reset's own state
      }
    }
    EXPECT_GE(resets, 2);
  }
  // A model file's own tendon count: none gives arrays of length 0.
  std::ifstream shipped(shipped_model("humanoid.xml"));
  std::string text((std::istreambuf_iterator<char>(shipped)), std::istreambuf_iterator<char>());
  const size_t begin = text.find("<tendon>"), end = text.find("</tendon>");
  ASSERT_NE(begin, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  text.erase(begin, end + std::string("</tendon>").size() - begin);
  const std::filesystem::path file = std::filesystem::temp_directory_path() / "concord_humanoid_no_tendons.xml";
  std::ofstream(file) << text;
  EnvOptions options;
  options.model_file = file.string();
  for (const char* id : {"MuJoCo/Humanoid-v5", "MuJoCo/HumanoidStandup-v5"}) {
    auto env = make_task(id, options);
    ASSERT_EQ(env->array_info_terms().size(), 2u) << id;
    EXPECT_EQ(env->array_info_terms()[0].size, 0) << id;
    std::vector<float> obs(env->spec().observation_space.flat_size());
    env->reset(1, obs.data());
    const std::vector<float> zeros(env->spec().action_space.flat_size(), 0.0f);
    Action a;
    a.values = zeros.data();
    env->step(a, obs.data());
    env->reset(std::nullopt, obs.data());
  }
  for (const char* id : {"MuJoCo/Reacher-v5", "MuJoCo/Ant-v5", "MuJoCo/HalfCheetah-v5", "MuJoCo/InvertedPendulum-v5"}) {
    EXPECT_TRUE(make_task(id)->array_info_terms().empty()) << id;
  }
}

}  // namespace
}  // namespace concord::envs::mujoco
