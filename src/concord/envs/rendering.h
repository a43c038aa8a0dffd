#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "concord/envs/env.h"

namespace concord::envs {

// One RGB picture of an environment: height rows of width pixels, 3 bytes each, top row first.
struct RgbFrame {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;  // width * height * 3
};

// Draws an environment. Most families draw from the observation, which for them holds everything
// the picture shows: classic control as Gymnasium's rgb_array renderers draw it (sizes, colours
// and geometry of CartPole, Pendulum, MountainCar and Acrobot), MinAtar's grids with each
// occupied cell in its channel's colour (MinAtar's cubehelix palette; the highest channel wins).
// MuJoCo's observations leave out positions the picture needs, so its renderer takes the physics
// state from the env instead (mujoco/rendering.cpp). A frame is therefore made in two parts:
// capture() takes what it shows right after the env's reset or step, and render() draws it later
// (Python's render() draws every env's latest state on demand). Not thread-safe; one renderer per
// thread.
class EnvRenderer {
 public:
  virtual ~EnvRenderer() = default;
  int width() const { return width_; }
  int height() const { return height_; }
  // Gymnasium's render_fps for the env: what a video of it plays at.
  int frames_per_second() const { return fps_; }
  // Keeps in `snapshot` what `env` shows now, right after a reset or step that wrote
  // `observation` and while no other thread steps it. The default keeps the observation's bytes.
  virtual void capture(const Env& env, const void* observation, std::vector<uint8_t>& snapshot);
  // Draws a snapshot capture() kept (for the observation-drawn families: one element of the env's
  // observation space, in its dtype). Resizes `frame`.
  virtual void render(const void* snapshot, RgbFrame& frame) = 0;

 protected:
  EnvRenderer(int width, int height, int fps) : width_(width), height_(height), fps_(fps) {}

 private:
  int width_;
  int height_;
  int fps_;
};

// The renderer for `env`'s family (made for that env's spec and, for MuJoCo, its model), or
// nullptr when no family draws it. Throws std::runtime_error when the family renders but cannot
// here (MuJoCo without an off-screen OpenGL context), naming why.
std::unique_ptr<EnvRenderer> make_env_renderer(const Env& env);

// The env families that render, for an error naming them.
std::string renderable_envs();

// The families' own factories (classic_control/rendering.cpp, minatar/rendering.cpp,
// mujoco/rendering.cpp); nullptr for an env not of the family.
std::unique_ptr<EnvRenderer> make_classic_control_renderer(const EnvSpec& spec);
std::unique_ptr<EnvRenderer> make_minatar_renderer(const EnvSpec& spec);
std::unique_ptr<EnvRenderer> make_mujoco_renderer(const Env& env);

}  // namespace concord::envs
