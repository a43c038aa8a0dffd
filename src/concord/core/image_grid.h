#pragma once

#include <cstdint>
#include <filesystem>

#include <torch/types.h>

namespace concord::core {

// Greyscale images laid out as one picture, for looking at what a generator draws:
//
//   images [N, 1, H, W] in [0, 1]  ->  rows of `columns` tiles, `padding` black pixels between and
//                                      around them  ->  uint8 [rows * (H + p) + p, columns * (W + p) + p]
//
// The last row is left black where N is not a multiple of `columns`. Values outside [0, 1] are
// clamped. Throws std::invalid_argument for another shape, no image, or columns < 1.
torch::Tensor tile_images(const torch::Tensor& images, int64_t columns, int64_t padding = 2);

// Writes uint8 [H, W] pixels as an 8-bit greyscale PNG (through libpng). Throws
// std::invalid_argument for another dtype or rank, std::runtime_error naming the file when it
// cannot be written.
void write_png(const std::filesystem::path& path, const torch::Tensor& pixels);

}  // namespace concord::core
