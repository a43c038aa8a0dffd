#pragma once

#include <memory>
#include <string>

#include <mujoco/mujoco.h>

namespace concord::envs::mujoco {

// One compiled MJCF model (MuJoCo's mjModel), shared read-only by every env made from the same
// file while any of them lives: a vector env's N envs hold one model and N mjData. mj_step reads
// the model through a const pointer, so sharing it across the engine's threads is safe.
class MujocoModel {
 public:
  ~MujocoModel();
  MujocoModel(const MujocoModel&) = delete;
  MujocoModel& operator=(const MujocoModel&) = delete;

  // The model compiled from `path`, compiled once per file while one is held. Throws
  // std::invalid_argument "MuJoCo model file '<path>': <MuJoCo's message>" when the file does not
  // exist or MuJoCo cannot compile it.
  static std::shared_ptr<const MujocoModel> load(const std::string& path);

  const mjModel* get() const { return model_; }
  const std::string& path() const { return path_; }

  // Id of the named object of `type` (mjOBJ_JOINT, mjOBJ_BODY, mjOBJ_SITE, ...); throws
  // std::invalid_argument "<task>: model file '<path>' has no <what> '<name>'" when there is none.
  int require(int type, const std::string& name, const std::string& task) const;
  // Throws std::invalid_argument naming the task, the file and the counts when the model's
  // actuators (nu), position coordinates (nq) or velocity coordinates (nv) differ from the task's.
  void require_sizes(const std::string& task, int nu, int nq, int nv) const;

 private:
  MujocoModel(mjModel* model, std::string path) : model_(model), path_(std::move(path)) {}

  mjModel* model_;
  std::string path_;
};

}  // namespace concord::envs::mujoco
