// explained_variance by hand, and undefined (not NaN) when the targets do not vary.
#include "concord/algos/statistics.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace concord::algos {
namespace {

TEST(ExplainedVariance, IsOneMinusTheResidualShareOfTheVariance) {
  // y = [1, 2, 3, 4]: Var = 1.25. Residual y - p = [0, 0, 1, -1]: Var = 0.5. 1 - 0.5 / 1.25 = 0.6.
  const auto explained =
      explained_variance(torch::tensor({1.0f, 2.0f, 2.0f, 5.0f}), torch::tensor({1.0f, 2.0f, 3.0f, 4.0f}));
  ASSERT_TRUE(explained.has_value());
  EXPECT_NEAR(*explained, 0.6, 1e-6);
  EXPECT_DOUBLE_EQ(*explained_variance(torch::tensor({1.0f, 2.0f}), torch::tensor({1.0f, 2.0f})), 1.0);
}

TEST(ExplainedVariance, IsUndefinedWhenTheTargetsAreConstant) {
  EXPECT_FALSE(explained_variance(torch::tensor({0.5f, 7.0f}), torch::tensor({3.0f, 3.0f})).has_value());
}

}  // namespace
}  // namespace concord::algos
