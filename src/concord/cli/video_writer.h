#pragma once

#include <filesystem>
#include <memory>

#include "concord/envs/rendering.h"

namespace concord::cli {

// Writes RGB frames as a video through FFmpeg's libraries: H.264 (libx264, preset ultrafast) in
// MP4 for a .mp4 file, GIF (256 colours chosen from the first frame) for a .gif one; a GIF plays
// at most 50 frames a second and keeps every k-th frame of a faster env (frames() counts those
// kept). The file appears once finish() has written it whole (a temporary beside it is renamed);
// missing folders on its path are made. Throws std::runtime_error naming the file and FFmpeg's
// reason.
class VideoWriter {
 public:
  VideoWriter(const std::filesystem::path& file, int width, int height, int frames_per_second);
  ~VideoWriter();
  VideoWriter(const VideoWriter&) = delete;
  VideoWriter& operator=(const VideoWriter&) = delete;

  // One frame of the width and height given to the constructor.
  void add(const envs::RgbFrame& frame);
  // Flushes the encoder, writes the container's trailer and moves the file into place.
  void finish();
  // Frames written to the file.
  int frames() const;

  // Whether `file`'s extension is one VideoWriter writes (.mp4 or .gif).
  static bool supports(const std::filesystem::path& file);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace concord::cli
