#include "concord/envs/worker_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace concord::envs {
namespace {

TEST(WorkerPoolTest, RejectsFewerThanOneThread) {
  try {
    WorkerPool pool(0);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("num_threads >= 1, got 0"), std::string::npos) << e.what();
  }
}

TEST(WorkerPoolTest, CountsTheCallingThread) {
  EXPECT_EQ(WorkerPool(1).num_threads(), 1);
  EXPECT_EQ(WorkerPool(3).num_threads(), 3);
}

TEST(WorkerPoolTest, ParallelForCoversEveryIndexOnceInContiguousChunks) {
  for (int threads : {1, 2, 4}) {
    WorkerPool pool(threads);
    for (int64_t n : {1, 7, 64, 1000, 4097}) {
      for (int64_t chunk : {1, 3, 16, 5000}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        std::mutex mutex;
        std::vector<std::pair<int64_t, int64_t>> chunks;
        pool.parallel_for(n, chunk, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
          std::lock_guard<std::mutex> lock(mutex);
          chunks.emplace_back(begin, end);
        });
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << i;
        std::sort(chunks.begin(), chunks.end());
        const bool inline_run = threads == 1 || chunk >= n;
        if (inline_run) {
          ASSERT_EQ(chunks.size(), 1u);
          EXPECT_EQ(chunks[0], std::make_pair(int64_t{0}, n));
          continue;
        }
        // The chunks tile [0, n), none longer than asked, at most one short chunk per thread.
        EXPECT_EQ(chunks.front().first, 0);
        EXPECT_EQ(chunks.back().second, n);
        for (size_t c = 0; c < chunks.size(); ++c) {
          EXPECT_GT(chunks[c].second, chunks[c].first);
          EXPECT_LE(chunks[c].second - chunks[c].first, chunk);
          if (c > 0) {
            EXPECT_EQ(chunks[c].first, chunks[c - 1].second);
          }
          // With n >= 16 per thread and chunks of 16, every chunk starts on a 16-item boundary.
          if (chunk == 16 && n >= 16 * threads) {
            EXPECT_EQ(chunks[c].first % 16, 0) << chunks[c].first;
          }
        }
        EXPECT_LE(static_cast<int64_t>(chunks.size()), (n + chunk - 1) / chunk + threads - 1);
      }
    }
  }
}

TEST(WorkerPoolTest, EmptyRangeCallsNothing) {
  WorkerPool pool(2);
  bool called = false;
  pool.parallel_for(0, 4, [&](int64_t, int64_t) { called = true; });
  EXPECT_FALSE(called);
}

TEST(WorkerPoolTest, SingleChunkRunsInlineOnTheCaller) {
  WorkerPool pool(4);
  std::thread::id ran_on;
  pool.parallel_for(10, 10, [&](int64_t, int64_t) { ran_on = std::this_thread::get_id(); });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

TEST(WorkerPoolTest, HelpersTakePartWhenChunksTakeTime) {
  WorkerPool pool(3);
  std::mutex mutex;
  std::set<std::thread::id> threads;
  pool.parallel_for(24, 1, [&](int64_t, int64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::lock_guard<std::mutex> lock(mutex);
    threads.insert(std::this_thread::get_id());
  });
  EXPECT_GE(threads.size(), 2u);
}

TEST(WorkerPoolTest, EachThreadStartsWithItsHomeRange) {
  // Two threads, four chunks: the caller's home is chunks 0-1, the helper's 2-3. The helper's
  // chunks are slow, so the caller finishes its own range before it could steal anything.
  WorkerPool pool(2);
  std::mutex mutex;
  std::vector<int64_t> caller_chunks;
  const auto caller = std::this_thread::get_id();
  pool.parallel_for(4, 1, [&](int64_t begin, int64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(begin < 2 ? 5 : 50));
    if (std::this_thread::get_id() != caller) return;
    std::lock_guard<std::mutex> lock(mutex);
    caller_chunks.push_back(begin);
  });
  ASSERT_GE(caller_chunks.size(), 2u);
  EXPECT_EQ(caller_chunks[0], 0);
  EXPECT_EQ(caller_chunks[1], 1);
}

TEST(WorkerPoolTest, RethrowsTheFirstExceptionAfterEveryChunkRan) {
  WorkerPool pool(3);
  std::atomic<int> chunks_run{0};
  EXPECT_THROW(pool.parallel_for(64, 1,
                                 [&](int64_t begin, int64_t) {
                                   chunks_run.fetch_add(1);
                                   if (begin % 10 == 3) throw std::runtime_error("chunk failed");
                                 }),
               std::runtime_error);
  EXPECT_EQ(chunks_run.load(), 64);
  // The pool is usable afterwards.
  std::atomic<int64_t> sum{0};
  pool.parallel_for(100, 7, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) sum.fetch_add(i);
  });
  EXPECT_EQ(sum.load(), 4950);
}

TEST(WorkerPoolTest, InlineRunPropagatesExceptions) {
  WorkerPool pool(1);
  EXPECT_THROW(pool.parallel_for(8, 2, [](int64_t, int64_t) { throw std::logic_error("x"); }), std::logic_error);
}

TEST(WorkerPoolTest, ManyShortBatchesBackToBack) {
  // Contention: thousands of tiny jobs, helpers racing to claim chunks between them.
  WorkerPool pool(4);
  std::vector<int64_t> data(256, 0);
  for (int round = 0; round < 20000; ++round) {
    pool.parallel_for(256, 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) data[static_cast<size_t>(i)] += 1;
    });
  }
  for (int64_t value : data) ASSERT_EQ(value, 20000);
}

TEST(WorkerPoolTest, BatchesAfterHelpersFellAsleep) {
  WorkerPool pool(2);
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // Past the spin: helpers block.
    std::atomic<int64_t> sum{0};
    pool.parallel_for(1000, 10, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) sum.fetch_add(1);
    });
    EXPECT_EQ(sum.load(), 1000);
  }
}

TEST(WorkerPoolTest, SubmitRunsTasksOnHelpersAndWaitJoinsThem) {
  WorkerPool pool(3);
  std::atomic<int> started{0};
  std::atomic<bool> release{false};
  struct Context {
    std::atomic<int>* started;
    std::atomic<bool>* release;
  } context{&started, &release};
  pool.submit(
      2,
      [](void* c, int64_t) {
        auto* ctx = static_cast<Context*>(c);
        ctx->started->fetch_add(1);
        while (!ctx->release->load()) std::this_thread::yield();
      },
      &context);
  // submit() returns at once; both tasks run on the two helpers.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (started.load() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  EXPECT_EQ(started.load(), 2);
  EXPECT_THROW(pool.submit(
                   1, [](void*, int64_t) {}, nullptr),
               std::logic_error);
  release.store(true);
  pool.wait();
  pool.wait();  // No job: a no-op.
}

TEST(WorkerPoolTest, WaitRunsUnclaimedTasksItself) {
  WorkerPool pool(1);  // No helpers at all.
  std::atomic<int> ran{0};
  pool.submit(
      5, [](void* c, int64_t) { static_cast<std::atomic<int>*>(c)->fetch_add(1); }, &ran);
  pool.wait();
  EXPECT_EQ(ran.load(), 5);
}

TEST(WorkerPoolTest, DestroysCleanlyRightAfterConstruction) {
  for (int i = 0; i < 50; ++i) WorkerPool pool(4);
}

TEST(IndexQueueTest, FifoOrderUpToTheCallersMaximum) {
  IndexQueue queue(16);
  const int32_t ids[] = {5, 6, 7, 8, 9, 10, 11};
  queue.push(ids, 7);
  EXPECT_EQ(queue.size(), 7);
  int32_t out[16];
  ASSERT_EQ(queue.pop(out, 4), 4);
  EXPECT_EQ(std::vector<int32_t>(out, out + 4), (std::vector<int32_t>{5, 6, 7, 8}));
  ASSERT_EQ(queue.try_pop(out, 1), 1);
  EXPECT_EQ(out[0], 9);
  ASSERT_EQ(queue.pop(out, 16), 2);  // Whatever is left.
  EXPECT_EQ(out[0], 10);
  EXPECT_EQ(out[1], 11);
  EXPECT_EQ(queue.try_pop(out, 16), 0);
}

TEST(IndexQueueTest, PopWaitsForItsMinimum) {
  IndexQueue queue(16);
  const int32_t ids[] = {1, 2, 3, 4, 5};
  queue.push(ids, 3);
  std::atomic<int64_t> popped{-1};
  std::thread consumer([&] {
    int32_t out[16];
    popped.store(queue.pop(out, 16, 5));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(popped.load(), -1);  // Three ids wait, five are needed.
  queue.push(ids + 3, 2);
  consumer.join();
  EXPECT_EQ(popped.load(), 5);
}

TEST(IndexQueueTest, StalledForMeasuresTimeWithoutPops) {
  IndexQueue queue(8);
  EXPECT_EQ(queue.stalled_for().count(), 0);  // Empty.
  const int32_t ids[] = {1, 2, 3};
  queue.push(ids, 3);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto stalled = queue.stalled_for();
  EXPECT_GE(stalled, std::chrono::milliseconds(20));
  int32_t out[8];
  ASSERT_EQ(queue.try_pop(out, 1), 1);
  EXPECT_LT(queue.stalled_for(), stalled);  // A pop restarts the clock.
  ASSERT_EQ(queue.try_pop(out, 8), 2);
  EXPECT_EQ(queue.stalled_for().count(), 0);
}

TEST(IndexQueueTest, WrapsAroundAndRejectsOverflow) {
  IndexQueue queue(4);
  int32_t out[4];
  for (int32_t round = 0; round < 10; ++round) {
    const int32_t ids[] = {round, round + 1, round + 2};
    queue.push(ids, 3);
    ASSERT_EQ(queue.pop(out, 4), 3);
    EXPECT_EQ(out[0], round);
    EXPECT_EQ(out[2], round + 2);
  }
  const int32_t five[] = {1, 2, 3, 4, 5};
  EXPECT_THROW(queue.push(five, 5), std::logic_error);
  EXPECT_EQ(queue.size(), 0);
}

TEST(IndexQueueTest, CloseWakesBlockedConsumers) {
  IndexQueue queue(8);
  std::atomic<int> returned{0};
  std::vector<std::thread> consumers;
  for (int i = 0; i < 2; ++i) {
    consumers.emplace_back([&] {
      int32_t out[8];
      if (queue.pop(out, 8) == 0) returned.fetch_add(1);
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // Let them block.
  queue.close();
  for (auto& consumer : consumers) consumer.join();
  EXPECT_EQ(returned.load(), 2);
  const int32_t id = 1;
  queue.push(&id, 1);
  int32_t out[8];
  EXPECT_EQ(queue.pop(out, 8), 0);  // Closed: pending ids are abandoned.
}

TEST(IndexQueueTest, ConsumersUnderContentionSeeEveryIdOnce) {
  constexpr int32_t kIds = 50000;
  IndexQueue queue(1024);
  std::vector<std::atomic<int>> seen(kIds);
  std::vector<std::thread> consumers;
  for (int c = 0; c < 3; ++c) {
    consumers.emplace_back([&] {
      int32_t out[64] = {};
      for (;;) {
        const int64_t count = queue.pop(out, 1 + (out[0] & 31));
        if (count == 0) return;
        for (int64_t k = 0; k < count; ++k) seen[static_cast<size_t>(out[k])].fetch_add(1);
      }
    });
  }
  int32_t next = 0;
  std::vector<int32_t> batch;
  while (next < kIds) {
    batch.clear();
    for (int k = 0; k < 100 && next < kIds; ++k) batch.push_back(next++);
    while (queue.size() + static_cast<int64_t>(batch.size()) > 1024) std::this_thread::yield();
    queue.push(batch.data(), static_cast<int64_t>(batch.size()));
  }
  while (queue.size() > 0) std::this_thread::yield();
  // Wait until every popped id was counted, then stop the consumers.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  auto counted = [&] {
    int64_t total = 0;
    for (auto& s : seen) total += s.load();
    return total;
  };
  while (counted() < kIds && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  queue.close();
  for (auto& consumer : consumers) consumer.join();
  for (int32_t i = 0; i < kIds; ++i) ASSERT_EQ(seen[static_cast<size_t>(i)].load(), 1) << i;
}

}  // namespace
}  // namespace concord::envs
