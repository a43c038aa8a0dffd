// Box, Discrete and MultiDiscrete: the attributes and methods of Gymnasium's spaces that code
// written against Gymnasium reads (shape, dtype, low/high, n, nvec, sample, contains, seed), not
// the whole class hierarchy; Concord needs no Python dependency beyond numpy.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bindings.h"
#include "concord/core/rng.h"
#include "python_env.h"

namespace concord::python {
namespace {

py::tuple to_tuple(const std::vector<int64_t>& shape) {
  py::tuple tuple(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) tuple[i] = py::int_(shape[i]);
  return tuple;
}

int64_t product(const std::vector<int64_t>& shape) {
  int64_t size = 1;
  for (int64_t dim : shape) size *= dim;
  return size;
}

// The seeding shared by the spaces: like Gymnasium, an unseeded space draws from fresh entropy.
class Sampler {
 public:
  void seed(std::optional<uint64_t> seed) {
    seed_ = seed ? *seed : (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
    rng_.seed(seed_);
    seeded_ = true;
  }
  core::Rng& rng() {
    if (!seeded_) seed(std::nullopt);
    return rng_;
  }
  uint64_t last_seed() const { return seed_; }

 private:
  core::Rng rng_{0};
  uint64_t seed_ = 0;
  bool seeded_ = false;
};

py::list seed_result(Sampler& sampler, std::optional<uint64_t> seed) {
  sampler.seed(seed);
  py::list seeds;
  seeds.append(py::int_(sampler.last_seed()));
  return seeds;
}

// An array of `values` (float32) shaped `shape`, in the space's dtype.
py::array bounds_array(const std::vector<float>& values, const std::vector<int64_t>& shape, envs::Dtype dtype) {
  py::array_t<float> floats(shape);
  std::memcpy(floats.mutable_data(), values.data(), values.size() * sizeof(float));
  if (dtype == envs::Dtype::kFloat32) return std::move(floats);
  return floats.attr("astype")(numpy_dtype(dtype));
}

// Gymnasium's bound notation: one scalar when every element shares it, else the array.
std::string bound_repr(const py::array& bounds) {
  const py::object low = bounds.attr("min")();
  const py::object high = bounds.attr("max")();
  if (low.equal(high)) return py::str(low);
  return py::str(py::handle(bounds));
}

class Box {
 public:
  Box(std::vector<int64_t> shape, std::vector<float> low, std::vector<float> high, envs::Dtype dtype)
      : shape_(std::move(shape)), low_(std::move(low)), high_(std::move(high)), dtype_(dtype) {}

  py::tuple shape() const { return to_tuple(shape_); }
  py::dtype dtype() const { return numpy_dtype(dtype_); }
  py::array low() const { return bounds_array(low_, shape_, dtype_); }
  py::array high() const { return bounds_array(high_, shape_, dtype_); }

  // Gymnasium's rule: uniform where bounded on both sides, exponential where on one, normal where
  // on neither; integers (uint8) inclusive of both bounds.
  py::array sample() {
    py::array_t<float> out(shape_);
    float* values = out.mutable_data();
    core::Rng& rng = sampler_.rng();
    std::normal_distribution<float> normal;
    std::exponential_distribution<float> exponential;
    for (size_t i = 0; i < low_.size(); ++i) {
      const bool below = std::isfinite(low_[i]), above = std::isfinite(high_[i]);
      if (dtype_ == envs::Dtype::kUInt8) {
        values[i] =
            low_[i] + static_cast<float>(core::uniform_index(rng, static_cast<int64_t>(high_[i] - low_[i]) + 1));
      } else if (below && above) {
        values[i] = static_cast<float>(core::uniform(rng, low_[i], high_[i]));
      } else if (below) {
        values[i] = low_[i] + exponential(rng);
      } else if (above) {
        values[i] = high_[i] - exponential(rng);
      } else {
        values[i] = normal(rng);
      }
    }
    if (dtype_ == envs::Dtype::kFloat32) return std::move(out);
    return out.attr("astype")(numpy_dtype(dtype_));
  }

  bool contains(const py::handle& x) const {
    const auto values = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(x);
    if (!values || values.ndim() != static_cast<py::ssize_t>(shape_.size())) return false;
    for (size_t d = 0; d < shape_.size(); ++d) {
      if (values.shape(static_cast<py::ssize_t>(d)) != shape_[d]) return false;
    }
    const double* data = values.data();
    for (size_t i = 0; i < low_.size(); ++i) {
      if (!(data[i] >= low_[i] && data[i] <= high_[i])) return false;
      if (dtype_ == envs::Dtype::kUInt8 && std::floor(data[i]) != data[i]) return false;
    }
    return true;
  }

  std::string repr() const {
    return "Box(" + bound_repr(low()) + ", " + bound_repr(high()) + ", " + std::string(py::repr(shape())) + ", " +
           envs::dtype_name(dtype_) + ")";
  }
  bool operator==(const Box& other) const {
    return shape_ == other.shape_ && low_ == other.low_ && high_ == other.high_ && dtype_ == other.dtype_;
  }
  Sampler& sampler() { return sampler_; }

 private:
  std::vector<int64_t> shape_;
  std::vector<float> low_, high_;
  envs::Dtype dtype_;
  Sampler sampler_;
};

class Discrete {
 public:
  explicit Discrete(int64_t n) : n_(n) {}
  int64_t n() const { return n_; }
  py::object sample() { return py::dtype::of<int64_t>().attr("type")(core::uniform_index(sampler_.rng(), n_)); }
  bool contains(const py::handle& x) const {
    const py::array value = py::array::ensure(x);
    if (!value || value.ndim() != 0 || (value.dtype().kind() != 'i' && value.dtype().kind() != 'u')) return false;
    const auto index = py::cast<int64_t>(value.attr("item")());
    return index >= 0 && index < n_;
  }
  std::string repr() const { return "Discrete(" + std::to_string(n_) + ")"; }
  bool operator==(const Discrete& other) const { return n_ == other.n_; }
  Sampler& sampler() { return sampler_; }

 private:
  int64_t n_;
  Sampler sampler_;
};

class MultiDiscrete {
 public:
  explicit MultiDiscrete(std::vector<int64_t> nvec) : nvec_(std::move(nvec)) {}
  py::array_t<int64_t> nvec() const {
    return py::array_t<int64_t>(static_cast<py::ssize_t>(nvec_.size()), nvec_.data());
  }
  py::tuple shape() const { return to_tuple({static_cast<int64_t>(nvec_.size())}); }
  py::array_t<int64_t> sample() {
    py::array_t<int64_t> out(static_cast<py::ssize_t>(nvec_.size()));
    int64_t* values = out.mutable_data();
    core::Rng& rng = sampler_.rng();
    for (size_t i = 0; i < nvec_.size(); ++i) values[i] = core::uniform_index(rng, nvec_[i]);
    return out;
  }
  bool contains(const py::handle& x) const {
    const py::array any = py::array::ensure(x);
    if (!any || (any.dtype().kind() != 'i' && any.dtype().kind() != 'u')) return false;
    const auto values = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(any);
    if (values.ndim() != 1 || values.shape(0) != static_cast<py::ssize_t>(nvec_.size())) return false;
    for (size_t i = 0; i < nvec_.size(); ++i) {
      if (values.data()[i] < 0 || values.data()[i] >= nvec_[i]) return false;
    }
    return true;
  }
  std::string repr() const {
    const bool same = std::all_of(nvec_.begin(), nvec_.end(), [&](int64_t n) { return n == nvec_.front(); });
    if (same && nvec_.size() > 6) {
      return "MultiDiscrete([" + std::to_string(nvec_.front()) + "] * " + std::to_string(nvec_.size()) + ")";
    }
    std::string text = "MultiDiscrete([";
    for (size_t i = 0; i < nvec_.size(); ++i) text += (i ? " " : "") + std::to_string(nvec_[i]);
    return text + "])";
  }
  bool operator==(const MultiDiscrete& other) const { return nvec_ == other.nvec_; }
  Sampler& sampler() { return sampler_; }

 private:
  std::vector<int64_t> nvec_;
  Sampler sampler_;
};

// The methods every space class shares.
template <typename Space>
py::class_<Space> bind_common(py::module_& module, const char* name, const char* doc) {
  py::class_<Space> cls(module, name, doc);
  cls.def("sample", &Space::sample, "A uniformly random element (Gymnasium's rule for unbounded Box dimensions).")
      .def("contains", &Space::contains, py::arg("x"))
      .def("__contains__", &Space::contains)
      .def(
          "seed", [](Space& self, std::optional<uint64_t> seed) { return seed_result(self.sampler(), seed); },
          py::arg("seed") = py::none(), "Seeds sample(); returns [seed] like Gymnasium.")
      .def("__repr__", &Space::repr)
      .def(
          "__eq__",
          [](const Space& self, const py::object& other) {
            return py::isinstance<Space>(other) && self == other.cast<const Space&>();
          },
          py::is_operator());
  return cls;
}

}  // namespace

py::dtype numpy_dtype(envs::Dtype dtype) {
  return dtype == envs::Dtype::kUInt8 ? py::dtype::of<uint8_t>() : py::dtype::of<float>();
}

py::object make_space(const envs::Space& space, int64_t batch) {
  if (space.is_discrete()) {
    if (batch == 0) return py::cast(Discrete(space.n()));
    return py::cast(MultiDiscrete(std::vector<int64_t>(static_cast<size_t>(batch), space.n())));
  }
  if (batch == 0) return py::cast(Box(space.shape(), space.low(), space.high(), space.dtype()));
  std::vector<int64_t> shape{batch};
  shape.insert(shape.end(), space.shape().begin(), space.shape().end());
  std::vector<float> low, high;
  low.reserve(static_cast<size_t>(product(shape)));
  high.reserve(static_cast<size_t>(product(shape)));
  for (int64_t i = 0; i < batch; ++i) {
    low.insert(low.end(), space.low().begin(), space.low().end());
    high.insert(high.end(), space.high().begin(), space.high().end());
  }
  return py::cast(Box(std::move(shape), std::move(low), std::move(high), space.dtype()));
}

void bind_spaces(py::module_& module) {
  bind_common<Box>(module, "Box", "Gymnasium's Box: arrays of a fixed shape within per-element bounds.")
      .def(
          py::init([](const py::object& low, const py::object& high, const py::object& shape, const py::object& dtype) {
            const envs::Space space = box_space(low, high, shape, dtype, "Box");
            return Box(space.shape(), space.low(), space.high(), space.dtype());
          }),
          py::arg("low"), py::arg("high"), py::arg("shape") = py::none(), py::arg("dtype") = py::dtype::of<float>(),
          "Box(low, high, shape=None, dtype=numpy.float32), for a Python env's spaces (float32 or uint8).")
      .def_property_readonly("shape", &Box::shape)
      .def_property_readonly("dtype", &Box::dtype)
      .def_property_readonly("low", &Box::low)
      .def_property_readonly("high", &Box::high);
  bind_common<Discrete>(module, "Discrete", "Gymnasium's Discrete: the integers [0, n).")
      .def(py::init([](int64_t n) {
             if (n < 1) throw py::value_error("Discrete(n) needs n >= 1, got " + std::to_string(n));
             return Discrete(n);
           }),
           py::arg("n"))
      .def_property_readonly("n", [](const Discrete& self) { return py::dtype::of<int64_t>().attr("type")(self.n()); })
      .def_property_readonly("start", [](const Discrete&) { return py::dtype::of<int64_t>().attr("type")(0); })
      .def_property_readonly("shape", [](const Discrete&) { return py::tuple(); })
      .def_property_readonly("dtype", [](const Discrete&) { return py::dtype::of<int64_t>(); });
  bind_common<MultiDiscrete>(module, "MultiDiscrete", "Gymnasium's MultiDiscrete: one Discrete(nvec[i]) per element.")
      .def_property_readonly("nvec", &MultiDiscrete::nvec)
      .def_property_readonly("shape", &MultiDiscrete::shape)
      .def_property_readonly("dtype", [](const MultiDiscrete&) { return py::dtype::of<int64_t>(); });
}

}  // namespace concord::python
