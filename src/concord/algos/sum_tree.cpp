#include "concord/algos/sum_tree.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace concord::algos {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

int64_t next_power_of_two(int64_t n) {
  int64_t power = 1;
  while (power < n) power *= 2;
  return power;
}

}  // namespace

SumTree::SumTree(int64_t capacity) : capacity_(capacity), leaf_offset_(1) {
  if (capacity < 1) {
    throw std::invalid_argument("SumTree: capacity must be >= 1, got " + std::to_string(capacity));
  }
  leaf_offset_ = next_power_of_two(capacity);
  sums_.assign(static_cast<size_t>(2 * leaf_offset_), 0.0);
  mins_.assign(static_cast<size_t>(2 * leaf_offset_), kInfinity);
}

void SumTree::check_index(const char* fn, int64_t index) const {
  if (index < 0 || index >= capacity_) {
    throw std::invalid_argument(std::string("SumTree::") + fn + ": index " + std::to_string(index) +
                                " is outside [0, " + std::to_string(capacity_) + ")");
  }
}

void SumTree::set(int64_t index, double priority) {
  check_index("set", index);
  if (!(priority >= 0.0) || std::isinf(priority)) {
    throw std::invalid_argument("SumTree::set: priority must be finite and >= 0, got " + std::to_string(priority));
  }
  auto node = static_cast<size_t>(leaf_offset_ + index);
  sums_[node] = priority;
  mins_[node] = priority > 0.0 ? priority : kInfinity;
  for (node /= 2; node >= 1; node /= 2) {
    sums_[node] = sums_[2 * node] + sums_[2 * node + 1];
    mins_[node] = std::min(mins_[2 * node], mins_[2 * node + 1]);
  }
}

double SumTree::get(int64_t index) const {
  check_index("get", index);
  return sums_[static_cast<size_t>(leaf_offset_ + index)];
}

int64_t SumTree::find_prefix(double mass) const {
  if (!(total() > 0.0)) throw std::invalid_argument("SumTree::find_prefix: every priority is 0");
  if (std::isnan(mass)) throw std::invalid_argument("SumTree::find_prefix: mass is NaN");
  // Invariant: `node` has a positive sum. Each step keeps it by never entering a zero child: a
  // positive node has at least one positive child, because its sum is exactly the children's.
  // Only when both children are positive does the mass choose, so a mass out of range, or pushed
  // past a boundary by rounding, ends on the nearest positive leaf instead of on padding.
  size_t node = 1;
  while (node < static_cast<size_t>(leaf_offset_)) {
    const double left = sums_[2 * node];
    const double right = sums_[2 * node + 1];
    if (right == 0.0 || (left > 0.0 && mass < left)) {
      node = 2 * node;
    } else {
      mass -= left;
      node = 2 * node + 1;
    }
  }
  return static_cast<int64_t>(node) - leaf_offset_;
}

}  // namespace concord::algos
