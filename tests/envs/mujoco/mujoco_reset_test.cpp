// MujocoEnv::reset_data against MuJoCo's own mj_resetData: after either, from the same noisy start
// and the same controls, every shipped model's physics takes bit for bit the same steps (contacts,
// warm starts and constraint solvers included), so the cheaper reset changes no trajectory.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "concord/core/rng.h"
#include "concord/envs/mujoco/mujoco_env.h"
#include "concord/envs/registry.h"

namespace concord::envs::mujoco {
namespace {

std::vector<double> run_after(MujocoEnv& env, bool own_reset, uint64_t seed) {
  const mjModel* m = env.model();
  mjData* d = env.data();
  if (own_reset) {
    env.reset_data();
  } else {
    mj_resetData(m, d);
  }
  core::Rng rng(seed);
  for (int i = 0; i < m->nq; ++i) d->qpos[i] = m->qpos0[i] + core::uniform(rng, -0.1, 0.1);
  for (int i = 0; i < m->nv; ++i) d->qvel[i] = core::uniform(rng, -0.1, 0.1);
  mj_forward(m, d);
  std::vector<double> out;
  for (int t = 0; t < 200; ++t) {
    for (int i = 0; i < m->nu; ++i) d->ctrl[i] = core::uniform(rng, -1.0, 1.0);
    mj_step(m, d);
    out.insert(out.end(), d->qpos, d->qpos + m->nq);
    out.insert(out.end(), d->qvel, d->qvel + m->nv);
    out.insert(out.end(), d->qacc_warmstart, d->qacc_warmstart + m->nv);
  }
  return out;
}

TEST(MujocoResetTest, ResetDataGivesTheStepsOfMjResetData) {
  for (const std::string& id : Registry::global().ids()) {
    if (id.rfind("MuJoCo/", 0) != 0 || id == "MuJoCo/Custom-v0") continue;  // Custom needs a user's file
    SCOPED_TRACE(id);
    std::unique_ptr<Env> made = make_env(id);
    auto* env = dynamic_cast<MujocoEnv*>(made.get());
    ASSERT_NE(env, nullptr);
    // Dirty the state first: an episode's worth of steps, as before an auto-reset.
    run_after(*env, false, 1);
    const std::vector<double> theirs = run_after(*env, false, 2);
    run_after(*env, false, 3);
    const std::vector<double> ours = run_after(*env, true, 2);
    ASSERT_EQ(ours.size(), theirs.size());
    EXPECT_TRUE(ours == theirs);
  }
}

}  // namespace
}  // namespace concord::envs::mujoco
