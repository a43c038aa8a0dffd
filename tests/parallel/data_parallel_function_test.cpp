#include "concord/parallel/data_parallel_function.h"

#include <gtest/gtest.h>

#include "concord/parallel/slicing.h"
#include "sync/thread_ranks.h"

namespace concord::parallel {
namespace {

using test::run_on_ranks;

// The function under test: rows x [N, 3] (integer-valued floats, so sums are exact), a broadcast
// offset b [3]:   y = x * 2 + b  (per row)   and its row sums, max and min.
std::vector<torch::Tensor> reference_outputs(const std::vector<torch::Tensor>& inputs, const CallSlice&) {
  const torch::Tensor y = inputs[0] * 2 + inputs[1];
  return {y.mean(), y.sum(0), y.amax(0), y.amin(0), y, y.sum(1)};
}

const std::vector<Aggregation> kAllModes = {Aggregation::kAvg, Aggregation::kSum,    Aggregation::kMax,
                                            Aggregation::kMin, Aggregation::kGather, Aggregation::kNone};

torch::Tensor batch(int64_t rows) {
  return torch::randint(-50, 50, {rows, 3}, torch::TensorOptions().dtype(torch::kFloat32));
}

TEST(SlicingTest, UnevenSlicesDifferByAtMostOne) {
  EXPECT_EQ(slice_bounds(10, 3), (std::vector<int64_t>{0, 4, 7, 10}));
  EXPECT_EQ(slice_bounds(4, 4), (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

// Every aggregation mode, sliced and broadcast inputs, uneven slices and sub-slices, against the
// same function called once on the whole batch: exact for sum/max/min/gather, float tolerance
// for avg.
TEST(DataParallelFunctionTest, MatchesOneWorkerForEveryAggregation) {
  torch::manual_seed(3);
  const torch::Tensor x = batch(23);
  const torch::Tensor b = torch::tensor({1.0f, -2.0f, 5.0f});
  const std::vector<torch::Tensor> expected = reference_outputs({x, b}, {23, 23});
  for (const int world : {1, 2, 3}) {
    for (const int sub_slices : {1, 2}) {
      run_on_ranks(world, [&](comm::Communicator& communicator) {
        DataParallelFunction function(communicator, reference_outputs,
                                      {{InputKind::kSliced, InputKind::kBroadcast}, kAllModes, sub_slices});
        const auto outputs = communicator.rank() == 0 ? function({x, b}) : function({});
        SCOPED_TRACE("world " + std::to_string(world) + ", sub-slices " + std::to_string(sub_slices));
        EXPECT_NEAR(outputs[0].item<float>(), expected[0].item<float>(), 1e-4);
        EXPECT_TRUE(torch::equal(outputs[1], expected[1]));
        EXPECT_TRUE(torch::equal(outputs[2], expected[2]));
        EXPECT_TRUE(torch::equal(outputs[3], expected[3]));
        EXPECT_TRUE(torch::equal(outputs[4], expected[4]));
        // none: each rank's own rows, in order.
        const auto bounds = slice_bounds(23, world);
        const auto rank = static_cast<size_t>(communicator.rank());
        EXPECT_TRUE(torch::equal(outputs[5], expected[5].slice(0, bounds[rank], bounds[rank + 1])));
      });
    }
  }
}

// Indexed input: every worker holds the data itself; only the index batch travels, and the
// result equals indexing the data on one worker.
TEST(DataParallelFunctionTest, IndexedInputSelectsResidentRows) {
  torch::manual_seed(4);
  const torch::Tensor data = batch(40);
  const torch::Tensor b = torch::zeros({3});
  const torch::Tensor indices = torch::tensor({5, 0, 39, 7, 7, 12, 30}, torch::kInt64);
  const std::vector<torch::Tensor> expected = reference_outputs({data.index_select(0, indices), b}, {7, 7});
  run_on_ranks(3, [&](comm::Communicator& communicator) {
    DataParallelFunction function(communicator, reference_outputs,
                                  {{InputKind::kIndexed, InputKind::kBroadcast}, kAllModes, 1});
    function.set_resident(0, data.clone());
    const auto outputs = communicator.rank() == 0 ? function({indices, b}) : function({});
    EXPECT_TRUE(torch::equal(outputs[1], expected[1]));
    EXPECT_TRUE(torch::equal(outputs[4], expected[4]));
    EXPECT_NEAR(outputs[0].item<float>(), expected[0].item<float>(), 1e-4);
  });
}

// A call rank 0 rejects fails on every rank instead of leaving the others waiting.
TEST(DataParallelFunctionTest, TooFewRowsFailOnEveryRank) {
  run_on_ranks(2, [&](comm::Communicator& communicator) {
    DataParallelFunction function(communicator, reference_outputs,
                                  {{InputKind::kSliced, InputKind::kBroadcast}, kAllModes, 2});
    EXPECT_THROW(communicator.rank() == 0 ? function({batch(3), torch::zeros({3})}) : function({}),
                 std::invalid_argument);
  });
}

}  // namespace
}  // namespace concord::parallel
