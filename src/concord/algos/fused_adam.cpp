#include "concord/algos/fused_adam.h"

#include <ATen/ops/zeros_like.h>
#include <c10/util/string_utils.h>
#include <torch/optim/adam.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>

#include "concord/core/torch_thread.h"

namespace concord::algos {
namespace {

// Adam's scalars, each as ATen converts it for a float tensor: computed in double, rounded once.
struct AdamScalars {
  float beta1, one_minus_beta1, beta2, one_minus_beta2, root_correction2, eps, decay, step_size;
};

// The elementwise update, in the order of Adam::step()'s operations. Four distinct buffers:
// restrict lets the loop vectorise without runtime overlap checks. Inlined into its caller, g++ 12
// leaves the loop scalar (several times slower); sqrt vectorises only under -fno-math-errno
// (CMakeLists.txt).
template <bool kDecay>
__attribute__((noinline)) void update(float* __restrict theta, const float* __restrict g, float* __restrict m,
                                      float* __restrict v, int64_t n, const AdamScalars s) {
  for (int64_t i = 0; i < n; ++i) {
    const float gi = kDecay ? g[i] + s.decay * theta[i] : g[i];
    m[i] = m[i] * s.beta1 + s.one_minus_beta1 * gi;
    v[i] = v[i] * s.beta2 + s.one_minus_beta2 * gi * gi;
    const float denominator = std::sqrt(v[i]) / s.root_correction2 + s.eps;
    theta[i] = theta[i] + s.step_size * (m[i] / denominator);
  }
}

}  // namespace

bool fused_adam_step(torch::optim::Optimizer& optimizer) {
  auto* adam = dynamic_cast<torch::optim::Adam*>(&optimizer);
  if (adam == nullptr || !core::flushing_denormals() || adam->param_groups().size() != 1 ||
      adam->param_groups()[0].params().size() != 1) {
    return false;
  }
  torch::optim::OptimizerParamGroup& group = adam->param_groups()[0];
  const at::Tensor& p = group.params()[0];
  const auto& options = static_cast<const torch::optim::AdamOptions&>(group.options());
  const at::Tensor& grad = p.grad();
  if (options.amsgrad() || !grad.defined() || !p.device().is_cpu() || p.scalar_type() != at::kFloat ||
      grad.scalar_type() != at::kFloat || !p.is_contiguous() || !grad.is_contiguous()) {
    return false;
  }

  // The state as Adam::step() keys and creates it.
  const std::string key = c10::guts::to_string(p.unsafeGetTensorImpl());
  auto found = adam->state().find(key);
  if (found == adam->state().end()) {
    auto state = std::make_unique<torch::optim::AdamParamState>();
    state->step(0);
    state->exp_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
    state->exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
    found = adam->state().emplace(key, std::move(state)).first;
  }
  auto& state = static_cast<torch::optim::AdamParamState&>(*found->second);
  if (state.exp_avg().numel() != p.numel() || state.exp_avg_sq().numel() != p.numel() ||
      !state.exp_avg().is_contiguous() || !state.exp_avg_sq().is_contiguous() ||
      state.exp_avg().scalar_type() != at::kFloat || state.exp_avg_sq().scalar_type() != at::kFloat) {
    return false;
  }
  state.step(state.step() + 1);

  const double beta1 = std::get<0>(options.betas());
  const double beta2 = std::get<1>(options.betas());
  const double bias_correction1 = 1 - std::pow(beta1, static_cast<double>(state.step()));
  const double bias_correction2 = 1 - std::pow(beta2, static_cast<double>(state.step()));
  const AdamScalars scalars{static_cast<float>(beta1),
                            static_cast<float>(1 - beta1),
                            static_cast<float>(beta2),
                            static_cast<float>(1 - beta2),
                            static_cast<float>(std::sqrt(bias_correction2)),
                            static_cast<float>(options.eps()),
                            static_cast<float>(options.weight_decay()),
                            static_cast<float>(-(options.lr() / bias_correction1))};
  float* theta = p.data_ptr<float>();
  const float* g = grad.data_ptr<float>();
  float* m = state.exp_avg().data_ptr<float>();
  float* v = state.exp_avg_sq().data_ptr<float>();
  if (options.weight_decay() != 0) {
    update<true>(theta, g, m, v, p.numel(), scalars);
  } else {
    update<false>(theta, g, m, v, p.numel(), scalars);
  }
  // As an in-place LibTorch operation would: autograd then refuses a graph that saved the old
  // values.
  p.unsafeGetTensorImpl()->bump_version();
  return true;
}

}  // namespace concord::algos
