// Tiling images into one picture and writing it as PNG (read back through libpng).
#include "concord/core/image_grid.h"

#include <png.h>

#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/temp_dir.h"

namespace concord::core {
namespace {

class ImageGridTest : public test::TempDirTest {
 protected:
  ImageGridTest() : TempDirTest("concord_image_grid_") {}
};

TEST_F(ImageGridTest, TilesRowByRowWithBordersAndAPartialLastRow) {
  // Five 2x3 images, image i all (i + 1) / 10, three to a row, one-pixel borders.
  const torch::Tensor images = (torch::arange(1, 6, torch::kFloat) / 10.0).view({5, 1, 1, 1}).expand({5, 1, 2, 3});
  const torch::Tensor grid = tile_images(images, 3, 1);
  ASSERT_EQ(grid.sizes(), (std::vector<int64_t>{2 * 3 + 1, 3 * 4 + 1}));
  EXPECT_EQ(grid.scalar_type(), torch::kUInt8);
  EXPECT_EQ(grid[1][1].item<int>(), 26);   // image 0: round(0.1 * 255)
  EXPECT_EQ(grid[1][5].item<int>(), 51);   // image 1, right of a border column
  EXPECT_EQ(grid[4][5].item<int>(), 128);  // image 4: second row, second column (0.5 * 255 = 127.5)
  EXPECT_EQ(grid[4][9].item<int>(), 0);    // no sixth image: black
  EXPECT_EQ(grid[0][1].item<int>(), 0);    // the border
  EXPECT_THROW(tile_images(torch::zeros({2, 3, 4, 4}), 2), std::invalid_argument);
  EXPECT_THROW(tile_images(images, 0), std::invalid_argument);
}

TEST_F(ImageGridTest, WritesAGreyscalePngThatReadsBackPixelForPixel) {
  const torch::Tensor pixels = torch::randint(0, 256, {17, 23}, torch::kInt).to(torch::kUInt8);
  const auto path = dir_ / "grid.png";
  write_png(path, pixels);

  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  ASSERT_NE(png_image_begin_read_from_file(&image, path.c_str()), 0) << image.message;
  EXPECT_EQ(image.width, 23u);
  EXPECT_EQ(image.height, 17u);
  image.format = PNG_FORMAT_GRAY;
  std::vector<uint8_t> read(PNG_IMAGE_SIZE(image));
  ASSERT_NE(png_image_finish_read(&image, nullptr, read.data(), 0, nullptr), 0) << image.message;
  EXPECT_TRUE(torch::from_blob(read.data(), {17, 23}, torch::kUInt8).equal(pixels));
}

TEST_F(ImageGridTest, NamesTheFileItCannotWrite) {
  const auto path = dir_ / "missing" / "grid.png";
  try {
    write_png(path, torch::zeros({2, 2}, torch::kUInt8));
    FAIL() << "expected an error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find(path.string()), std::string::npos) << error.what();
  }
  EXPECT_THROW(write_png(dir_ / "x.png", torch::zeros({2, 2})), std::invalid_argument);
}

}  // namespace
}  // namespace concord::core
