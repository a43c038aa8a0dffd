#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "concord/envs/env.h"
#include "concord/envs/mujoco/mujoco_model.h"
#include "concord/envs/mujoco/task_options.h"

namespace concord::envs::mujoco {

// The terms of a task's reward on one step, and the state Gymnasium v5's step `info` reports
// beside them, under the names of that `info`. A locomotion task's reward = forward + survive +
// ctrl + contact; Reacher's dist + ctrl; InvertedPendulum's survive; InvertedDoublePendulum's
// survive + distance_penalty + velocity_penalty; HumanoidStandup's linup + ctrl + contact + 1.
// total() sums the reward terms (every one a task does not have is 0).
struct LocomotionReward {
  double x_velocity = 0.0;        // dx/dt of the task's x over the step
  double y_velocity = 0.0;        // dy/dt of the same point (Swimmer, Ant, Humanoid)
  double forward = 0.0;           // reward_forward: forward_reward_weight x x_velocity
  double survive = 0.0;           // reward_survive: healthy_reward while healthy, else 0
  double ctrl = 0.0;              // reward_ctrl (HumanoidStandup: reward_quadctrl): -ctrl_cost_weight x sum(a^2)
  double contact = 0.0;           // reward_contact (HumanoidStandup: reward_impact): minus the contact cost
  double dist = 0.0;              // reward_dist (Reacher): -reward_dist_weight x |fingertip - target|
  double distance_penalty = 0.0;  // distance_penalty (InvertedDoublePendulum): -(0.01 x^2 + (y - 2)^2) of the tip
  double velocity_penalty = 0.0;  // velocity_penalty (InvertedDoublePendulum): -(1e-3 v1^2 + 5e-3 v2^2)
  double linup = 0.0;             // reward_linup (HumanoidStandup): uph_cost_weight x qpos[2] / timestep
  // The state after the step, or after the reset (not reward terms):
  double x_position = 0.0;              // qpos[0]
  double y_position = 0.0;              // qpos[1]
  double distance_from_origin = 0.0;    // |qpos[0:2]|
  double z_distance_from_origin = 0.0;  // qpos[z] - qpos0[z], z the height's coordinate (1; HumanoidStandup: 2)
  double total() const {
    return forward + survive + ctrl + contact + dist + distance_penalty + velocity_penalty + linup;
  }
};

// One LocomotionReward term under its key in Gymnasium v5's step `info`; at_reset: the reset's
// info holds it too (the positions).
struct InfoTerm {
  const char* name;
  double LocomotionReward::*value;
  bool at_reset = false;
};

// An array of mjData under its key in Gymnasium v5's step `info` (Humanoid's tendon_length:
// mjData::ten_length), `size` float64 values long: the model's count of what it measures (ntendon),
// which a user's model file sets. at_reset: the reset's info holds it too.
struct ArrayInfoTerm {
  const char* name;
  mjtNum* mjData::*values;
  int size = 0;
  bool at_reset = false;
};

// Whether `value` lies in the open interval (range.first, range.second): Gymnasium's health ranges.
inline bool inside_open(double value, const std::pair<double, double>& range) {
  return range.first < value && value < range.second;
}

// What every MuJoCo task shares: its own mjData over a model shared with the other envs made from
// the same file, frame_skip physics steps per env step in float64, and Gymnasium's MujocoEnv
// helpers (reset noise drawn from the env's own generator, dt = timestep x frame_skip). A task
// derives from it, checks the model fits, and writes reset_state / step_state from these parts.
class MujocoEnv : public FloatEnv {
 public:
  ~MujocoEnv() override;

  const MujocoModel& model_file() const { return *model_; }
  const mjModel* model() const { return model_->get(); }
  // For tests: the physics state. Setting qpos/qvel then calling forward() places the env there.
  mjData* data() { return data_; }
  const mjData* data() const { return data_; }
  void forward() { mj_forward(model(), data_); }
  // The state mj_resetData sets (qpos0, zero velocities, controls, time and warnings), without
  // clearing the rest of mjData, which mj_forward recomputes. Call mj_forward before reading it.
  void reset_data();
  int frame_skip() const { return frame_skip_; }
  // Seconds of simulated time per env step: the model's timestep x frame_skip.
  double dt() const { return model()->opt.timestep * frame_skip_; }
  // Env steps on which the physics diverged (NaN, infinite or huge state, which MuJoCo resets):
  // each ended its episode with reward 0. Per env, and over the whole process.
  int64_t unstable_steps() const { return unstable_steps_; }
  static int64_t unstable_steps_in_process() { return process_unstable_steps_.load(std::memory_order_relaxed); }
  // The reward terms and positions of the last step, as far as the task's info_terms() name them:
  // the reward terms are zero after a reset (which records the positions) and after a diverged
  // step (which records those of MuJoCo's reset state). SparseHalfCheetah records none of a step's.
  const LocomotionReward& last_reward() const { return last_reward_; }
  // The terms of the last step before the latest reset, which the reset cleared from
  // last_reward(): under the vector engine's same-step auto-reset, the step that ended the episode.
  const LocomotionReward& ended_reward() const { return ended_reward_; }
  // The terms that Gymnasium v5's step `info` of this task holds, under its keys (the reset's
  // info those with at_reset); empty in SparseHalfCheetah. Python's step info carries them.
  const std::vector<InfoTerm>& info_terms() const { return info_terms_; }
  // The terms of that `info` that are arrays (Humanoid's and HumanoidStandup's tendons); empty in
  // the other tasks.
  const std::vector<ArrayInfoTerm>& array_info_terms() const { return array_info_terms_; }
  // The values of array_info_terms()[k] after the last step or reset, as last_reward(): mjData's
  // own array, which holds them until the next step or reset, so that a step copies nothing.
  const double* array_values(size_t k) const { return data_->*array_info_terms_[k].values; }
  // Those of the last step before the latest reset, as ended_reward(): the reset copies them.
  const double* ended_array_values(size_t k) const { return ended_arrays_[k].data(); }

  // The Box of the model's actuators' control ranges, float32. Throws std::invalid_argument
  // naming the task, the file and the actuator when one has no control range.
  static Space action_space_of(const MujocoModel& model, const std::string& task);
  // Box(dim) over (-inf, inf), as Gymnasium declares its MuJoCo observations.
  static Space observation_space_of(int64_t dim);

 protected:
  MujocoEnv(EnvSpec spec, std::shared_ptr<const MujocoModel> model, int frame_skip);
  // A locomotion task's constructor names its info_terms(): the positions (kX: x_position; kXZ
  // adds z_distance_from_origin (Hopper, Walker2d); kXY adds y_position, distance_from_origin and
  // y_velocity (Swimmer, Ant, Humanoid); kNone: none, Custom-v0), x_velocity, reward_forward and
  // reward_ctrl, and its reward_survive and reward_contact when it has them.
  enum class Positions { kNone, kX, kXZ, kXY };
  void report_locomotion_info(bool survive, bool contact, Positions positions);
  // A task's constructor names its info_terms() in full.
  void report_info(std::vector<InfoTerm> terms) { info_terms_ = std::move(terms); }
  // A task's constructor names its array_info_terms(), each no longer than its mjData array.
  void report_array_info(std::vector<ArrayInfoTerm> terms);
  // The humanoids' array terms: tendon_length and tendon_velocity, one value per tendon of the
  // model, in the step's and the reset's info.
  void report_tendon_info();
  // The terms of the step being taken, for a task that is not a locomotion_step's.
  LocomotionReward& step_terms() { return last_reward_; }
  // Records the positions (x_position, ...) of the state now in last_reward();
  // set_height_coordinate names the qpos coordinate of z_distance_from_origin (1 unless set).
  void record_positions();
  void set_height_coordinate(int height) { height_ = height; }

  // Gymnasium's reset: mj_resetData (reset_data), then qpos = qpos0 + U(-scale, scale) per coordinate and
  // qvel = U(-scale, scale) (or scale x N(0, 1) with `normal_velocity`), then mj_forward.
  void reset_with_noise(double scale, bool normal_velocity);
  // ctrl = action (MuJoCo clamps it to each ctrlrange), frame_skip calls of mj_step. Returns false
  // when the physics diverged on the way (MuJoCo then reset the state to qpos0): the task ends
  // the episode with reward 0. Throws std::invalid_argument for a missing or non-finite action.
  bool simulate(const Action& action);
  // simulate() between two readings of the task's (x, y) (xy_of() returns a std::pair), for their
  // velocities over the step; nullopt when the physics diverged.
  template <typename XyOf>
  std::optional<std::pair<double, double>> simulate_xy_velocity(const Action& action, XyOf xy_of) {
    const std::pair<double, double> before = xy_of();
    if (!simulate(action)) return std::nullopt;
    const std::pair<double, double> after = xy_of();
    return std::make_pair((after.first - before.first) / dt(), (after.second - before.second) / dt());
  }
  // simulate() between two readings of the task's x (x_of(): the root's qpos[0], a body's xpos,
  // the centre of mass), for dx/dt over the step; nullopt when the physics diverged.
  template <typename XOf>
  std::optional<double> simulate_x_velocity(const Action& action, XOf x_of) {
    const double before = x_of();
    if (!simulate(action)) return std::nullopt;
    return (x_of() - before) / dt();
  }
  // The step of a locomotion task that moved at x_velocity: Gymnasium's reward terms (kept for
  // last_reward()) from `options`' weights, the action and the health verdict, minus a contact
  // cost the task weighed; terminated when unhealthy and options.terminate_when_unhealthy. Tasks
  // without health pass healthy = true (their healthy_reward is 0).
  StepResult locomotion_step(const TaskOptions& options, double x_velocity, const Action& action, bool healthy,
                             double contact_cost = 0.0, double y_velocity = 0.0);
  // The step on which the physics diverged: reward 0, the episode ends.
  StepResult diverged_step();
  // The external forces on each body (mjData::cfrc_ext), which mj_step leaves stale: Gymnasium
  // calls mj_rnePostConstraint after the step's physics, as the tasks that observe them do here.
  void compute_external_forces() { mj_rnePostConstraint(model(), data_); }
  // Sum of squares of the action as given (Gymnasium's control cost, before MuJoCo's clamp).
  double action_square_sum(const Action& action) const;
  // Writes qpos[first_qpos:] then qvel clipped to [-qvel_limit, qvel_limit] (infinity: unclipped),
  // as float32, from `observation` on; returns the number of floats written.
  int write_qpos_qvel(float* observation, int first_qpos, double qvel_limit) const;

  double uniform(double low, double high) { return core::uniform(rng(), low, high); }
  // A standard normal draw by Box-Muller from two uniforms: the same numbers on every platform.
  double normal();

 private:
  [[noreturn]] void throw_bad_action(const Action& action) const;

  std::shared_ptr<const MujocoModel> model_;
  mjData* data_ = nullptr;
  int frame_skip_ = 1;
  int64_t unstable_steps_ = 0;
  LocomotionReward last_reward_;
  LocomotionReward ended_reward_;
  std::vector<InfoTerm> info_terms_;
  std::vector<ArrayInfoTerm> array_info_terms_;
  std::vector<std::vector<double>> ended_arrays_;  // per array term, sized once
  int height_ = 1;
  static std::atomic<int64_t> process_unstable_steps_;
};

}  // namespace concord::envs::mujoco
