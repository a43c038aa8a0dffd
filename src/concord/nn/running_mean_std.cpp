#include "concord/nn/running_mean_std.h"

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include <c10/core/GradMode.h>
#include <torch/torch.h>

namespace concord::nn {
namespace {

// Whether x's trailing dimensions are `shape`, after `leading` dimensions in front of them
// (leading < 0: any number of them).
bool ends_in_shape(const torch::Tensor& x, const std::vector<int64_t>& shape, int64_t leading) {
  const int64_t lead = x.dim() - static_cast<int64_t>(shape.size());
  if (lead < 0 || (leading >= 0 && lead != leading)) return false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (x.size(lead + static_cast<int64_t>(i)) != shape[i]) return false;
  }
  return true;
}

// ", 4, 5" for shape [4, 5]: the trailing dimensions of an expected shape in a message.
std::string trailing_dims(const std::vector<int64_t>& shape) {
  std::string out;
  for (int64_t size : shape) out += ", " + std::to_string(size);
  return out;
}

}  // namespace

void RunningMeanStdConfig::validate() const {
  std::ostringstream problems;
  for (int64_t size : shape) {
    if (size < 1) {
      problems << " shape=" << torch::IntArrayRef(shape) << " must be positive;";
      break;
    }
  }
  if (!(initial_count >= 0.0)) problems << " initial_count=" << initial_count << " must be >= 0;";
  if (!(epsilon >= 0.0)) problems << " epsilon=" << epsilon << " must be >= 0;";
  if (!(clip > 0.0)) problems << " clip=" << clip << " must be > 0;";
  // A zero count with a zero epsilon would divide 0 by 0 on the first update of a constant input.
  if (initial_count == 0.0 && epsilon == 0.0) problems << " initial_count and epsilon must not both be 0;";
  std::string message = problems.str();
  if (!message.empty()) {
    message.pop_back();
    throw std::invalid_argument("invalid RunningMeanStdConfig:" + message);
  }
}

RunningMeanStdImpl::RunningMeanStdImpl(RunningMeanStdConfig config) : config_(std::move(config)) {
  config_.validate();
  reset();
}

void RunningMeanStdImpl::reset() {
  const auto options = torch::TensorOptions().dtype(torch::kFloat64);
  mean_ = register_buffer("mean", torch::zeros(config_.shape, options));
  var_ = register_buffer("var", torch::ones(config_.shape, options));
  count_ = register_buffer("count", torch::full({}, config_.initial_count, options));
}

void RunningMeanStdImpl::update(const torch::Tensor& batch) {
  if (!ends_in_shape(batch, config_.shape, /*leading=*/1) || batch.size(0) < 1) {
    std::ostringstream message;
    message << "RunningMeanStd::update: expected a batch [N >= 1" << trailing_dims(config_.shape) << "], got "
            << batch.sizes();
    throw std::invalid_argument(message.str());
  }
  c10::NoGradGuard no_grad;
  const torch::Tensor x = batch.detach().to(mean_.device(), mean_.scalar_type());
  const double n = static_cast<double>(x.size(0));
  const torch::Tensor batch_mean = x.mean(0);
  const torch::Tensor batch_var = x.var(0, /*unbiased=*/false);

  // Chan et al. (1979): combine the two (count, mean, M2 = var * count) summaries.
  const double count = this->count();
  const double total = count + n;
  const torch::Tensor delta = batch_mean - mean_;
  const torch::Tensor m2 = var_ * count + batch_var * n + delta.square() * (count * n / total);
  mean_.add_(delta * (n / total));
  var_.copy_(m2 / total);
  count_.fill_(total);
}

torch::Tensor RunningMeanStdImpl::normalize(const torch::Tensor& x) const {
  if (!ends_in_shape(x, config_.shape, /*leading=*/-1)) {
    std::ostringstream message;
    message << "RunningMeanStd::normalize: expected [..." << trailing_dims(config_.shape) << "], got " << x.sizes();
    throw std::invalid_argument(message.str());
  }
  const torch::ScalarType dtype = x.is_floating_point() ? x.scalar_type() : torch::kFloat32;
  const torch::Tensor mean = mean_.to(x.device(), dtype);
  const torch::Tensor std = this->std().to(x.device(), dtype);
  return ((x.to(dtype) - mean) / std).clamp(-config_.clip, config_.clip);
}

torch::Tensor RunningMeanStdImpl::std() const { return (var_ + config_.epsilon).sqrt(); }

double RunningMeanStdImpl::count() const { return count_.item<double>(); }

}  // namespace concord::nn
