#include "concord/parallel/aggregation.h"

#include "concord/core/registry.h"

namespace concord::parallel {
namespace {

const core::Registry<Aggregation>& aggregations() {
  static const core::Registry<Aggregation> registry("aggregation", {{"avg", Aggregation::kAvg},
                                                                    {"sum", Aggregation::kSum},
                                                                    {"max", Aggregation::kMax},
                                                                    {"min", Aggregation::kMin},
                                                                    {"gather", Aggregation::kGather},
                                                                    {"none", Aggregation::kNone}});
  return registry;
}

}  // namespace

Aggregation parse_aggregation(const std::string& name) { return aggregations().at(name); }

std::string aggregation_name(Aggregation aggregation) {
  for (const auto& [name, known] : aggregations().entries()) {
    if (known == aggregation) return name;
  }
  return "?";
}

}  // namespace concord::parallel
