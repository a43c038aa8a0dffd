// comm::describe_tensors and comm::allocate_described: what one rank says about the tensors it
// will send, and the buffers the other allocates from it, refusing what no experience could be.
#include "concord/comm/tensor_description.h"

#include <functional>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/comm/communicator.h"

namespace concord::comm {
namespace {

TEST(TensorDescription, BuffersHaveTheDescribedDtypesAndShapes) {
  const std::vector<torch::Tensor> tensors = {torch::zeros({50, 2, 10, 10, 4}, torch::kUInt8),
                                              torch::zeros({50, 2}, torch::kInt64), torch::zeros({3}, torch::kFloat32),
                                              torch::zeros({}, torch::kFloat64)};
  const torch::Tensor description = describe_tensors(tensors);
  ASSERT_EQ(description.sizes(), (std::vector<int64_t>{4, 2 + kMaxDescribedDims}));
  const std::vector<torch::Tensor> buffers = allocate_described(description, 4, "rank 1 described wrongly");
  ASSERT_EQ(buffers.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(buffers[i].sizes(), tensors[i].sizes()) << i;
    EXPECT_EQ(buffers[i].scalar_type(), tensors[i].scalar_type()) << i;
  }
}

TEST(TensorDescription, WhatNoExperienceCouldBeIsRefusedNamingTheField) {
  const auto refusal = [](const std::function<void(torch::Tensor&)>& spoil) {
    torch::Tensor description = describe_tensors({torch::zeros({2, 3}), torch::zeros({4}, torch::kInt64)});
    spoil(description);
    try {
      allocate_described(description, 2, "actor rank 1 described wrongly");
    } catch (const CommError& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  EXPECT_EQ(refusal([](torch::Tensor& d) { d[1][0] = 99; }),
            "actor rank 1 described wrongly: field 1 has dtype code 99");
  EXPECT_EQ(refusal([](torch::Tensor& d) { d[0][1] = 7; }), "actor rank 1 described wrongly: field 0 has 7 dims");
  EXPECT_EQ(refusal([](torch::Tensor& d) { d[0][3] = -3; }), "actor rank 1 described wrongly: field 0 has size -3");
  EXPECT_EQ(refusal([](torch::Tensor& d) { d[1][2] = int64_t{1} << 30; }),
            "actor rank 1 described wrongly: field 1 would take over 1 GiB");
  EXPECT_EQ(refusal([](torch::Tensor&) {}), "");
  EXPECT_THROW(describe_tensors({torch::zeros({1, 1, 1, 1, 1, 1, 1})}), std::invalid_argument);
}

}  // namespace
}  // namespace concord::comm
