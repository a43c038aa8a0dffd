// The count-min sketch on small examples worked by hand, its prime table sizes, lock-free
// counting from several threads, and checkpoints.
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "concord/explore/count_min_sketch.h"

namespace concord::explore {
namespace {

torch::Tensor codes(std::vector<std::vector<int>> rows) {
  std::vector<torch::Tensor> tensors;
  for (const auto& row : rows) tensors.push_back(torch::tensor(row, torch::kUInt8));
  return torch::stack(tensors);
}

TEST(CountMinSketch, DefaultTableSizesAreThePapersPrimes) {
  EXPECT_EQ(largest_primes(6, 1000000), (std::vector<int64_t>{999983, 999979, 999961, 999959, 999953, 999931}));
  EXPECT_EQ(largest_primes(2, 7), (std::vector<int64_t>{7, 5}));
  EXPECT_THROW(largest_primes(5, 7), std::invalid_argument);
}

TEST(CountMinSketch, CountsAreTheMinimumOverTablesOnAWorkedExample) {
  // Tables of sizes 7 and 5; a code is the integer sum b_j 2^j: 101 -> 5, 000 -> 0, 111 -> 7.
  //   101 lands in cells (5, 0); 000 in (0, 0); 111 in (0, 2).
  CountMinSketch sketch(/*bits=*/3, /*tables=*/2, /*max_table_size=*/7);
  ASSERT_EQ(sketch.table_sizes(), (std::vector<int64_t>{7, 5}));
  sketch.add(codes({{1, 0, 1}, {1, 0, 1}, {0, 0, 0}}));

  std::vector<int64_t> expected_cells(12, 0);
  expected_cells[5] = 2;      // table 7, cell 5: 101 twice
  expected_cells[0] = 1;      // table 7, cell 0: 000
  expected_cells[7 + 0] = 3;  // table 5, cell 0: 101 twice and 000 collide
  EXPECT_TRUE(torch::equal(sketch.cells(), torch::tensor(expected_cells, torch::kInt64)));

  // 101: min(2, 3) = 2; 000: min(1, 3) = 1; 111: min(cell 0 of table 7 = 1, cell 2 of table 5 = 0) = 0.
  EXPECT_TRUE(
      torch::equal(sketch.counts(codes({{1, 0, 1}, {0, 0, 0}, {1, 1, 1}})), torch::tensor({2, 1, 0}, torch::kInt64)));
}

TEST(CountMinSketch, LongCodesIndexByTheirExactValueModuloEachPrime) {
  // A 100-bit code with only bit 99 set is 2^99, and 2^99 mod 7 = 1, 2^99 mod 5 = 3.
  CountMinSketch sketch(/*bits=*/100, /*tables=*/2, /*max_table_size=*/7);
  torch::Tensor code = torch::zeros({1, 100}, torch::kUInt8);
  code[0][99] = 1;
  sketch.add(code);
  const torch::Tensor cells = sketch.cells();
  EXPECT_EQ(cells[1].item<int64_t>(), 1);
  EXPECT_EQ(cells[7 + 3].item<int64_t>(), 1);
  EXPECT_EQ(cells.sum().item<int64_t>(), 2);
}

TEST(CountMinSketch, ThreadsAddToOneTableWithoutLosingCounts) {
  CountMinSketch sketch(/*bits=*/16, /*tables=*/3, /*max_table_size=*/1009);
  const torch::Tensor batch = torch::randint(0, 2, {50, 16}, torch::kUInt8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) sketch.add(batch);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(sketch.cells().sum().item<int64_t>(), 4 * 200 * 50 * 3);
  EXPECT_TRUE(torch::all(sketch.counts(batch) >= 800).item<bool>());
}

TEST(CountMinSketch, SavesAndRestoresItsCells) {
  CountMinSketch sketch(8, 2, 101);
  const torch::Tensor batch = torch::randint(0, 2, {30, 8}, torch::kUInt8);
  sketch.add(batch);
  core::Checkpoint checkpoint;
  sketch.save(checkpoint, "explore/counts/");
  CountMinSketch restored(8, 2, 101);
  restored.load(checkpoint, "explore/counts/");
  EXPECT_TRUE(torch::equal(restored.counts(batch), sketch.counts(batch)));
  CountMinSketch other_size(8, 2, 97);
  EXPECT_THROW(other_size.load(checkpoint, "explore/counts/"), core::CheckpointError);
}

TEST(CountMinSketch, CodesOfTheWrongWidthAreRefused) {
  CountMinSketch sketch(8, 2, 101);
  EXPECT_THROW(sketch.add(torch::zeros({2, 7}, torch::kUInt8)), std::invalid_argument);
  EXPECT_THROW(CountMinSketch(8, 0, 101), std::invalid_argument);
}

}  // namespace
}  // namespace concord::explore
