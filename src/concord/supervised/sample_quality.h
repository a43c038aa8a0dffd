#pragma once

#include <cstdint>
#include <mutex>

#include <torch/nn/modules/container/sequential.h>
#include <torch/types.h>

#include "concord/data/mnist.h"

namespace concord::supervised {

// How good and how varied generated digits are, judged by a digit classifier's class
// probabilities p(y|x) over the samples x:
//
//   inception-style score  exp( E_x KL( p(y|x) || p(y) ) ),  p(y) = E_x p(y|x)
//       1 when every sample gets the same distribution; the number of classes when each sample is
//       classified with certainty and the classes are used equally.
//   class coverage         classes whose share of the samples (by most probable class) is at least
//       `fraction` of the uniform share 1 / C: a generator collapsed onto few digits covers few.
struct SampleQuality {
  double inception_score = 0.0;
  int64_t covered_classes = 0;
};

// probabilities: [N >= 1, C], rows summing to 1. Throws std::invalid_argument for another shape.
double inception_score(const torch::Tensor& probabilities);
int64_t class_coverage(const torch::Tensor& probabilities, double fraction = 0.5);
SampleQuality sample_quality(const torch::Tensor& probabilities);

// The judge of generated digits: `concord fit`'s MLP classifier trained once on the MNIST
// training set (supervised::fit_with_threads, one worker, synchronous SGD) for `steps` steps.
// Thread-safe: ranks on threads share one.
class DigitJudge {
 public:
  DigitJudge(const data::TrainTestSplit& data, int64_t steps, uint64_t seed);

  // p(y|x) of images [N, 1, 28, 28] in [0, 1]: [N, 10].
  torch::Tensor probabilities(const torch::Tensor& images) const;
  SampleQuality score(const torch::Tensor& images) const { return sample_quality(probabilities(images)); }
  // The classifier's accuracy on the MNIST test set: how far its judgement can be trusted.
  double test_accuracy() const { return test_accuracy_; }

 private:
  mutable torch::nn::Sequential classifier_;  // forward() is not const; the mutex serialises it
  double test_accuracy_ = 0.0;
  mutable std::mutex mutex_;
};

}  // namespace concord::supervised
