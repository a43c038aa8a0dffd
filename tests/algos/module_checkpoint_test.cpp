#include "concord/algos/module_checkpoint.h"
#include "concord/core/checkpoint_fields.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

namespace concord::algos {
namespace {

struct TwoLayersImpl : torch::nn::Module {
  TwoLayersImpl() {
    first = register_module("first", torch::nn::Linear(3, 2));
    second = register_module("second", torch::nn::Linear(2, 1));
    count = register_buffer("count", torch::zeros({}));
  }
  torch::nn::Linear first{nullptr}, second{nullptr};
  torch::Tensor count;
};
TORCH_MODULE(TwoLayers);

std::string problem_of(const std::function<void()>& load) {
  try {
    load();
  } catch (const core::CheckpointError& error) {
    return error.problem();
  }
  return "(no error)";
}

TEST(ModuleCheckpoint, ParametersAndBuffersGoOutAndComeBackUnderTheirPrefix) {
  TwoLayers saved, restored;
  {
    torch::NoGradGuard no_grad;
    saved->count.fill_(7.0);
  }
  core::Checkpoint checkpoint;
  save_module(checkpoint, "model/", *saved);
  EXPECT_EQ(checkpoint.tensors.size(), 5u);
  ASSERT_EQ(checkpoint.tensors.count("model/first.weight"), 1u);
  EXPECT_EQ(checkpoint.tensors.at("model/count").item<float>(), 7.0f);

  check_module(checkpoint, "model/", *restored);
  load_module(checkpoint, "model/", *restored);
  for (const auto& tensor : module_state(*saved)) {
    EXPECT_TRUE(tensor.value().equal(module_state(*restored)[tensor.key()])) << tensor.key();
  }
  // The checkpoint holds copies: training on after save() does not change it.
  {
    torch::NoGradGuard no_grad;
    saved->first->weight.add_(1.0);
  }
  EXPECT_FALSE(checkpoint.tensors.at("model/first.weight").equal(saved->first->weight));
}

TEST(ModuleCheckpoint, EachMisfitIsNamedWithTheAlgorithmsHint) {
  TwoLayers module;
  core::Checkpoint checkpoint;
  save_module(checkpoint, "model/", *module);
  ModuleHints hints;
  hints.missing = [](const std::string& key) { return " (missing " + key + ")"; };
  hints.unexpected = [](const std::string& key) { return " (unexpected " + key + ")"; };

  core::Checkpoint without = checkpoint;
  without.tensors.erase("model/second.bias");
  EXPECT_EQ(problem_of([&] { check_module(without, "model/", *module, hints); }),
            "tensor 'model/second.bias' is missing (missing second.bias)");

  core::Checkpoint extra = checkpoint;
  extra.tensors["model/third.weight"] = torch::zeros({1});
  extra.tensors["other/third.weight"] = torch::zeros({1});  // another prefix is not this module's business
  EXPECT_EQ(problem_of([&] { check_module(extra, "model/", *module, hints); }),
            "tensor 'model/third.weight' is not a parameter or buffer of this learner (unexpected third.weight)");

  core::Checkpoint reshaped = checkpoint;
  reshaped.tensors["model/first.weight"] = torch::zeros({2, 4});
  EXPECT_EQ(problem_of([&] { check_module(reshaped, "model/", *module); }),
            "tensor 'model/first.weight' has shape [2, 4], this learner's is [2, 3]");
}

TEST(ModuleCheckpoint, MetadataAndOptimiserStateAreCheckedBeforeUse) {
  TwoLayers module;
  core::Checkpoint checkpoint;
  checkpoint.metadata["algorithm"] = "ppo";
  checkpoint.metadata["updates"] = 12;
  checkpoint.metadata["target_sync_step"] = "soon";
  check_algorithm(checkpoint, "ppo");
  EXPECT_EQ(problem_of([&] { check_algorithm(checkpoint, "dqn"); }),
            "metadata 'algorithm' is \"ppo\", expected \"dqn\"");
  EXPECT_EQ(problem_of([&] { check_algorithm(core::Checkpoint{}, "dqn"); }),
            "metadata 'algorithm' is missing, expected \"dqn\"");
  EXPECT_EQ(core::metadata_int(checkpoint, "updates"), 12);
  EXPECT_EQ(problem_of([&] { core::metadata_int(checkpoint, "target_sync_step"); }),
            "metadata 'target_sync_step' is missing or not an integer");

  torch::optim::Adam adam(module->parameters(), torch::optim::AdamOptions(0.1));
  module->first->weight.mutable_grad() = torch::ones_like(module->first->weight);
  adam.step();
  save_optimizer(checkpoint, "optimizer", adam);
  torch::optim::Adam scratch(module->parameters(), torch::optim::AdamOptions(0.1));
  check_optimizer(checkpoint, "optimizer", scratch, torch::kCPU);
  EXPECT_EQ(problem_of([&] { check_optimizer(checkpoint, "optimizer/q", scratch, torch::kCPU); }),
            "tensor 'optimizer/q' is missing");
  checkpoint.tensors["garbage"] = torch::full({5}, 3, torch::kUInt8);
  const std::string garbage = problem_of([&] { check_optimizer(checkpoint, "garbage", scratch, torch::kCPU); });
  EXPECT_EQ(garbage.rfind("tensor 'garbage' is not a readable optimiser state: ", 0), 0u) << garbage;

  checkpoint.tensors["replay/fields/a"] = torch::zeros({1});
  checkpoint.tensors["replay/size"] = torch::zeros({1});
  const auto replay = core::tensors_under(checkpoint, "replay/");
  ASSERT_EQ(replay.size(), 2u);
  EXPECT_EQ(replay.count("fields/a"), 1u);
  EXPECT_TRUE(core::tensors_under(checkpoint, "target/").empty());
}

}  // namespace
}  // namespace concord::algos
