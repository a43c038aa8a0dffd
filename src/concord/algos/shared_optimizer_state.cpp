#include "concord/algos/shared_optimizer_state.h"

#include <stdexcept>

#include <c10/core/GradMode.h>
#include <torch/optim/adam.h>
#include <torch/optim/rmsprop.h>

namespace concord::algos {
namespace {

torch::optim::OptimizerParamState& only_state(torch::optim::Optimizer& optimizer) {
  if (optimizer.param_groups().size() != 1 || optimizer.param_groups()[0].params().size() != 1) {
    throw std::logic_error("share_optimizer_state: expected one flat parameter");
  }
  if (optimizer.state().empty()) {
    torch::Tensor& parameter = optimizer.param_groups()[0].params()[0];
    const torch::Tensor saved_grad = parameter.grad().detach().clone();
    {
      c10::NoGradGuard no_grad;
      parameter.mutable_grad().zero_();
    }
    optimizer.step();
    c10::NoGradGuard no_grad;
    parameter.mutable_grad().copy_(saved_grad);
  }
  return *optimizer.state().begin()->second;
}

}  // namespace

void share_optimizer_state(torch::optim::Optimizer& replica, torch::optim::Optimizer& primary) {
  torch::optim::OptimizerParamState& from = only_state(primary);
  torch::optim::OptimizerParamState& to = only_state(replica);
  if (auto* source = dynamic_cast<torch::optim::RMSpropParamState*>(&from)) {
    auto* target = dynamic_cast<torch::optim::RMSpropParamState*>(&to);
    if (target == nullptr) throw std::logic_error("share_optimizer_state: optimiser types differ");
    target->square_avg(source->square_avg());
    target->momentum_buffer(source->momentum_buffer());
    target->grad_avg(source->grad_avg());
    return;
  }
  if (auto* source = dynamic_cast<torch::optim::AdamParamState*>(&from)) {
    auto* target = dynamic_cast<torch::optim::AdamParamState*>(&to);
    if (target == nullptr) throw std::logic_error("share_optimizer_state: optimiser types differ");
    target->exp_avg(source->exp_avg());
    target->exp_avg_sq(source->exp_avg_sq());
    target->max_exp_avg_sq(source->max_exp_avg_sq());
    target->step(source->step());
    return;
  }
  throw std::logic_error("share_optimizer_state: only RMSprop and Adam statistics can be shared");
}

}  // namespace concord::algos
