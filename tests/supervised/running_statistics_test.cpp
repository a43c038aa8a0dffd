#include "concord/supervised/running_statistics.h"

#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/comm/thread_group.h"
#include "concord/supervised/classifier.h"
#include "concord/supervised/evaluation.h"

namespace concord::supervised {
namespace {

torch::nn::Sequential small_batch_norm_model() {
  namespace tnn = torch::nn;
  return tnn::Sequential(tnn::Conv2d(tnn::Conv2dOptions(1, 2, 3)), tnn::BatchNorm2d(2), tnn::Flatten(),
                         tnn::Linear(2 * 26 * 26, 10), tnn::BatchNorm1d(10));
}

TEST(RunningStatisticsTest, FlattensFloatingBuffersAndLoadsThemBack) {
  torch::nn::Sequential model = small_batch_norm_model();
  const torch::Tensor initial = running_statistics(*model);
  // Means 0 and variances 1 of 2 + 10 channels; the batch counters are left out.
  EXPECT_TRUE(
      torch::equal(initial, torch::cat({torch::zeros({2}), torch::ones({2}), torch::zeros({10}), torch::ones({10})})));
  const torch::Tensor values = torch::arange(24, torch::kFloat32);
  load_running_statistics(*model, values);
  EXPECT_TRUE(torch::equal(running_statistics(*model), values));
  EXPECT_THROW(load_running_statistics(*model, torch::zeros({23})), std::invalid_argument);
  EXPECT_EQ(running_statistics(*make_classifier("mlp")).numel(), 0);
}

TEST(RunningStatisticsTest, AveragingGivesEveryReplicaTheMean) {
  comm::ThreadGroup group(3);
  std::vector<torch::Tensor> after(3);
  std::vector<std::thread> replicas;
  for (int rank = 0; rank < 3; ++rank) {
    replicas.emplace_back([&, rank] {
      auto communicator = group.communicator(rank);
      torch::nn::Sequential model = small_batch_norm_model();
      load_running_statistics(*model, torch::full({24}, static_cast<float>(rank + 1)));  // 1, 2, 3
      average_running_statistics(*model, *communicator);
      after[static_cast<size_t>(rank)] = running_statistics(*model);
    });
  }
  for (auto& replica : replicas) replica.join();
  for (const auto& statistics : after) EXPECT_TRUE(torch::equal(statistics, torch::full({24}, 2.0f)));
}

// evaluate() runs batch norm on its running statistics, and leaves the model training.
TEST(RunningStatisticsTest, EvaluationUsesRunningStatistics) {
  torch::manual_seed(4);
  torch::nn::Sequential model = small_batch_norm_model();
  const data::LabelledData data{torch::rand({6, 1, 28, 28}), torch::tensor({0, 1, 2, 3, 4, 5}, torch::kInt64)};
  const Evaluation before = evaluate(model, data);
  EXPECT_TRUE(model->is_training());
  torch::Tensor statistics = running_statistics(*model);
  statistics.narrow(0, 0, 2).fill_(5.0);  // shift the convolution's running means
  load_running_statistics(*model, statistics);
  const Evaluation after = evaluate(model, data);
  EXPECT_NE(before.loss, after.loss);
  EXPECT_TRUE(model->is_training());
}

}  // namespace
}  // namespace concord::supervised
