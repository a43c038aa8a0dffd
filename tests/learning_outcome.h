#pragma once
// Learning tests: "this training run ends clearly above a random policy", over several seeds.
//
// One seed's learning curve is not reproducible across machines: OpenBLAS picks its kernels by
// CPU (or by OPENBLAS_CORETYPE), the kernels round differently, and a few ulps early in training
// become a different run. A single seed against a fixed bar therefore passes or fails by chance
// from one machine to the next. A learning test here runs up to `seeds` seeds and passes when
// `must_pass` of them clear the bar; it stops as soon as the verdict is known, so a healthy run
// usually costs `must_pass` trainings. Bars come from the sweep in scripts/learning_sweep.sh over
// seeds and kernels (figures in bench/RESULTS.md), and scripts/kernel_check.sh reruns every test
// labelled `learning` under kernels other than the machine's own.
//
// CONCORD_LEARNING_SEEDS="1,2,3,..." replaces the seeds and runs every one of them (the sweep);
// the test then passes when the same share of them clears the bar.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "concord/core/blas.h"

namespace concord::test {

struct LearningBar {
  double above = 0.0;  // a seed passes when its score is strictly above this
  int seeds = 3;       // seeds tried at most: first_seed, first_seed + 1, ...
  int must_pass = 2;   // seeds that must pass
  uint64_t first_seed = 1;
};

inline std::vector<uint64_t> swept_learning_seeds() {
  std::vector<uint64_t> seeds;
  const char* listed = std::getenv("CONCORD_LEARNING_SEEDS");
  if (listed == nullptr) return seeds;
  std::stringstream words(listed);
  for (std::string word; std::getline(words, word, ',');) {
    if (!word.empty()) seeds.push_back(std::stoull(word));
  }
  return seeds;
}

// Runs score(seed) over the bar's seeds; each seed's score is printed on one line that
// scripts/learning_sweep.sh collects:
//   [learning] Suite.Test seed=3 kernel=Haswell score=187.5 bar=150
inline ::testing::AssertionResult learns(const std::function<double(uint64_t seed)>& score, const LearningBar& bar) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string name = info == nullptr ? "?" : std::string(info->test_suite_name()) + "." + info->name();
  const std::string kernel = core::blas_kernel();
  const std::string suite = info == nullptr ? "" : info->test_suite_name();
  const std::string marker = "Learning";
  if (suite.size() < marker.size() || suite.compare(suite.size() - marker.size(), marker.size(), marker) != 0) {
    return ::testing::AssertionFailure() << "a learning test's suite name must end in 'Learning' (this one is '"
                                         << suite << "'), so that scripts/kernel_check.sh reruns it";
  }

  std::vector<uint64_t> seeds = swept_learning_seeds();
  const bool sweep = !seeds.empty();
  if (!sweep) {
    for (int i = 0; i < bar.seeds; ++i) seeds.push_back(bar.first_seed + static_cast<uint64_t>(i));
  }
  // In a sweep every seed runs, and the share that must pass is the bar's.
  const int needed =
      sweep ? static_cast<int>((static_cast<int64_t>(seeds.size()) * bar.must_pass + bar.seeds - 1) / bar.seeds)
            : bar.must_pass;
  const int allowed_failures = static_cast<int>(seeds.size()) - needed;

  int passed = 0;
  int failed = 0;
  std::ostringstream scores;
  for (const uint64_t seed : seeds) {
    const double value = score(seed);
    const bool above = value > bar.above;
    (above ? passed : failed) += 1;
    std::printf("[learning] %s seed=%llu kernel=%s score=%.2f bar=%g\n", name.c_str(),
                static_cast<unsigned long long>(seed), kernel.c_str(), value, bar.above);
    std::fflush(stdout);
    scores << (scores.tellp() > 0 ? ", " : "") << "seed " << seed << ": " << value;
    if (!sweep && (passed >= needed || failed > allowed_failures)) break;
  }
  if (passed >= needed) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << passed << " of " << (passed + failed) << " seeds scored above " << bar.above
                                       << " (needed " << needed << ", BLAS kernel " << kernel << "): " << scores.str();
}

}  // namespace concord::test
