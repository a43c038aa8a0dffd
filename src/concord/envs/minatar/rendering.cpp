// MinAtar's grids as MinAtar's own display shows them: each cell in the colour of the highest
// channel set there (matplotlib's "cubehelix" map sampled at n_channels points, as seaborn's
// color_palette("cubehelix", n) gives it), black where no channel is set.
#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "concord/envs/rendering.h"

namespace concord::envs {
namespace {

// Pixels a side of one grid cell.
constexpr int kCellPixels = 32;

// matplotlib's cubehelix (Green 2011) with its defaults gamma 1, s 0.5, r -1.5, h 1, at x in [0, 1].
std::array<uint8_t, 3> cubehelix(double x) {
  const double phi = 2 * M_PI * (0.5 / 3 + -1.5 * x);
  const double a = 1.0 * x * (1 - x) / 2;
  const double channels[3] = {x + a * (-0.14861 * std::cos(phi) + 1.78277 * std::sin(phi)),
                              x + a * (-0.29227 * std::cos(phi) - 0.90649 * std::sin(phi)),
                              x + a * (1.97294 * std::cos(phi))};
  std::array<uint8_t, 3> colour{};
  for (int i = 0; i < 3; ++i) {
    colour[i] = static_cast<uint8_t>(std::lround(255.0 * std::clamp(channels[i], 0.0, 1.0)));
  }
  return colour;
}

class MinAtarRenderer final : public EnvRenderer {
 public:
  MinAtarRenderer(int rows, int columns, int channels)
      : EnvRenderer(columns * kCellPixels, rows * kCellPixels, 10),
        rows_(rows),
        columns_(columns),
        channels_(channels) {
    // seaborn's color_palette("cubehelix", n): the map at n evenly spaced points inside (0, 1).
    for (int c = 0; c < channels; ++c) palette_.push_back(cubehelix((c + 1.0) / (channels + 1.0)));
  }

  void render(const void* observation, RgbFrame& frame) override {
    const auto* grid = static_cast<const uint8_t*>(observation);  // [rows, columns, channels]
    frame.width = width();
    frame.height = height();
    frame.pixels.assign(static_cast<size_t>(width()) * height() * 3, 0);
    for (int row = 0; row < rows_; ++row) {
      for (int column = 0; column < columns_; ++column) {
        const uint8_t* cell = grid + (static_cast<size_t>(row) * columns_ + column) * channels_;
        int shown = -1;
        for (int c = 0; c < channels_; ++c) {
          if (cell[c] != 0) shown = c;
        }
        if (shown < 0) continue;
        const std::array<uint8_t, 3>& colour = palette_[static_cast<size_t>(shown)];
        for (int y = row * kCellPixels; y < (row + 1) * kCellPixels; ++y) {
          uint8_t* out = frame.pixels.data() + (static_cast<size_t>(y) * width() + column * kCellPixels) * 3;
          for (int x = 0; x < kCellPixels; ++x) std::copy(colour.begin(), colour.end(), out + 3 * x);
        }
      }
    }
  }

 private:
  int rows_;
  int columns_;
  int channels_;
  std::vector<std::array<uint8_t, 3>> palette_;
};

}  // namespace

std::unique_ptr<EnvRenderer> make_minatar_renderer(const EnvSpec& spec) {
  const std::vector<int64_t>& shape = spec.observation_space.shape();
  if (spec.id.rfind("MinAtar/", 0) != 0 || shape.size() != 3 || spec.observation_space.dtype() != Dtype::kUInt8) {
    return nullptr;
  }
  return std::make_unique<MinAtarRenderer>(static_cast<int>(shape[0]), static_cast<int>(shape[1]),
                                           static_cast<int>(shape[2]));
}

}  // namespace concord::envs
