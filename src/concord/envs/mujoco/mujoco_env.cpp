#include "concord/envs/mujoco/mujoco_env.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace concord::envs::mujoco {

std::atomic<int64_t> MujocoEnv::process_unstable_steps_{0};

MujocoEnv::MujocoEnv(EnvSpec spec, std::shared_ptr<const MujocoModel> model, int frame_skip)
    : FloatEnv(std::move(spec)), model_(std::move(model)), frame_skip_(frame_skip) {
  data_ = mj_makeData(model_->get());
  if (data_ == nullptr) throw std::runtime_error(this->spec().id + ": MuJoCo could not allocate mjData");
}

MujocoEnv::~MujocoEnv() { mj_deleteData(data_); }

void MujocoEnv::report_locomotion_info(bool survive, bool contact, Positions positions) {
  info_terms_.clear();
  if (positions != Positions::kNone) info_terms_.push_back({"x_position", &LocomotionReward::x_position, true});
  if (positions == Positions::kXY) {
    info_terms_.push_back({"y_position", &LocomotionReward::y_position, /*at_reset=*/true});
    info_terms_.push_back({"distance_from_origin", &LocomotionReward::distance_from_origin, /*at_reset=*/true});
  }
  if (positions == Positions::kXZ) {
    info_terms_.push_back({"z_distance_from_origin", &LocomotionReward::z_distance_from_origin, /*at_reset=*/true});
  }
  info_terms_.push_back({"x_velocity", &LocomotionReward::x_velocity});
  if (positions == Positions::kXY) info_terms_.push_back({"y_velocity", &LocomotionReward::y_velocity});
  info_terms_.push_back({"reward_forward", &LocomotionReward::forward});
  info_terms_.push_back({"reward_ctrl", &LocomotionReward::ctrl});
  if (survive) info_terms_.push_back({"reward_survive", &LocomotionReward::survive});
  if (contact) info_terms_.push_back({"reward_contact", &LocomotionReward::contact});
}

void MujocoEnv::report_array_info(std::vector<ArrayInfoTerm> terms) {
  array_info_terms_ = std::move(terms);
  ended_arrays_.assign(array_info_terms_.size(), {});
  for (size_t k = 0; k < array_info_terms_.size(); ++k) {
    ended_arrays_[k].assign(static_cast<size_t>(array_info_terms_[k].size), 0.0);
  }
}

void MujocoEnv::report_tendon_info() {
  const int tendons = model()->ntendon;
  report_array_info({{"tendon_length", &mjData::ten_length, tendons, /*at_reset=*/true},
                     {"tendon_velocity", &mjData::ten_velocity, tendons, /*at_reset=*/true}});
}

Space MujocoEnv::action_space_of(const MujocoModel& model, const std::string& task) {
  const mjModel* m = model.get();
  std::vector<float> low(m->nu), high(m->nu);
  for (int i = 0; i < m->nu; ++i) {
    if (!m->actuator_ctrllimited[i]) {
      const char* name = mj_id2name(m, mjOBJ_ACTUATOR, i);
      throw std::invalid_argument(task + ": model file '" + model.path() + "': actuator " +
                                  (name != nullptr ? std::string("'") + name + "'" : std::to_string(i)) +
                                  " has no control range (ctrllimited), which the action space needs");
    }
    low[i] = static_cast<float>(m->actuator_ctrlrange[2 * i]);
    high[i] = static_cast<float>(m->actuator_ctrlrange[2 * i + 1]);
  }
  return Space::box({m->nu}, low, high);
}

Space MujocoEnv::observation_space_of(int64_t dim) {
  const float inf = std::numeric_limits<float>::infinity();
  return Space::box({dim}, -inf, inf);
}

void MujocoEnv::reset_data() {
  ended_reward_ = last_reward_;
  last_reward_ = LocomotionReward{};
  // The ended step's arrays live in mjData, which the reset overwrites: a few doubles per reset.
  for (size_t k = 0; k < array_info_terms_.size(); ++k) {
    const double* values = array_values(k);
    std::copy(values, values + array_info_terms_[k].size, ended_arrays_[k].begin());
  }
  // mj_resetData zeroes the whole mjData buffer, about 30 us on MuJoCo 2.2.2's default sizes and
  // more than the physics of a short episode's steps. mj_forward recomputes every derived quantity
  // from the state, so resetting the state mj_resetData sets is enough: the steps that follow are
  // bit for bit those after mj_resetData (tests/envs/mujoco/mujoco_reset_test.cpp).
  const mjModel* m = model();
  mjData* d = data_;
  d->pstack = 0;
  std::fill(std::begin(d->warning), std::end(d->warning), mjWarningStat{});
  std::fill(std::begin(d->timer), std::end(d->timer), mjTimerStat{});
  std::fill(std::begin(d->solver), std::end(d->solver), mjSolverStat{});
  d->solver_iter = 0;
  d->solver_nnz = 0;
  d->solver_fwdinv[0] = d->solver_fwdinv[1] = 0.0;
  d->ne = d->nf = d->nefc = d->ncon = 0;
  d->time = 0.0;
  d->energy[0] = d->energy[1] = 0.0;
  mju_copy(d->qpos, m->qpos0, m->nq);
  mju_zero(d->qvel, m->nv);
  mju_zero(d->act, m->na);
  mju_zero(d->qacc_warmstart, m->nv);
  mju_zero(d->qacc, m->nv);
  mju_zero(d->act_dot, m->na);
  mju_zero(d->ctrl, m->nu);
  mju_zero(d->qfrc_applied, m->nv);
  mju_zero(d->xfrc_applied, 6 * m->nbody);
  mju_zero(d->userdata, m->nuserdata);
  for (int body = 0; body < m->nbody; ++body) {
    const int mocap = m->body_mocapid[body];
    if (mocap >= 0) {
      mju_copy3(d->mocap_pos + 3 * mocap, m->body_pos + 3 * body);
      mju_copy4(d->mocap_quat + 4 * mocap, m->body_quat + 4 * body);
    }
  }
}

void MujocoEnv::reset_with_noise(double scale, bool normal_velocity) {
  const mjModel* m = model();
  reset_data();
  for (int i = 0; i < m->nq; ++i) data_->qpos[i] = m->qpos0[i] + uniform(-scale, scale);
  for (int i = 0; i < m->nv; ++i) data_->qvel[i] = normal_velocity ? scale * normal() : uniform(-scale, scale);
  mj_forward(m, data_);
  record_positions();
}

void MujocoEnv::record_positions() {
  const mjModel* m = model();
  const double* qpos = data_->qpos;
  last_reward_.x_position = m->nq > 0 ? qpos[0] : 0.0;
  last_reward_.y_position = m->nq > 1 ? qpos[1] : 0.0;
  last_reward_.distance_from_origin =
      std::sqrt(last_reward_.x_position * last_reward_.x_position + last_reward_.y_position * last_reward_.y_position);
  last_reward_.z_distance_from_origin = m->nq > height_ ? qpos[height_] - m->qpos0[height_] : 0.0;
}

double MujocoEnv::normal() {
  // 1 - u lies in (0, 1], so the logarithm is finite.
  const double u = 1.0 - uniform(0.0, 1.0);
  const double v = uniform(0.0, 1.0);
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * 3.141592653589793 * v);
}

void MujocoEnv::throw_bad_action(const Action& action) const {
  if (action.values == nullptr)
    throw std::invalid_argument(spec().id + ": a Box action needs Action.values, got nullptr");
  std::ostringstream message;
  message << spec().id << ": action [";
  for (int i = 0; i < model()->nu; ++i) message << (i ? ", " : "") << action.values[i];
  message << "] is not finite";
  throw std::invalid_argument(message.str());
}

bool MujocoEnv::simulate(const Action& action) {
  const mjModel* m = model();
  if (action.values == nullptr) throw_bad_action(action);
  bool finite = true;
  for (int i = 0; i < m->nu; ++i) finite = finite && std::isfinite(action.values[i]);
  if (!finite) throw_bad_action(action);
  for (int i = 0; i < m->nu; ++i) data_->ctrl[i] = action.values[i];
  // MuJoCo's checks (mj_checkPos/Vel/Acc) count a NaN, infinite or huge value in these warnings
  // and reset the state to qpos0; a count that rose means this step diverged.
  constexpr int kDiverged[] = {mjWARN_BADQPOS, mjWARN_BADQVEL, mjWARN_BADQACC};
  for (int warning : kDiverged) data_->warning[warning].number = 0;
  for (int k = 0; k < frame_skip_; ++k) mj_step(m, data_);
  bool diverged = false;
  for (int warning : kDiverged) diverged = diverged || data_->warning[warning].number > 0;
  if (diverged) {
    ++unstable_steps_;
    process_unstable_steps_.fetch_add(1, std::memory_order_relaxed);
  }
  return !diverged;
}

StepResult MujocoEnv::locomotion_step(const TaskOptions& options, double x_velocity, const Action& action, bool healthy,
                                      double contact_cost, double y_velocity) {
  last_reward_.x_velocity = x_velocity;
  last_reward_.y_velocity = y_velocity;
  last_reward_.forward = options.forward_reward_weight * x_velocity;
  last_reward_.survive = healthy ? options.healthy_reward : 0.0;
  last_reward_.ctrl = -options.ctrl_cost_weight * action_square_sum(action);
  last_reward_.contact = -contact_cost;
  record_positions();
  StepResult result;
  result.reward = static_cast<float>(last_reward_.total());
  result.terminated = !healthy && options.terminate_when_unhealthy;
  return result;
}

StepResult MujocoEnv::diverged_step() {
  last_reward_ = LocomotionReward{};
  record_positions();  // MuJoCo's reset to qpos0
  StepResult result;
  result.terminated = true;
  return result;
}

double MujocoEnv::action_square_sum(const Action& action) const {
  double sum = 0.0;
  for (int i = 0; i < model()->nu; ++i) sum += double{action.values[i]} * double{action.values[i]};
  return sum;
}

int MujocoEnv::write_qpos_qvel(float* observation, int first_qpos, double qvel_limit) const {
  const mjModel* m = model();
  int k = 0;
  for (int i = first_qpos; i < m->nq; ++i) observation[k++] = static_cast<float>(data_->qpos[i]);
  for (int i = 0; i < m->nv; ++i) {
    observation[k++] = static_cast<float>(std::min(std::max(data_->qvel[i], -qvel_limit), qvel_limit));
  }
  return k;
}

}  // namespace concord::envs::mujoco
