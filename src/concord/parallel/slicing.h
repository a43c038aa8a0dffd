#pragma once

#include <cstdint>
#include <vector>

namespace concord::parallel {

// Where `rows` rows are cut into `parts` contiguous slices whose sizes differ by at most one (the
// first rows % parts slices take the extra row): parts + 1 offsets, slice p = [b[p], b[p+1]).
std::vector<int64_t> slice_bounds(int64_t rows, int parts);

}  // namespace concord::parallel
