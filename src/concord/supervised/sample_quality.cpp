#include "concord/supervised/sample_quality.h"

#include <stdexcept>
#include <string>

#include <torch/torch.h>

#include "concord/nn/flat_parameters.h"
#include "concord/supervised/classifier.h"
#include "concord/supervised/fit.h"
#include "concord/supervised/running_statistics.h"
#include "concord/sync/sync_registry.h"

namespace concord::supervised {
namespace {

void check_table(const torch::Tensor& probabilities) {
  if (probabilities.dim() != 2 || probabilities.size(0) < 1 || probabilities.size(1) < 1) {
    throw std::invalid_argument("sample quality needs class probabilities [N >= 1, C >= 1], got a tensor of " +
                                std::to_string(probabilities.dim()) + " dimensions");
  }
}

}  // namespace

double inception_score(const torch::Tensor& probabilities) {
  check_table(probabilities);
  const torch::Tensor p = probabilities.to(torch::kDouble);
  const torch::Tensor marginal = p.mean(0, /*keepdim=*/true);
  // KL(p(y|x) || p(y)) with 0 log 0 = 0; the small floor only guards log(0) where p is 0 anyway.
  const torch::Tensor kl = (p * (p.clamp_min(1e-30).log() - marginal.clamp_min(1e-30).log())).sum(1);
  return std::exp(kl.mean().item<double>());
}

int64_t class_coverage(const torch::Tensor& probabilities, double fraction) {
  check_table(probabilities);
  const int64_t classes = probabilities.size(1);
  const torch::Tensor counts = torch::bincount(probabilities.argmax(1), {}, classes).to(torch::kDouble);
  const torch::Tensor shares = counts / static_cast<double>(probabilities.size(0));
  return (shares >= fraction / static_cast<double>(classes)).sum().item<int64_t>();
}

SampleQuality sample_quality(const torch::Tensor& probabilities) {
  return {inception_score(probabilities), class_coverage(probabilities)};
}

DigitJudge::DigitJudge(const data::TrainTestSplit& data, int64_t steps, uint64_t seed) {
  FitConfig fit;
  fit.model = "mlp";
  fit.strategy = "allreduce";
  fit.workers = 1;
  fit.steps = steps;
  fit.eval_interval = steps;
  fit.seed = seed;
  core::ConfigSchema schema;
  sync::declare_sync_keys(schema);
  const FitResult trained = fit_with_threads(fit, core::Config(std::move(schema)), data, {});
  test_accuracy_ = trained.final.test.accuracy;

  torch::manual_seed(seed);
  classifier_ = make_classifier(fit.model);
  nn::FlatParameters parameters(*classifier_);
  torch::NoGradGuard no_grad;
  parameters.values().copy_(trained.parameters);
  load_running_statistics(*classifier_, trained.running_statistics);
  classifier_->eval();
}

torch::Tensor DigitJudge::probabilities(const torch::Tensor& images) const {
  torch::NoGradGuard no_grad;
  std::lock_guard<std::mutex> lock(mutex_);
  return torch::softmax(classifier_->forward(images.to(torch::kFloat)), 1);
}

}  // namespace concord::supervised
