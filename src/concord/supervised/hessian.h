#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <torch/types.h>

namespace concord::supervised {

// Second-order information for ABS (Yao et al. 2018), by double backward in LibTorch: the Hessian
// is never formed, only its products with vectors.

// The loss as a function of `parameters`, built with autograd: called once per estimate.
using LossClosure = std::function<torch::Tensor()>;

// H v for the Hessian H of loss() at the current parameters, with v and the result flat
// ([sum of numels], parameters in order). Parameters the loss does not reach contribute zeros.
torch::Tensor hessian_vector_product(const LossClosure& loss, const std::vector<torch::Tensor>& parameters,
                                     const torch::Tensor& vector);

struct PowerIterationOptions {
  int max_iterations = 20;  // Hessian-vector products at most
  double tolerance = 1e-3;  // stop once the estimate moves by at most this fraction of itself
  uint64_t seed = 1;        // the starting vector's (standard normal entries)
};

struct EigenvalueEstimate {
  double value = 0.0;      // the Rayleigh quotient v.Hv of the last unit vector v
  int iterations = 0;      // Hessian-vector products taken
  bool converged = false;  // the tolerance was met before the iteration cap
};

// The eigenvalue of largest magnitude of the loss's Hessian, by power iteration:
//   v <- random unit vector;  repeat: w <- H v;  lambda <- v.w;  v <- w / |w|
// until lambda changes by at most tolerance * |lambda|. One gradient graph serves every product.
EigenvalueEstimate top_hessian_eigenvalue(const LossClosure& loss, const std::vector<torch::Tensor>& parameters,
                                          const PowerIterationOptions& options);

}  // namespace concord::supervised
