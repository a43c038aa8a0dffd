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

// Draws an environment from its observation, which for the built-in families holds everything
// the picture shows: classic control as Gymnasium's rgb_array renderers draw it (sizes, colours
// and geometry of CartPole, Pendulum, MountainCar and Acrobot), MinAtar's grids with each
// occupied cell in its channel's colour (MinAtar's cubehelix palette; the highest channel wins).
// Not thread-safe; one renderer per thread.
class ObservationRenderer {
 public:
  virtual ~ObservationRenderer() = default;
  int width() const { return width_; }
  int height() const { return height_; }
  // Gymnasium's render_fps for the env: what a video of it plays at.
  int frames_per_second() const { return fps_; }
  // `observation` is one element of the env's observation space (its dtype). Resizes `frame`.
  virtual void render(const void* observation, RgbFrame& frame) = 0;

 protected:
  ObservationRenderer(int width, int height, int fps) : width_(width), height_(height), fps_(fps) {}

 private:
  int width_;
  int height_;
  int fps_;
};

// The renderer for `spec`'s env, or nullptr when none of the families knows it.
std::unique_ptr<ObservationRenderer> make_observation_renderer(const EnvSpec& spec);

// The env families that render, for an error naming them.
std::string renderable_envs();

// The families' own factories (classic_control/rendering.cpp, minatar/rendering.cpp).
std::unique_ptr<ObservationRenderer> make_classic_control_renderer(const EnvSpec& spec);
std::unique_ptr<ObservationRenderer> make_minatar_renderer(const EnvSpec& spec);

}  // namespace concord::envs
