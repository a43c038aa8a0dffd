#include "concord/parallel/synchronous_sgd.h"

#include <torch/torch.h>

namespace concord::parallel {

SynchronousSgd::SynchronousSgd(comm::Communicator& communicator, torch::nn::Module& module,
                               nn::FlatParameters& parameters, torch::optim::Optimizer& optimizer,
                               sync::SyncStrategy& strategy, LossFunction loss, std::vector<InputKind> inputs,
                               int sub_slices)
    : parameters_(parameters),
      optimizer_(optimizer),
      strategy_(strategy),
      function_(
          communicator,
          [loss = std::move(loss), workers = communicator.world_size(), weights = module.parameters()](
              const std::vector<torch::Tensor>& slice, const CallSlice& call) {
            torch::Tensor value = loss(slice);
            const double share = static_cast<double>(call.rows) / static_cast<double>(call.total_rows);
            const torch::Tensor scaled = value * (share * workers);
            if (call.piece + 1 == call.pieces) {
              scaled.backward();
            } else {
              const std::vector<torch::Tensor> gradients = torch::autograd::grad({scaled}, weights);
              torch::NoGradGuard no_grad;
              for (size_t i = 0; i < weights.size(); ++i) weights[i].mutable_grad().add_(gradients[i]);
            }
            return std::vector<torch::Tensor>{value.detach()};
          },
          FunctionSpec{std::move(inputs), {Aggregation::kAvg}, sub_slices}) {
  strategy_.attach(parameters_);
}

double SynchronousSgd::step(const std::vector<torch::Tensor>& batch) {
  parameters_.zero_grad();
  const double loss = function_(batch)[0].item<double>();
  strategy_.synchronize_gradients();
  optimizer_.step();
  strategy_.after_step();
  return loss;
}

}  // namespace concord::parallel
