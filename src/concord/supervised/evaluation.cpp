#include "concord/supervised/evaluation.h"

#include <algorithm>

#include <torch/torch.h>

namespace concord::supervised {

Evaluation evaluate(torch::nn::Sequential& model, const data::LabelledData& data, int64_t batch_size) {
  torch::NoGradGuard no_grad;
  // Batch norm normalises with its running statistics, not the test batch's; training resumes in
  // training mode whatever happens here.
  const bool was_training = model->is_training();
  model->eval();
  struct RestoreMode {
    torch::nn::Sequential& model;
    bool training;
    ~RestoreMode() { model->train(training); }
  } restore{model, was_training};
  double loss_sum = 0.0;
  int64_t correct = 0;
  for (int64_t begin = 0; begin < data.size(); begin += batch_size) {
    const int64_t end = std::min(data.size(), begin + batch_size);
    const torch::Tensor logits = model->forward(data.images.slice(0, begin, end));
    const torch::Tensor labels = data.labels.slice(0, begin, end);
    loss_sum += torch::nn::functional::cross_entropy(
                    logits, labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                    .item<double>();
    correct += logits.argmax(1).eq(labels).sum().item<int64_t>();
  }
  const auto rows = static_cast<double>(std::max<int64_t>(data.size(), 1));
  return {loss_sum / rows, static_cast<double>(correct) / rows};
}

}  // namespace concord::supervised
