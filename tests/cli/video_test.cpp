// Videos of agents: each env family's renderer draws what Gymnasium (or MinAtar) draws, and
// `concord eval --video` writes a file FFmpeg reads back frame by frame.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

#include "concord/cli/video_writer.h"
#include "concord/envs/mujoco/mujoco_env.h"
#include "concord/envs/registry.h"
#include "concord/envs/rendering.h"

#include "cli/concord_process.h"

namespace {

using concord::envs::RgbFrame;
using ::testing::HasSubstr;

std::filesystem::path fresh_dir(const std::string& name) { return concord::test::fresh_dir("video_test", name); }

struct Pixel {
  int r, g, b;
  bool operator==(const Pixel& other) const { return r == other.r && g == other.g && b == other.b; }
};

Pixel at(const RgbFrame& frame, int x, int y) {
  const uint8_t* p = frame.pixels.data() + (static_cast<size_t>(y) * frame.width + x) * 3;
  return {p[0], p[1], p[2]};
}

int count(const RgbFrame& frame, Pixel colour) {
  int n = 0;
  for (int y = 0; y < frame.height; ++y) {
    for (int x = 0; x < frame.width; ++x) n += at(frame, x, y) == colour ? 1 : 0;
  }
  return n;
}

// The observation-drawn families render an observation as its own snapshot.
RgbFrame draw(const std::string& env_id, const std::vector<float>& observation) {
  auto renderer = concord::envs::make_env_renderer(*concord::envs::make_env(env_id));
  EXPECT_NE(renderer, nullptr) << env_id;
  RgbFrame frame;
  if (renderer) renderer->render(observation.data(), frame);
  return frame;
}

void copy_rgb(const AVFrame& frame, RgbFrame& out);

// Frames in a video file, decoded by libavformat and libavcodec; `first` gets the first frame's
// pixels where the decoder gives palette indices or 32-bit colour (GIF).
int decoded_frames(const std::filesystem::path& file, int* width, int* height, RgbFrame* first = nullptr) {
  AVFormatContext* format = nullptr;
  if (avformat_open_input(&format, file.c_str(), nullptr, nullptr) < 0) return -1;
  avformat_find_stream_info(format, nullptr);
  const int stream = av_find_best_stream(format, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  const AVCodec* decoder = avcodec_find_decoder(format->streams[stream]->codecpar->codec_id);
  AVCodecContext* codec = avcodec_alloc_context3(decoder);
  avcodec_parameters_to_context(codec, format->streams[stream]->codecpar);
  avcodec_open2(codec, decoder, nullptr);
  *width = codec->width;
  *height = codec->height;
  AVPacket* packet = av_packet_alloc();
  AVFrame* frame = av_frame_alloc();
  int frames = 0;
  const auto drain = [&] {
    while (avcodec_receive_frame(codec, frame) == 0) {
      if (frames++ == 0 && first != nullptr) copy_rgb(*frame, *first);
    }
  };
  while (av_read_frame(format, packet) >= 0) {
    if (packet->stream_index == stream && avcodec_send_packet(codec, packet) == 0) drain();
    av_packet_unref(packet);
  }
  avcodec_send_packet(codec, nullptr);
  drain();
  av_frame_free(&frame);
  av_packet_free(&packet);
  avcodec_free_context(&codec);
  avformat_close_input(&format);
  return frames;
}

void copy_rgb(const AVFrame& frame, RgbFrame& out) {
  out = RgbFrame{frame.width, frame.height, std::vector<uint8_t>(static_cast<size_t>(frame.width) * frame.height * 3)};
  for (int y = 0; y < frame.height; ++y) {
    for (int x = 0; x < frame.width; ++x) {
      uint32_t colour = 0;  // 0xAARRGGBB
      if (frame.format == AV_PIX_FMT_PAL8) {
        colour = reinterpret_cast<const uint32_t*>(frame.data[1])[frame.data[0][y * frame.linesize[0] + x]];
      } else if (frame.format == AV_PIX_FMT_BGRA) {
        colour = *reinterpret_cast<const uint32_t*>(frame.data[0] + y * frame.linesize[0] + 4 * x);
      } else {
        return;
      }
      uint8_t* p = out.pixels.data() + (static_cast<size_t>(y) * frame.width + x) * 3;
      p[0] = static_cast<uint8_t>(colour >> 16);
      p[1] = static_cast<uint8_t>(colour >> 8);
      p[2] = static_cast<uint8_t>(colour);
    }
  }
}

TEST(Rendering, CartPoleAsGymnasiumDrawsIt) {
  // Upright pole on a cart at the centre: 600x400, white, a black 50x30 cart, the pole's brown.
  const RgbFrame frame = draw("CartPole-v1", {0.0f, 0.0f, 0.0f, 0.0f});
  ASSERT_EQ(frame.width, 600);
  ASSERT_EQ(frame.height, 400);
  EXPECT_EQ(at(frame, 5, 5), (Pixel{255, 255, 255}));
  // The cart's centre is 100 pixels above the bottom (row 300 from the top), at x = 300.
  EXPECT_EQ(at(frame, 280, 290), (Pixel{0, 0, 0}));
  EXPECT_EQ(at(frame, 300, 250), (Pixel{202, 152, 101}));  // the pole, above the axle
  EXPECT_EQ(at(frame, 300, 293), (Pixel{129, 132, 203}));  // the axle
  // Moved right by 1 (125 pixels) and tilted: the cart follows.
  const RgbFrame moved = draw("CartPole-v1", {1.0f, 0.0f, 0.2f, 0.0f});
  EXPECT_EQ(at(moved, 280, 290), (Pixel{255, 255, 255}));
  EXPECT_EQ(at(moved, 405, 305), (Pixel{0, 0, 0}));
  EXPECT_EQ(at(moved, 100, 300), (Pixel{127, 127, 127}));  // the track, a line one pixel wide
}

TEST(Rendering, EveryClassicControlFamilyDraws) {
  const RgbFrame pendulum = draw("Pendulum-v1", {1.0f, 0.0f, 0.0f});  // theta 0: the rod points up
  EXPECT_EQ(pendulum.width, 500);
  EXPECT_EQ(at(pendulum, 250, 150), (Pixel{204, 77, 77}));
  EXPECT_EQ(at(pendulum, 250, 350), (Pixel{255, 255, 255}));
  const RgbFrame car = draw("MountainCar-v0", {-0.5f, 0.0f});
  EXPECT_GT(count(car, Pixel{204, 204, 0}), 50);                                      // the flag
  EXPECT_GT(count(car, Pixel{128, 128, 128}), 50);                                    // the wheels
  const RgbFrame acrobot = draw("Acrobot-v1", {1.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0.0f});  // hanging down
  EXPECT_EQ(at(acrobot, 250, 300), (Pixel{0, 204, 204}));
  EXPECT_EQ(at(acrobot, 250, 200), (Pixel{255, 255, 255}));
  EXPECT_NE(concord::envs::make_env_renderer(*concord::envs::make_env("MountainCarContinuous-v0")), nullptr);
  EXPECT_EQ(concord::envs::make_env_renderer(*concord::envs::make_env("DeepSea5-v0")), nullptr);
}

TEST(Rendering, MinAtarCellsInTheirChannelsColours) {
  auto renderer = concord::envs::make_env_renderer(*concord::envs::make_env("MinAtar/Breakout-v1"));
  ASSERT_NE(renderer, nullptr);
  std::vector<uint8_t> grid(10 * 10 * 4, 0);
  grid[(0 * 10 + 0) * 4 + 0] = 1;  // channel 0 at row 0, column 0
  grid[(9 * 10 + 9) * 4 + 3] = 1;  // channel 3 at the far corner
  grid[(5 * 10 + 5) * 4 + 1] = 1;  // channels 1 and 2 at one cell: 2 is shown
  grid[(5 * 10 + 5) * 4 + 2] = 1;
  RgbFrame frame;
  renderer->render(grid.data(), frame);
  ASSERT_EQ(frame.width, 320);
  EXPECT_EQ(at(frame, 100, 100), (Pixel{0, 0, 0}));
  // matplotlib's cubehelix at 1/5 and 4/5 (seaborn's 4-colour palette's first and last).
  const Pixel first = at(frame, 5, 5);
  const Pixel last = at(frame, 315, 315);
  EXPECT_LT(first.r + first.g + first.b, last.r + last.g + last.b);  // the map runs dark to light
  EXPECT_FALSE(at(frame, 5 * 32 + 5, 5 * 32 + 5) == first);
  EXPECT_FALSE(at(frame, 5 * 32 + 5, 5 * 32 + 5) == last);
}

// MuJoCo's own renderer, off-screen through EGL: a frame is the physics state capture() took, so
// the same positions draw the same picture, and moving the pole moves its pixels.
TEST(Rendering, MujocoDrawsThePositionsItCaptured) {
  auto env = concord::envs::make_env("MuJoCo/InvertedPendulum-v5");
  auto& physics = dynamic_cast<concord::envs::mujoco::MujocoEnv&>(*env);
  auto renderer = concord::envs::make_env_renderer(*env);
  ASSERT_NE(renderer, nullptr);
  EXPECT_EQ(renderer->width(), 480);
  EXPECT_EQ(renderer->frames_per_second(), 25);  // Gymnasium's render_fps: 1 / dt, dt = 0.02 x 2
  std::vector<float> observation(4);
  env->reset(3, observation.data());
  std::vector<uint8_t> upright, leaning;
  renderer->capture(*env, observation.data(), upright);
  ASSERT_EQ(upright.size(), 2 * sizeof(double));  // qpos: the cart's slide and the pole's hinge
  physics.data()->qpos[1] = 0.8;
  renderer->capture(*env, observation.data(), leaning);
  RgbFrame first, again, moved;
  renderer->render(upright.data(), first);
  renderer->render(leaning.data(), again);
  renderer->render(upright.data(), again);
  renderer->render(leaning.data(), moved);
  ASSERT_EQ(first.width, 480);
  ASSERT_EQ(first.height, 480);
  EXPECT_EQ(first.pixels, again.pixels);
  int changed = 0;
  for (size_t i = 0; i < first.pixels.size(); ++i) changed += first.pixels[i] != moved.pixels[i] ? 1 : 0;
  EXPECT_GT(changed, 1000);  // the pole's pixels, not noise
  // A second renderer (its own OpenGL context) draws the same picture.
  auto other = concord::envs::make_env_renderer(*env);
  RgbFrame twin;
  other->render(upright.data(), twin);
  EXPECT_EQ(twin.pixels, first.pixels);
}

TEST(VideoWriter, Mp4AndGifHoldEveryFrame) {
  const auto dir = fresh_dir("writer");
  RgbFrame frame{64, 48, std::vector<uint8_t>(64 * 48 * 3, 0)};
  for (const std::string name : {"clip.mp4", "clip.gif"}) {
    concord::cli::VideoWriter writer(dir / name, 64, 48, 25);
    for (int i = 0; i < 30; ++i) {
      std::fill(frame.pixels.begin(), frame.pixels.end(), static_cast<uint8_t>(i * 8));
      writer.add(frame);
    }
    EXPECT_FALSE(std::filesystem::exists(dir / name));  // not before it is whole
    writer.finish();
    int width = 0, height = 0;
    EXPECT_EQ(decoded_frames(dir / name, &width, &height), 30) << name;
    EXPECT_EQ(width, 64);
    EXPECT_EQ(height, 48);
  }
  std::ifstream gif(dir / "clip.gif", std::ios::binary);
  std::string magic(6, '\0');
  gif.read(magic.data(), 6);
  EXPECT_EQ(magic, "GIF89a");
  EXPECT_THROW(concord::cli::VideoWriter(dir / "clip.avi", 64, 48, 25), std::runtime_error);
}

// Hopper's 125 frames a second: a GIF keeps every 3rd (its delays are in hundredths of a second, and
// browsers slow those under 2 to 10); an MP4 keeps them all.
TEST(VideoWriter, GifPlaysAtMostFiftyFramesASecond) {
  const auto dir = fresh_dir("fast");
  RgbFrame frame{32, 32, std::vector<uint8_t>(32 * 32 * 3, 0)};
  for (const std::string name : {"fast.gif", "fast.mp4"}) {
    concord::cli::VideoWriter writer(dir / name, 32, 32, 125);
    for (int i = 0; i < 30; ++i) {
      std::fill(frame.pixels.begin(), frame.pixels.end(), static_cast<uint8_t>(i * 8));
      writer.add(frame);
    }
    writer.finish();
    EXPECT_EQ(writer.frames(), name == "fast.gif" ? 10 : 30);
    int width = 0, height = 0;
    EXPECT_EQ(decoded_frames(dir / name, &width, &height), writer.frames()) << name;
  }
}

TEST(VideoWriter, GifKeepsThePicturesOwnColours) {
  const RgbFrame cartpole = draw("CartPole-v1", {0.0f, 0.0f, 0.0f, 0.0f});
  const auto file = fresh_dir("gif") / "cartpole.gif";
  concord::cli::VideoWriter writer(file, cartpole.width, cartpole.height, 50);
  writer.add(cartpole);
  writer.finish();
  int width = 0, height = 0;
  RgbFrame decoded;
  ASSERT_EQ(decoded_frames(file, &width, &height, &decoded), 1);
  ASSERT_EQ(decoded.width, 600) << "the decoder gave neither palette indices nor 32-bit colour";
  for (const auto& [x, y] : std::vector<std::pair<int, int>>{{300, 250}, {300, 293}, {280, 290}, {100, 300}, {5, 5}}) {
    EXPECT_EQ(at(decoded, x, y), at(cartpole, x, y)) << x << "," << y;
  }
}

TEST(EvalVideo, FilmsOneEpisodeOfATrainedAgent) {
  const auto root = fresh_dir("eval");
  const concord::test::CommandResult train =
      concord::test::run_concord("train --total-timesteps 512 --num-envs 4 --progress off --run-root " + root.string());
  ASSERT_EQ(train.exit_code, 0) << train.output;
  const std::filesystem::path run_dir = concord::test::run_directories(root).at(0);
  const concord::test::CommandResult eval =
      concord::test::run_concord("eval " + run_dir.string() + " --video " + (root / "videos" / "episode.mp4").string());
  ASSERT_EQ(eval.exit_code, 0) << eval.output;
  int width = 0, height = 0;
  const int frames = decoded_frames(root / "videos" / "episode.mp4", &width, &height);
  EXPECT_THAT(eval.output, HasSubstr("video " + (root / "videos" / "episode.mp4").string() + ": " +
                                     std::to_string(frames) + " frames of one episode"));
  EXPECT_GE(frames, 9);  // and videos/ was made for it  // CartPole falls after 8 steps at the soonest; one frame a
                         // step and the first
  EXPECT_EQ(width, 600);
  const concord::test::CommandResult wrong =
      concord::test::run_concord("eval " + run_dir.string() + " --video " + (root / "episode.avi").string());
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_THAT(wrong.output, HasSubstr("must end in .mp4 or .gif"));
}

// The column `name` of a run's metrics.csv, as written.
std::vector<std::string> metric_column(const std::filesystem::path& run_dir, const std::string& name) {
  std::ifstream csv(run_dir / "metrics.csv");
  std::string line;
  std::getline(csv, line);
  std::vector<std::string> header;
  for (std::stringstream cells(line); std::getline(cells, line, ',');) header.push_back(line);
  const auto column = std::find(header.begin(), header.end(), name) - header.begin();
  std::vector<std::string> values;
  while (std::getline(csv, line)) {
    std::stringstream cells(line);
    std::string cell;
    for (std::ptrdiff_t i = 0; i <= column && std::getline(cells, cell, ','); ++i) {
    }
    values.push_back(cell);
  }
  return values;
}

// CleanRL's --capture-video: a video at each checkpoint and at the end (the last update's
// checkpoint is the end's, filmed once), and the run's numbers are those of the same run without.
TEST(TrainVideo, FilmsEachCheckpointAndTrainsAsWithout) {
  const auto root = fresh_dir("capture");
  const std::string common =
      "train --total-timesteps 2048 --num-envs 4 --seed 3 --progress off "
      "--set train.checkpoint_interval_steps=1024 --run-root ";
  const concord::test::CommandResult filmed =
      concord::test::run_concord(common + (root / "filmed").string() + " --capture-video");
  ASSERT_EQ(filmed.exit_code, 0) << filmed.output;
  const concord::test::CommandResult plain = concord::test::run_concord(common + (root / "plain").string());
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  const std::filesystem::path run = concord::test::run_directories(root / "filmed").at(0);
  int videos = 0;
  for (const auto& entry : std::filesystem::directory_iterator(run / "videos")) {
    (void)entry;
    ++videos;
  }
  EXPECT_EQ(videos, 2);
  for (const std::string step : {"1024", "2048"}) {
    int width = 0, height = 0;
    EXPECT_GE(decoded_frames(run / "videos" / ("step_" + step + ".mp4"), &width, &height), 9) << step;
    EXPECT_EQ(width, 600);
  }
  const std::vector<std::string> losses = metric_column(run, "losses/value_loss");
  EXPECT_EQ(losses.size(), 4U);
  EXPECT_EQ(losses, metric_column(concord::test::run_directories(root / "plain").at(0), "losses/value_loss"));

  const concord::test::CommandResult refused = concord::test::run_concord(
      "train --env DeepSea5-v0 --capture-video --progress off --run-root " + (root / "refused").string());
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.output, HasSubstr("train.capture_video: no renderer draws DeepSea5-v0"));
  EXPECT_FALSE(std::filesystem::exists(root / "refused"));
}

TEST(EvalVideo, FilmsAMujocoTask) {
  const auto root = fresh_dir("eval_mujoco");
  const concord::test::CommandResult train = concord::test::run_concord(
      "train --env MuJoCo/InvertedPendulum-v5 --total-timesteps 256 --num-envs 2 --progress off --run-root " +
      root.string());
  ASSERT_EQ(train.exit_code, 0) << train.output;
  const std::filesystem::path run_dir = concord::test::run_directories(root).at(0);
  const concord::test::CommandResult eval =
      concord::test::run_concord("eval " + run_dir.string() + " --video " + (root / "pendulum.gif").string());
  ASSERT_EQ(eval.exit_code, 0) << eval.output;
  int width = 0, height = 0;
  const int frames = decoded_frames(root / "pendulum.gif", &width, &height);
  EXPECT_THAT(eval.output, HasSubstr(std::to_string(frames) + " frames of one episode"));
  EXPECT_GE(frames, 2);  // the reset's frame and one a step
  EXPECT_EQ(width, 480);
  EXPECT_EQ(height, 480);
}

}  // namespace
