#include "concord/envs/space.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace concord::envs {

int64_t element_size(Dtype dtype) { return dtype == Dtype::kUInt8 ? 1 : 4; }

const char* dtype_name(Dtype dtype) { return dtype == Dtype::kUInt8 ? "uint8" : "float32"; }

Space Space::discrete(int64_t n) {
  if (n <= 0) throw std::invalid_argument("Discrete space needs n > 0, got " + std::to_string(n));
  Space space;
  space.kind_ = Kind::kDiscrete;
  space.n_ = n;
  space.shape_ = {};
  return space;
}

Space Space::box(std::vector<int64_t> shape, std::vector<float> low, std::vector<float> high, Dtype dtype) {
  Space space;
  space.kind_ = Kind::kBox;
  space.dtype_ = dtype;
  space.shape_ = std::move(shape);
  const int64_t size = space.flat_size();
  if (static_cast<int64_t>(low.size()) != size || static_cast<int64_t>(high.size()) != size) {
    std::ostringstream message;
    message << "Box bounds must have " << size << " elements, got low=" << low.size() << " high=" << high.size();
    throw std::invalid_argument(message.str());
  }
  for (int64_t i = 0; i < size; ++i) {
    if (!(low[i] <= high[i])) {
      std::ostringstream message;
      message << "Box bound " << i << " has low " << low[i] << " > high " << high[i];
      throw std::invalid_argument(message.str());
    }
  }
  if (dtype == Dtype::kUInt8) {
    for (int64_t i = 0; i < size; ++i) {
      if (low[i] < 0 || high[i] > 255 || std::floor(low[i]) != low[i] || std::floor(high[i]) != high[i]) {
        std::ostringstream message;
        message << "uint8 Box bound " << i << " [" << low[i] << ", " << high[i]
                << "] is not within the integers 0..255";
        throw std::invalid_argument(message.str());
      }
    }
  }
  space.low_ = std::move(low);
  space.high_ = std::move(high);
  return space;
}

Space Space::box(std::vector<int64_t> shape, float low, float high, Dtype dtype) {
  int64_t size = 1;
  for (int64_t dim : shape) size *= dim;
  return box(std::move(shape), std::vector<float>(size, low), std::vector<float>(size, high), dtype);
}

std::vector<int64_t> Space::tensor_shape() const {
  if (kind_ == Kind::kDiscrete || shape_.empty()) return {1};
  return shape_;
}

int64_t Space::flat_size() const {
  if (kind_ == Kind::kDiscrete) return 1;
  int64_t size = 1;
  for (int64_t dim : shape_) size *= dim;
  return size;
}

bool Space::contains(const float* value) const {
  if (dtype_ != Dtype::kFloat32) return false;
  if (kind_ == Kind::kDiscrete) {
    const float v = value[0];
    return std::floor(v) == v && v >= 0 && v < static_cast<float>(n_);
  }
  for (int64_t i = 0; i < flat_size(); ++i) {
    if (!(value[i] >= low_[i] && value[i] <= high_[i])) return false;
  }
  return true;
}

bool Space::contains(const uint8_t* value) const {
  if (kind_ != Kind::kBox || dtype_ != Dtype::kUInt8) return false;
  for (int64_t i = 0; i < flat_size(); ++i) {
    if (!(value[i] >= low_[i] && value[i] <= high_[i])) return false;
  }
  return true;
}

std::string Space::to_string() const {
  std::ostringstream out;
  if (kind_ == Kind::kDiscrete) {
    out << "Discrete(" << n_ << ")";
    return out.str();
  }
  auto bound = [](const std::vector<float>& values) {
    std::ostringstream text;
    bool uniform = true;
    for (float v : values) uniform = uniform && v == values.front();
    if (uniform) {
      text << values.front();
      return text.str();
    }
    text << "[";
    for (size_t i = 0; i < values.size(); ++i) text << (i ? " " : "") << values[i];
    text << "]";
    return text.str();
  };
  out << "Box(" << bound(low_) << ", " << bound(high_) << ", (";
  for (size_t i = 0; i < shape_.size(); ++i) out << (i ? ", " : "") << shape_[i];
  if (shape_.size() == 1) out << ",";
  out << "), " << dtype_name(dtype_) << ")";
  return out.str();
}

}  // namespace concord::envs
