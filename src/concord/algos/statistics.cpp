#include "concord/algos/statistics.h"

#include <optional>

namespace concord::algos {

std::optional<double> explained_variance(const at::Tensor& y_pred, const at::Tensor& y_true) {
  const double var_y = y_true.var(/*unbiased=*/false).item<double>();
  if (var_y == 0.0) return std::nullopt;
  return 1.0 - y_true.sub(y_pred).var(/*unbiased=*/false).item<double>() / var_y;
}

}  // namespace concord::algos
