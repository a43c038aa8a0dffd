#pragma once

#include <utility>

#include <mujoco/mujoco.h>

#include "concord/envs/mujoco/task_options.h"

namespace concord::envs::mujoco {

// What Humanoid-v5 and HumanoidStandup-v5 observe, as float32 from `observation` on: qpos[2:]
// (all of qpos with exclude_current_positions_from_observation = false), qvel, then cinert, cvel
// and cfrc_ext of every body but the world and qfrc_actuator without the free joint's 6 dofs, in
// Gymnasium's order [qpos, qvel, cinert, cvel, qfrc_actuator, cfrc_ext], each of the last four
// only when its include_*_in_observation option is set. Returns the number of floats written;
// cfrc_ext must be current (mj_rnePostConstraint).
int write_humanoid_observation(const mjModel* m, const mjData* d, const TaskOptions& options, float* observation);
// The size of that observation for a model.
int humanoid_observation_size(const mjModel* m, const TaskOptions& options);
// Sum of cfrc_ext^2 over every body (the contact and impact costs' sum).
double external_force_square_sum(const mjModel* m, const mjData* d);
// The x and y of the centre of mass (Gymnasium's mass_center: body masses times their xipos).
std::pair<double, double> mass_center_xy(const mjModel* m, const mjData* d);
// Its x alone.
double mass_center_x(const mjModel* m, const mjData* d);

}  // namespace concord::envs::mujoco
