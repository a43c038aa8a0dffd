#include "concord/cli/video_writer.h"

#include <stdexcept>
#include <string>
#include <system_error>

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

}  // namespace

struct VideoWriter::State {
  std::filesystem::path file;
  std::filesystem::path temporary;
  int width = 0;
  int height = 0;
  int frames = 0;
  bool finished = false;
  AVFormatContext* format = nullptr;
  AVCodecContext* codec = nullptr;
  AVStream* stream = nullptr;
  AVFrame* picture = nullptr;
  AVPacket* packet = nullptr;
  SwsContext* scaler = nullptr;

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
  s.codec->time_base = AVRational{1, frames_per_second};
  s.codec->framerate = AVRational{frames_per_second, 1};
  s.codec->pix_fmt = gif ? AV_PIX_FMT_RGB8 : AV_PIX_FMT_YUV420P;
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
  s.scaler = sws_getContext(width, height, AV_PIX_FMT_RGB24, width, height, s.codec->pix_fmt, SWS_POINT, nullptr,
                            nullptr, nullptr);
  if (s.scaler == nullptr) s.fail("no colour conversion to the encoder's pixels", 0);
}

VideoWriter::~VideoWriter() = default;

void VideoWriter::add(const envs::RgbFrame& frame) {
  State& s = *state_;
  if (frame.width != s.width || frame.height != s.height) s.fail("a frame of another size", 0);
  s.check(av_frame_make_writable(s.picture), "a frame buffer");
  const uint8_t* source[1] = {frame.pixels.data()};
  const int source_stride[1] = {3 * frame.width};
  sws_scale(s.scaler, source, source_stride, 0, s.height, s.picture->data, s.picture->linesize);
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
