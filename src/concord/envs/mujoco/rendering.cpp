// MuJoCo's envs drawn by MuJoCo's own renderer (mjv_/mjr_) into an off-screen framebuffer.

#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <mujoco/mujoco.h>

#include "concord/envs/mujoco/mujoco_env.h"
#include "concord/envs/mujoco/offscreen_context.h"
#include "concord/envs/rendering.h"

namespace concord::envs {
namespace {

using mujoco::MujocoEnv;
using mujoco::OffscreenContext;

// Gymnasium's MuJoCo frames are 480 x 480 (its DEFAULT_SIZE).
constexpr int kSize = 480;
// Gymnasium's MujocoRenderer allots room for as many geoms.
constexpr int kMaxGeoms = 1000;

// Where a task's camera stands. A walking robot is followed: the camera looks at the centre of mass
// of its first body's subtree (the whole robot), set anew for each frame; MuJoCo's own tracking
// camera eases toward it a fifth of the way per frame instead, so a frame would depend on the ones
// drawn before it (and Python's render() draws every env with one camera). The pendulums and the
// reacher, which stay in place, are seen by a still camera aimed at the model's centre. Distances
// in metres; 0 keeps MuJoCo's default for the model (1.5 x its extent).
struct View {
  const char* id;
  bool follow;
  double distance;
  double elevation;  // degrees; negative looks down
};

constexpr View kViews[] = {
    {"MuJoCo/HalfCheetah-v5", true, 4.0, -20.0},
    {"MuJoCo/SparseHalfCheetah-v0", true, 4.0, -20.0},
    {"MuJoCo/Hopper-v5", true, 3.0, -20.0},
    {"MuJoCo/Walker2d-v5", true, 4.0, -20.0},
    {"MuJoCo/Swimmer-v5", true, 6.0, -60.0},
    {"MuJoCo/Ant-v5", true, 5.0, -30.0},
    {"MuJoCo/Humanoid-v5", true, 4.0, -20.0},
    {"MuJoCo/HumanoidStandup-v5", true, 4.0, -20.0},
    {"MuJoCo/Reacher-v5", false, 1.0, -70.0},
    {"MuJoCo/InvertedPendulum-v5", false, 2.0, -10.0},
    {"MuJoCo/InvertedDoublePendulum-v5", false, 3.0, -10.0},
};
// A user's own model (Custom-v0): followed, at MuJoCo's distance for it.
constexpr View kCustomView = {"MuJoCo/Custom-v0", true, 0.0, -20.0};

const View& view_of(const std::string& id) {
  for (const View& view : kViews) {
    if (id == view.id) return view;
  }
  return kCustomView;
}

class MujocoRenderer final : public EnvRenderer {
 public:
  MujocoRenderer(const MujocoEnv& env, const View& view)
      : EnvRenderer(kSize, kSize, static_cast<int>(std::lround(1.0 / env.dt()))),
        // The renderer's own copy of the model: the off-screen framebuffer's size is read from it.
        model_(mj_copyModel(nullptr, env.model())),
        data_(mj_makeData(model_)) {
    model_->vis.global.offwidth = width();
    model_->vis.global.offheight = height();
    mjv_defaultOption(&option_);
    mjv_defaultScene(&scene_);
    mjv_makeScene(model_, &scene_, kMaxGeoms);
    mjv_defaultFreeCamera(model_, &camera_);
    if (view.distance > 0.0) camera_.distance = view.distance;
    camera_.elevation = view.elevation;
    follow_ = view.follow && model_->nbody > 1;
    mjr_defaultContext(&context_);
    gl_.make_current();
    mjr_makeContext(model_, &context_, mjFONTSCALE_100);
    mjr_setBuffer(mjFB_OFFSCREEN, &context_);
    const bool offscreen = context_.currentBuffer == mjFB_OFFSCREEN;
    gl_.release();
    if (!offscreen) {
      free();
      throw std::runtime_error("MuJoCo rendering: OpenGL (" + gl_.renderer() +
                               ") gave MuJoCo no off-screen framebuffer");
    }
  }

  ~MujocoRenderer() override { free(); }
  MujocoRenderer(const MujocoRenderer&) = delete;
  MujocoRenderer& operator=(const MujocoRenderer&) = delete;

  // The positions are the whole picture: every body's place follows from qpos.
  void capture(const Env& env, const void* /*observation*/, std::vector<uint8_t>& snapshot) override {
    const auto& physics = dynamic_cast<const MujocoEnv&>(env);
    if (physics.model()->nq != model_->nq) {
      throw std::invalid_argument("MuJoCo rendering: " + env.spec().id + "'s model has " +
                                  std::to_string(physics.model()->nq) + " position coordinates, the renderer's " +
                                  std::to_string(model_->nq));
    }
    snapshot.resize(sizeof(mjtNum) * static_cast<size_t>(model_->nq));
    std::memcpy(snapshot.data(), physics.data()->qpos, snapshot.size());
  }

  void render(const void* snapshot, RgbFrame& frame) override {
    std::memcpy(data_->qpos, snapshot, sizeof(mjtNum) * static_cast<size_t>(model_->nq));
    mj_kinematics(model_, data_);
    mj_comPos(model_, data_);  // the subtree centres of mass the following camera looks at
    mj_camlight(model_, data_);
    if (follow_) mju_copy3(camera_.lookat, data_->subtree_com + 3);  // body 1's subtree
    mjv_updateScene(model_, data_, &option_, nullptr, &camera_, mjCAT_ALL, &scene_);
    const mjrRect viewport{0, 0, width(), height()};
    pixels_.resize(static_cast<size_t>(width()) * static_cast<size_t>(height()) * 3);
    gl_.make_current();
    mjr_render(viewport, &scene_, &context_);
    mjr_readPixels(pixels_.data(), nullptr, viewport, &context_);
    gl_.release();
    // OpenGL's rows run bottom to top; a frame's top to bottom.
    frame.width = width();
    frame.height = height();
    frame.pixels.resize(pixels_.size());
    const size_t row = static_cast<size_t>(width()) * 3;
    for (int y = 0; y < height(); ++y) {
      std::memcpy(frame.pixels.data() + static_cast<size_t>(y) * row,
                  pixels_.data() + static_cast<size_t>(height() - 1 - y) * row, row);
    }
  }

 private:
  void free() noexcept {
    try {
      gl_.make_current();
      mjr_freeContext(&context_);
      gl_.release();
    } catch (const std::exception&) {
      // The context cannot be made current: its objects go with it when it is destroyed.
    }
    mjv_freeScene(&scene_);
    mj_deleteData(data_);
    mj_deleteModel(model_);
  }

  OffscreenContext gl_;
  mjModel* model_;
  mjData* data_;
  mjvOption option_{};
  mjvScene scene_{};
  mjvCamera camera_{};
  bool follow_ = false;
  mjrContext context_{};
  std::vector<uint8_t> pixels_;
};

}  // namespace

std::unique_ptr<EnvRenderer> make_mujoco_renderer(const Env& env) {
  const auto* physics = dynamic_cast<const MujocoEnv*>(&env);
  if (physics == nullptr) return nullptr;
  return std::make_unique<MujocoRenderer>(*physics, view_of(env.spec().id));
}

}  // namespace concord::envs
