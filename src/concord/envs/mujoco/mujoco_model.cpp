#include "concord/envs/mujoco/mujoco_model.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <stdexcept>
#include <system_error>

namespace concord::envs::mujoco {
namespace {

// MuJoCo prints each warning (a diverging simulation among them) to stdout by default, from
// whichever thread steps the env; the envs detect those states from mjData's warning counters
// instead (MujocoEnv::simulate), so the process-wide handler is silenced once.
void quiet_warning(const char*) {}

// MuJoCo's own handler of a fatal error prints "Press Enter to exit ..." and waits on stdin, which
// hangs a run with a terminal. The handler must not return: one line, then the exit.
[[noreturn]] void fatal_error(const char* message) {
  std::fprintf(stderr, "concord: MuJoCo: %s\n", message);
  std::fflush(stderr);
  std::_Exit(1);
}

std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

const char* object_name(int type) {
  switch (type) {
    case mjOBJ_JOINT:
      return "joint";
    case mjOBJ_BODY:
      return "body";
    case mjOBJ_SITE:
      return "site";
    case mjOBJ_ACTUATOR:
      return "actuator";
    case mjOBJ_GEOM:
      return "geom";
    default:
      return "object";
  }
}

}  // namespace

MujocoModel::~MujocoModel() { mj_deleteModel(model_); }

std::shared_ptr<const MujocoModel> MujocoModel::load(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<const MujocoModel>> loaded;
  static std::once_flag quiet;
  std::call_once(quiet, [] {
    mju_user_warning = quiet_warning;
    mju_user_error = fatal_error;
  });

  std::error_code error;
  std::string key = std::filesystem::weakly_canonical(path, error).string();
  if (error) key = path;
  // The loader is not thread-safe, and envs of one vector are made one after another anyway.
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = loaded.find(key); it != loaded.end()) {
    if (std::shared_ptr<const MujocoModel> model = it->second.lock()) return model;
  }
  char message[1000] = "";
  mjModel* model = mj_loadXML(path.c_str(), nullptr, message, sizeof message);
  if (model == nullptr) {
    const std::string reason = message[0] != '\0' ? one_line(message) : std::string("MuJoCo could not load it");
    throw std::invalid_argument("MuJoCo model file '" + path + "': " + reason);
  }
  std::shared_ptr<const MujocoModel> shared(new MujocoModel(model, path));
  loaded[key] = shared;
  return shared;
}

int MujocoModel::require(int type, const std::string& name, const std::string& task) const {
  const int id = mj_name2id(model_, type, name.c_str());
  if (id < 0) {
    throw std::invalid_argument(task + ": model file '" + path_ + "' has no " + object_name(type) + " '" + name +
                                "', which the task needs");
  }
  return id;
}

void MujocoModel::require_sizes(const std::string& task, int nu, int nq, int nv) const {
  const auto check = [&](int have, int need, const char* what) {
    if (have != need) {
      throw std::invalid_argument(task + ": model file '" + path_ + "' has " + std::to_string(have) + " " + what +
                                  ", the task needs " + std::to_string(need));
    }
  };
  check(model_->nu, nu, "actuators");
  check(model_->nq, nq, "position coordinates (nq)");
  check(model_->nv, nv, "velocity coordinates (nv)");
}

}  // namespace concord::envs::mujoco
