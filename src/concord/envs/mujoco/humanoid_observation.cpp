#include "concord/envs/mujoco/humanoid_observation.h"

namespace concord::envs::mujoco {

int humanoid_observation_size(const mjModel* m, const TaskOptions& options) {
  const int bodies = m->nbody - 1;
  return m->nq - (options.exclude_current_positions_from_observation ? 2 : 0) + m->nv +
         (options.include_cinert_in_observation ? 10 * bodies : 0) +
         (options.include_cvel_in_observation ? 6 * bodies : 0) +
         (options.include_qfrc_actuator_in_observation ? m->nv - 6 : 0) +
         (options.include_cfrc_ext_in_observation ? 6 * bodies : 0);
}

int write_humanoid_observation(const mjModel* m, const mjData* d, const TaskOptions& options, float* observation) {
  int k = 0;
  const auto put = [&](const mjtNum* values, int first, int end) {
    for (int i = first; i < end; ++i) observation[k++] = static_cast<float>(values[i]);
  };
  put(d->qpos, options.exclude_current_positions_from_observation ? 2 : 0, m->nq);
  put(d->qvel, 0, m->nv);
  if (options.include_cinert_in_observation) put(d->cinert, 10, 10 * m->nbody);
  if (options.include_cvel_in_observation) put(d->cvel, 6, 6 * m->nbody);
  if (options.include_qfrc_actuator_in_observation) put(d->qfrc_actuator, 6, m->nv);
  if (options.include_cfrc_ext_in_observation) put(d->cfrc_ext, 6, 6 * m->nbody);
  return k;
}

double external_force_square_sum(const mjModel* m, const mjData* d) {
  double sum = 0.0;
  for (int i = 0; i < 6 * m->nbody; ++i) sum += d->cfrc_ext[i] * d->cfrc_ext[i];
  return sum;
}

std::pair<double, double> mass_center_xy(const mjModel* m, const mjData* d) {
  double x = 0.0, y = 0.0, mass = 0.0;
  for (int b = 0; b < m->nbody; ++b) {
    x += m->body_mass[b] * d->xipos[3 * b];
    y += m->body_mass[b] * d->xipos[3 * b + 1];
    mass += m->body_mass[b];
  }
  return {x / mass, y / mass};
}

double mass_center_x(const mjModel* m, const mjData* d) { return mass_center_xy(m, d).first; }

}  // namespace concord::envs::mujoco
