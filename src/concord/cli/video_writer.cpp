#include "concord/cli/video_writer.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
}

namespace concord::cli {
namespace {

bool is_gif(const std::filesystem::path& file) { return file.extension() == ".gif"; }

std::string av_error(int code) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {0};
  av_strerror(code, text, sizeof(text));
  return text;
}

// A GIF's 256 colours: the first frame's 40 most frequent (an env's picture is a few flat
// colours and their anti-aliased edges, drawn exactly) and a 6x6x6 colour cube for what appears
// later (a MinAtar object not yet on the first frame), with a table from 15-bit colour to the
// nearest of them. libswscale's fixed 3-3-2 palette turned CartPole's brown pole and grey track
// yellow.
class GifPalette {
 public:
  explicit GifPalette(const envs::RgbFrame& frame) {
    std::unordered_map<uint32_t, int> counts;
    for (size_t i = 0; i + 2 < frame.pixels.size(); i += 3) {
      ++counts[(uint32_t{frame.pixels[i]} << 16) | (uint32_t{frame.pixels[i + 1]} << 8) | frame.pixels[i + 2]];
    }
    std::vector<std::pair<int, uint32_t>> ranked;
    for (const auto& [colour, count] : counts) ranked.emplace_back(count, colour);
    std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a > b; });
    size_t used = 0;
    for (; used < ranked.size() && used < kFromFrame; ++used) colours_[used] = 0xFF000000u | ranked[used].second;
    for (uint32_t r = 0; r < 6; ++r) {
      for (uint32_t g = 0; g < 6; ++g) {
        for (uint32_t b = 0; b < 6; ++b) colours_[used++] = 0xFF000000u | (r * 51 << 16) | (g * 51 << 8) | (b * 51);
      }
    }
    for (uint32_t bin = 0; bin < nearest_.size(); ++bin) {
      const int r = static_cast<int>((bin >> 10) << 3) + 4, g = static_cast<int>(((bin >> 5) & 31) << 3) + 4,
                b = static_cast<int>((bin & 31) << 3) + 4;
      int best = 0, best_distance = 1 << 30;
      for (size_t c = 0; c < used; ++c) {
        const int dr = r - static_cast<int>((colours_[c] >> 16) & 255),
                  dg = g - static_cast<int>((colours_[c] >> 8) & 255), db = b - static_cast<int>(colours_[c] & 255);
        const int distance = dr * dr + dg * dg + db * db;
        if (distance < best_distance) {
          best_distance = distance;
          best = static_cast<int>(c);
        }
      }
      nearest_[bin] = static_cast<uint8_t>(best);
    }
    // The first frame's colours map to themselves, whatever their bin's centre is nearest to.
    for (size_t c = std::min(ranked.size(), kFromFrame); c-- > 0;) {
      nearest_[bin_of(colours_[c])] = static_cast<uint8_t>(c);
    }
  }

  // Writes `frame` as palette indices into `indices` (rows `stride` bytes apart) and the palette.
  void convert(const envs::RgbFrame& frame, uint8_t* indices, int stride, uint8_t* palette) const {
    for (int y = 0; y < frame.height; ++y) {
      const uint8_t* in = frame.pixels.data() + static_cast<size_t>(y) * frame.width * 3;
      uint8_t* out = indices + static_cast<ptrdiff_t>(y) * stride;
      for (int x = 0; x < frame.width; ++x, in += 3) {
        out[x] = nearest_[((in[0] >> 3) << 10) | ((in[1] >> 3) << 5) | (in[2] >> 3)];
      }
    }
    std::copy(colours_.begin(), colours_.end(), reinterpret_cast<uint32_t*>(palette));
  }

 private:
  static uint32_t bin_of(uint32_t colour) {
    return (((colour >> 19) & 31) << 10) | (((colour >> 11) & 31) << 5) | ((colour >> 3) & 31);
  }
  static constexpr size_t kFromFrame = 256 - 216;
  std::array<uint32_t, 256> colours_{};
  std::array<uint8_t, 1 << 15> nearest_{};
};

}  // namespace

struct VideoWriter::State {
  std::filesystem::path file;
  std::filesystem::path temporary;
  int width = 0;
  int height = 0;
  int frames = 0;   // written
  int offered = 0;  // given to add()
  int keep_every = 1;
  bool finished = false;
  AVFormatContext* format = nullptr;
  AVCodecContext* codec = nullptr;
  AVStream* stream = nullptr;
  AVFrame* picture = nullptr;
  AVPacket* packet = nullptr;
  SwsContext* scaler = nullptr;         // RGB to the MP4 encoder's YUV
  std::unique_ptr<GifPalette> palette;  // RGB to a GIF's indexed colours

  [[noreturn]] void fail(const std::string& what, int code) const {
    throw std::runtime_error("video '" + file.string() + "': " + what + (code < 0 ? ": " + av_error(code) : ""));
  }
  void check(int code, const std::string& what) const {
    if (code < 0) fail(what, code);
  }

  // Sends `frame` (nullptr: flush) and writes every packet the encoder has ready.
  void encode(AVFrame* frame) {
    check(avcodec_send_frame(codec, frame), "encoding a frame");
    while (true) {
      const int received = avcodec_receive_packet(codec, packet);
      if (received == AVERROR(EAGAIN) || received == AVERROR_EOF) return;
      check(received, "encoding a frame");
      // One frame each: MP4 gives the last sample this duration (0 would drop it from playback).
      if (packet->duration == 0) packet->duration = 1;
      av_packet_rescale_ts(packet, codec->time_base, stream->time_base);
      packet->stream_index = stream->index;
      check(av_interleaved_write_frame(format, packet), "writing a frame");
    }
  }

  ~State() {
    sws_freeContext(scaler);
    av_packet_free(&packet);
    av_frame_free(&picture);
    avcodec_free_context(&codec);
    if (format != nullptr) {
      if (format->pb != nullptr) avio_closep(&format->pb);
      avformat_free_context(format);
    }
    if (!finished && !temporary.empty()) {
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
    }
  }
};

bool VideoWriter::supports(const std::filesystem::path& file) {
  return file.extension() == ".mp4" || file.extension() == ".gif";
}

VideoWriter::VideoWriter(const std::filesystem::path& file, int width, int height, int frames_per_second)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.file = file;
  s.width = width;
  s.height = height;
  if (!supports(file)) s.fail("the file must end in .mp4 or .gif", 0);
  // libx264 prints its settings and statistics at FFmpeg's default level; errors still come through.
  av_log_set_level(AV_LOG_ERROR);
  const bool gif = is_gif(file);
  // A new folder is made, so that `--video RUN/videos/NAME.mp4` (where the board finds it) just works.
  if (file.has_parent_path()) {
    std::error_code error;
    std::filesystem::create_directories(file.parent_path(), error);
    if (error) s.fail("cannot make its folder: " + error.message(), 0);
  }
  s.temporary = file;
  s.temporary += ".partial";
  s.check(avformat_alloc_output_context2(&s.format, nullptr, gif ? "gif" : "mp4", s.temporary.c_str()),
          "no output format");
  const AVCodec* encoder = gif ? avcodec_find_encoder(AV_CODEC_ID_GIF) : avcodec_find_encoder_by_name("libx264");
  if (encoder == nullptr && !gif) encoder = avcodec_find_encoder(AV_CODEC_ID_MPEG4);
  if (encoder == nullptr) s.fail("FFmpeg has no encoder for it", 0);
  s.codec = avcodec_alloc_context3(encoder);
  s.codec->width = width;
  s.codec->height = height;
  // A GIF's delays are in hundredths of a second, and browsers play one under 2 as 10: a GIF keeps
  // every k-th frame of a faster env (Hopper's 125 a second: every 3rd, at 41.7), at its own pace.
  constexpr int kGifFastest = 50;
  s.keep_every = gif ? (frames_per_second + kGifFastest - 1) / kGifFastest : 1;
  s.codec->time_base = AVRational{s.keep_every, frames_per_second};
  s.codec->framerate = AVRational{frames_per_second, s.keep_every};
  s.codec->pix_fmt = gif ? AV_PIX_FMT_PAL8 : AV_PIX_FMT_YUV420P;
  s.codec->gop_size = 2 * frames_per_second;
  if (encoder->id == AV_CODEC_ID_H264) {
    av_opt_set(s.codec->priv_data, "preset", "ultrafast", 0);
    av_opt_set(s.codec->priv_data, "crf", "23", 0);
  }
  if ((s.format->oformat->flags & AVFMT_GLOBALHEADER) != 0) s.codec->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  s.check(avcodec_open2(s.codec, encoder, nullptr), "opening the encoder");
  s.stream = avformat_new_stream(s.format, nullptr);
  if (s.stream == nullptr) s.fail("no stream", 0);
  s.stream->time_base = s.codec->time_base;
  s.check(avcodec_parameters_from_context(s.stream->codecpar, s.codec), "stream parameters");
  s.check(avio_open(&s.format->pb, s.temporary.c_str(), AVIO_FLAG_WRITE), "cannot create the file");
  s.check(avformat_write_header(s.format, nullptr), "writing the header");
  s.picture = av_frame_alloc();
  s.packet = av_packet_alloc();
  s.picture->format = s.codec->pix_fmt;
  s.picture->width = width;
  s.picture->height = height;
  s.check(av_frame_get_buffer(s.picture, 0), "a frame buffer");
  if (gif) return;
  s.scaler = sws_getContext(width, height, AV_PIX_FMT_RGB24, width, height, s.codec->pix_fmt, SWS_POINT, nullptr,
                            nullptr, nullptr);
  if (s.scaler == nullptr) s.fail("no colour conversion to the encoder's pixels", 0);
}

VideoWriter::~VideoWriter() = default;

void VideoWriter::add(const envs::RgbFrame& frame) {
  State& s = *state_;
  if (frame.width != s.width || frame.height != s.height) s.fail("a frame of another size", 0);
  if (s.offered++ % s.keep_every != 0) return;
  s.check(av_frame_make_writable(s.picture), "a frame buffer");
  const uint8_t* source[1] = {frame.pixels.data()};
  const int source_stride[1] = {3 * frame.width};
  if (s.scaler != nullptr) {
    sws_scale(s.scaler, source, source_stride, 0, s.height, s.picture->data, s.picture->linesize);
  } else {
    if (!s.palette) s.palette = std::make_unique<GifPalette>(frame);
    s.palette->convert(frame, s.picture->data[0], s.picture->linesize[0], s.picture->data[1]);
  }
  s.picture->pts = s.frames++;
  s.encode(s.picture);
}

void VideoWriter::finish() {
  State& s = *state_;
  s.encode(nullptr);
  s.check(av_write_trailer(s.format), "writing the trailer");
  s.check(avio_closep(&s.format->pb), "closing the file");
  std::error_code error;
  std::filesystem::rename(s.temporary, s.file, error);
  if (error) s.fail("cannot move it into place: " + error.message(), 0);
  s.finished = true;
}

int VideoWriter::frames() const { return state_->frames; }

}  // namespace concord::cli
