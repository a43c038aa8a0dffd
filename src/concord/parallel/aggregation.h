#pragma once

#include <string>

namespace concord::parallel {

// How the per-worker results of one output of a data-parallel function become the call's result
// (every rank receives it, except under kNone):
//   kAvg     mean over all rows of the call: sum_r rows_r * out_r / sum_r rows_r (exact for a
//            per-row mean such as a loss, even with uneven slices)
//   kSum     sum over workers (and sub-slices)
//   kMax     elementwise maximum;  kMin  elementwise minimum
//   kGather  concatenation along dimension 0 in worker order (sub-slices in order), so a
//            per-row output comes back in the rows' original order
//   kNone    no communication: each rank keeps its own result (its sub-slices concatenated)
enum class Aggregation { kAvg, kSum, kMax, kMin, kGather, kNone };

// "avg", "sum", "max", "min", "gather", "none"; anything else throws std::invalid_argument
// ("unknown aggregation 'x' (known: ...)").
Aggregation parse_aggregation(const std::string& name);
std::string aggregation_name(Aggregation aggregation);

}  // namespace concord::parallel
