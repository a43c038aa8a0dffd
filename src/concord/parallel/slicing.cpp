#include "concord/parallel/slicing.h"

namespace concord::parallel {

std::vector<int64_t> slice_bounds(int64_t rows, int parts) {
  std::vector<int64_t> bounds{0};
  const int64_t base = rows / parts;
  const int64_t extra = rows % parts;
  for (int p = 0; p < parts; ++p) bounds.push_back(bounds.back() + base + (p < extra ? 1 : 0));
  return bounds;
}

}  // namespace concord::parallel
