#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

namespace concord::algos {

// How much of the variance of `y_true` the prediction `y_pred` explains:
// 1 - Var(y - y_pred) / Var(y) (population variances, as numpy's np.var). 1 is a perfect
// prediction, 0 no better than the mean, negative worse. Both tensors are [N].
//
// nullopt when Var(y) = 0, where it is undefined (CleanRL logs NaN): learners then leave the
// metric out, because a NaN metric reads as divergence and stops training (policies'
// check_finite). It happens in practice: a hogwild worker's 20 returns of a solved CartPole
// can all be equal.
std::optional<double> explained_variance(const at::Tensor& y_pred, const at::Tensor& y_true);

}  // namespace concord::algos
