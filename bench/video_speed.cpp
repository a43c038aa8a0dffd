// video_speed: how long `concord eval --video` takes to draw and encode an episode, split by stage.
//
//   build/bench/video_speed [--steps 500] [--repeats 3] [--png DIR]
//
// For CartPole-v1 (a 500-step episode: a balancing rule, push toward the pole's lean, keeps it up
// until the time limit), MinAtar/Breakout-v1 (500 steps of random actions, a new game after
// each ends) and MuJoCo/HalfCheetah-v5 (500 steps of zero torque; 480 x 480 frames drawn by MuJoCo's
// renderer off-screen through EGL) it times, best of --repeats:
//   env     the env's steps alone (the baseline: what a video adds goes on top of it);
//   draw    the steps and the renderer's frames (envs/rendering.h);
//   mp4     the steps, the frames and the MP4 file (cli/video_writer.h);
//   gif     the same into a GIF.
// The trained network's acting is not in it (one small forward pass a step). With --png DIR it
// writes frames as PNG pictures (Cairo's writer) to look at: each classic-control and MuJoCo
// env's first frame, CartPole's frame 100, a Breakout frame and HalfCheetah's frame 100.

#include <cairo.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "concord/cli/video_writer.h"
#include "concord/core/rng.h"
#include "concord/core/timer.h"
#include "concord/envs/registry.h"
#include "concord/envs/rendering.h"
#include "machine_load.h"

namespace {

using concord::envs::RgbFrame;

enum class Stage { kEnv, kDraw, kMp4, kGif };

void write_png(const RgbFrame& frame, const std::filesystem::path& file) {
  cairo_surface_t* surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, frame.width, frame.height);
  cairo_surface_flush(surface);
  unsigned char* data = cairo_image_surface_get_data(surface);
  const int stride = cairo_image_surface_get_stride(surface);
  for (int y = 0; y < frame.height; ++y) {
    auto* row = reinterpret_cast<uint32_t*>(data + static_cast<ptrdiff_t>(y) * stride);
    for (int x = 0; x < frame.width; ++x) {
      const uint8_t* p = frame.pixels.data() + (static_cast<size_t>(y) * frame.width + x) * 3;
      row[x] = (uint32_t{p[0]} << 16) | (uint32_t{p[1]} << 8) | p[2];
    }
  }
  cairo_surface_mark_dirty(surface);
  cairo_surface_write_to_png(surface, file.c_str());
  cairo_surface_destroy(surface);
}

// One run of `steps` steps of `env_id` up to `stage`; returns seconds. Saves frame `png_frame` to `png`.
double film(const std::string& env_id, int steps, Stage stage, const std::filesystem::path& work,
            const std::filesystem::path& png = {}, int png_frame = -1) {
  concord::core::Stopwatch clock;
  auto env = concord::envs::make_env(env_id);
  const auto spec = env->spec();
  auto renderer = concord::envs::make_env_renderer(*env);
  std::unique_ptr<concord::cli::VideoWriter> writer;
  if (stage == Stage::kMp4 || stage == Stage::kGif) {
    writer = std::make_unique<concord::cli::VideoWriter>(work / (stage == Stage::kMp4 ? "clip.mp4" : "clip.gif"),
                                                         renderer->width(), renderer->height(),
                                                         renderer->frames_per_second());
  }
  const bool bytes = spec.observation_space.dtype() == concord::envs::Dtype::kUInt8;
  std::vector<float> floats(static_cast<size_t>(spec.observation_space.flat_size()));
  std::vector<uint8_t> grid(static_cast<size_t>(spec.observation_space.flat_size()));
  void* observation = bytes ? static_cast<void*>(grid.data()) : static_cast<void*>(floats.data());
  std::vector<float> zero_action(static_cast<size_t>(spec.action_space.flat_size()), 0.0f);  // Box envs: no push
  concord::core::Rng rng(7);
  RgbFrame frame;
  std::vector<uint8_t> snapshot;
  env->reset(1, observation);
  for (int step = 0; step <= steps; ++step) {
    if (stage != Stage::kEnv) {
      renderer->capture(*env, observation, snapshot);
      renderer->render(snapshot.data(), frame);
      if (writer) writer->add(frame);
      if (step == png_frame && !png.empty()) write_png(frame, png);
    }
    if (step == steps) break;
    concord::envs::Action action;
    action.values = zero_action.data();
    // CartPole: push the way the pole leans and turns; elsewhere a random action.
    action.index = bytes ? concord::core::uniform_index(rng, spec.action_space.n())
                         : (floats[2] + 0.5f * floats[3] > 0.0f ? 1 : 0);
    const auto result = env->step(action, observation);
    if (result.terminated || result.truncated) {
      if (!bytes && step + 1 < steps) std::printf("note: %s ended at step %d\n", env_id.c_str(), step + 1);
      env->reset(static_cast<uint64_t>(step) + 2, observation);
    }
  }
  if (writer) writer->finish();
  return clock.elapsed_seconds();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Seconds to draw and encode a 500-step episode, by stage"};
  int steps = 500;
  int repeats = 3;
  std::string png_dir;
  app.add_option("--steps", steps, "Steps an episode")->check(CLI::Range(1, 100000));
  app.add_option("--repeats", repeats, "Runs of each cell; the best is shown")->check(CLI::Range(1, 100));
  app.add_option("--png", png_dir, "Write frames as PNG pictures into this folder");
  CLI11_PARSE(app, argc, argv);

  const std::filesystem::path work = std::filesystem::temp_directory_path() / "concord_video_speed";
  std::filesystem::create_directories(work);
  if (!png_dir.empty()) {
    std::filesystem::create_directories(png_dir);
    for (const std::string id :
         {"CartPole-v1", "Pendulum-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Acrobot-v1",
          "MuJoCo/InvertedPendulum-v5", "MuJoCo/InvertedDoublePendulum-v5", "MuJoCo/Reacher-v5", "MuJoCo/Swimmer-v5",
          "MuJoCo/HalfCheetah-v5", "MuJoCo/Hopper-v5", "MuJoCo/Walker2d-v5", "MuJoCo/Ant-v5", "MuJoCo/Humanoid-v5",
          "MuJoCo/HumanoidStandup-v5"}) {
      std::string name = id;
      std::replace(name.begin(), name.end(), '/', '_');
      film(id, 1, Stage::kDraw, work, std::filesystem::path(png_dir) / (name + ".png"), 0);
    }
    film("MuJoCo/HalfCheetah-v5", 100, Stage::kDraw, work, std::filesystem::path(png_dir) / "HalfCheetah-v5_100.png",
         100);
    film("CartPole-v1", 100, Stage::kDraw, work, std::filesystem::path(png_dir) / "CartPole-v1_100.png", 100);
    film("MinAtar/Breakout-v1", 40, Stage::kDraw, work, std::filesystem::path(png_dir) / "Breakout-v1_40.png", 40);
  }

  std::printf("video_speed: %d steps (%d frames), best of %d, load %s\n", steps, steps + 1, repeats,
              concord::bench::load_average().c_str());
  std::printf("%-22s %10s %10s %10s %10s\n", "env", "env (s)", "draw (s)", "mp4 (s)", "gif (s)");
  for (const std::string id : {"CartPole-v1", "MinAtar/Breakout-v1", "MuJoCo/HalfCheetah-v5"}) {
    double best[4] = {1e9, 1e9, 1e9, 1e9};
    for (int r = 0; r < repeats; ++r) {
      for (Stage stage : {Stage::kEnv, Stage::kDraw, Stage::kMp4, Stage::kGif}) {
        const int i = static_cast<int>(stage);
        best[i] = std::min(best[i], film(id, steps, stage, work));
      }
    }
    std::printf("%-22s %10.6f %10.3f %10.3f %10.3f\n", id.c_str(), best[0], best[1], best[2], best[3]);
  }
  std::filesystem::remove_all(work);
  return 0;
}
