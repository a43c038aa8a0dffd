#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace concord::envs {

// The element type of a Box. Observations are stored and batched in it end to end: pixel and grid
// observations stay uint8 until a model converts them.
enum class Dtype { kFloat32, kUInt8 };

// Bytes one element of `dtype` occupies.
int64_t element_size(Dtype dtype);
// numpy's name for it: "float32", "uint8".
const char* dtype_name(Dtype dtype);

// The Dtype whose elements are `Element`s (float or uint8_t).
template <typename Element>
constexpr Dtype dtype_of() {
  static_assert(std::is_same_v<Element, uint8_t> || std::is_same_v<Element, float>, "float or uint8_t elements");
  return std::is_same_v<Element, uint8_t> ? Dtype::kUInt8 : Dtype::kFloat32;
}

// An observation or action space, as Gymnasium defines them: Discrete(n) holds the integers
// [0, n); Box holds float32 arrays of a fixed shape with per-element bounds (which may be
// +-infinity). Values are stored flat, row-major; `flat_size()` is the number of scalars one
// element occupies (1 for Discrete).
class Space {
 public:
  enum class Kind { kDiscrete, kBox };

  static Space discrete(int64_t n);
  // `low` and `high` hold one bound per element, flattened in row-major order.
  static Space box(std::vector<int64_t> shape, std::vector<float> low, std::vector<float> high,
                   Dtype dtype = Dtype::kFloat32);
  // A box with the same bounds for every element.
  static Space box(std::vector<int64_t> shape, float low, float high, Dtype dtype = Dtype::kFloat32);

  Kind kind() const { return kind_; }
  bool is_discrete() const { return kind_ == Kind::kDiscrete; }
  int64_t n() const { return n_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<float>& low() const { return low_; }
  const std::vector<float>& high() const { return high_; }
  int64_t flat_size() const;
  // A Box's element type; a Discrete value is stored as one float32 where a buffer holds it.
  Dtype dtype() const { return dtype_; }
  // Bytes one element of the space occupies in a buffer: flat_size() * element_size(dtype()).
  int64_t byte_size() const { return flat_size() * element_size(dtype_); }
  // The shape a network sees for one element: shape(), or [1] for a Discrete or scalar space.
  std::vector<int64_t> tensor_shape() const;

  // True when the flat value lies in the space (for Discrete: an integral value in [0, n)).
  bool contains(const float* value) const;
  // The same for a uint8 Box.
  bool contains(const uint8_t* value) const;
  // Gymnasium's notation: "Discrete(2)", "Box(-1.0, 1.0, (1,), float32)", "Box(0, 1, (10, 10, 4), uint8)".
  std::string to_string() const;

 private:
  Space() = default;
  Kind kind_ = Kind::kDiscrete;
  Dtype dtype_ = Dtype::kFloat32;
  int64_t n_ = 0;
  std::vector<int64_t> shape_;
  std::vector<float> low_;
  std::vector<float> high_;
};

}  // namespace concord::envs
