#pragma once

#include <ATen/core/Tensor.h>

namespace concord::algos {

// How much of the variance of `y_true` the prediction `y_pred` explains:
// 1 - Var(y - y_pred) / Var(y), NaN when Var(y) = 0 (population variances, as numpy's np.var).
// 1 is a perfect prediction, 0 no better than the mean, negative worse. Both tensors are [N].
double explained_variance(const at::Tensor& y_pred, const at::Tensor& y_true);

}  // namespace concord::algos
