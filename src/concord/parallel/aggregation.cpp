#include "concord/parallel/aggregation.h"

#include <stdexcept>

namespace concord::parallel {

Aggregation parse_aggregation(const std::string& name) {
  if (name == "avg") return Aggregation::kAvg;
  if (name == "sum") return Aggregation::kSum;
  if (name == "max") return Aggregation::kMax;
  if (name == "min") return Aggregation::kMin;
  if (name == "gather") return Aggregation::kGather;
  if (name == "none") return Aggregation::kNone;
  throw std::invalid_argument("unknown aggregation '" + name + "' (known: avg, sum, max, min, gather, none)");
}

std::string aggregation_name(Aggregation aggregation) {
  switch (aggregation) {
    case Aggregation::kAvg: return "avg";
    case Aggregation::kSum: return "sum";
    case Aggregation::kMax: return "max";
    case Aggregation::kMin: return "min";
    case Aggregation::kGather: return "gather";
    case Aggregation::kNone: return "none";
  }
  return "?";
}

}  // namespace concord::parallel
