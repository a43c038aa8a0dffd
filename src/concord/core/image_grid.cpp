#include "concord/core/image_grid.h"

#include <png.h>

#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace concord::core {
namespace {

std::string shape_of(const torch::Tensor& tensor) {
  std::string text = "[";
  for (int64_t d = 0; d < tensor.dim(); ++d) text += (d ? ", " : "") + std::to_string(tensor.size(d));
  return text + "]";
}

// libpng reports an error by calling back a function that must not return; the portable way out
// is its setjmp/longjmp protocol. The callback keeps the message, and the longjmp lands in
// encode_png, whose frame holds nothing with a destructor to skip.
void keep_png_error(png_structp png, png_const_charp message) {
  auto* kept = static_cast<char*>(png_get_error_ptr(png));
  std::snprintf(kept, 256, "%s", message);
  png_longjmp(png, 1);
}
void ignore_png_warning(png_structp, png_const_charp) {}

// Returns false (with `error` filled) when libpng failed.
bool encode_png(png_structp png, png_infop info, FILE* file, png_bytepp rows, png_uint_32 width, png_uint_32 height) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_init_io(png, file);
  png_set_IHDR(png, info, width, height, 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_set_rows(png, info, rows);
  png_write_png(png, info, PNG_TRANSFORM_IDENTITY, nullptr);
  return true;
}

}  // namespace

torch::Tensor tile_images(const torch::Tensor& images, int64_t columns, int64_t padding) {
  if (images.dim() != 4 || images.size(1) != 1 || images.size(0) < 1) {
    throw std::invalid_argument("tile_images needs greyscale images [N >= 1, 1, H, W], got " + shape_of(images));
  }
  if (columns < 1 || padding < 0) {
    throw std::invalid_argument("tile_images: columns = " + std::to_string(columns) +
                                " must be >= 1 and padding = " + std::to_string(padding) + " >= 0");
  }
  const int64_t count = images.size(0), height = images.size(2), width = images.size(3);
  const int64_t rows = (count + columns - 1) / columns;
  const torch::Tensor pixels =
      (images.detach().to(torch::kCPU, torch::kFloat).clamp(0.0, 1.0) * 255.0).round().to(torch::kUInt8);
  torch::Tensor grid =
      torch::zeros({rows * (height + padding) + padding, columns * (width + padding) + padding}, torch::kUInt8);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t top = padding + (i / columns) * (height + padding);
    const int64_t left = padding + (i % columns) * (width + padding);
    grid.narrow(0, top, height).narrow(1, left, width).copy_(pixels[i][0]);
  }
  return grid;
}

void write_png(const std::filesystem::path& path, const torch::Tensor& pixels) {
  if (pixels.dim() != 2 || pixels.scalar_type() != torch::kUInt8) {
    throw std::invalid_argument("write_png needs uint8 pixels [H, W], got " + shape_of(pixels));
  }
  const torch::Tensor rows = pixels.to(torch::kCPU).contiguous();
  const auto height = static_cast<png_uint_32>(rows.size(0));
  const auto width = static_cast<png_uint_32>(rows.size(1));

  std::vector<png_bytep> row_pointers(height);
  auto* data = const_cast<uint8_t*>(rows.data_ptr<uint8_t>());
  for (png_uint_32 y = 0; y < height; ++y) row_pointers[y] = data + static_cast<size_t>(y) * width;

  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!file) throw std::runtime_error("cannot write " + path.string() + ": " + std::strerror(errno));
  char error[256] = "libpng could not allocate its state";
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, error, &keep_png_error, &ignore_png_warning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  const bool written = info != nullptr && encode_png(png, info, file.get(), row_pointers.data(), width, height);
  png_destroy_write_struct(&png, info ? &info : nullptr);
  if (!written) throw std::runtime_error("cannot write " + path.string() + ": " + error);
  if (std::fflush(file.get()) != 0) {
    throw std::runtime_error("cannot write " + path.string() + ": " + std::strerror(errno));
  }
}

}  // namespace concord::core
