#pragma once

#include <cstdint>

namespace concord::core {
struct Checkpoint;
}

namespace concord::supervised {

// ABS / ABSA's decisions (Yao et al. 2018, "Hessian-based analysis of large batch training and
// robustness to adversaries"), apart from the training they steer:
//
//   at the end of every epoch, with lambda the top Hessian eigenvalue of the loss:
//     reference <- max(reference, lambda)                  (the largest since the last doubling)
//     if (lambda <= reference / 2  or  epochs since the last doubling >= force_after_epochs)
//        and the batch is below initial * max_ratio:
//       batch <- 2 batch;  reference <- lambda
//       learning rate <- 2 learning rate, while below initial * max_learning_rate_ratio
//       adversarial share <- share / 2                                        (ABSA)
//   ABSA trains on FGSM examples for that share of each batch until mid-training, none after.
//
// A flat or falling-by-half curvature means the loss landscape has widened enough for a larger
// batch (a larger step with less noise) to stay stable. The learning rate has its own cap because
// plain SGD diverges once it passes 2 / lambda: on MNIST's MLP the linear scaling rule's full
// ratio overshoots where a smaller cap does not (bench/RESULTS.md, "Supervised training").
struct AdaptiveBatchOptions {
  int64_t initial_batch = 32;  // rows per replica and step at the start
  double initial_learning_rate = 0.1;
  int64_t max_ratio = 16;                // the batch grows at most this many times
  int64_t max_learning_rate_ratio = 16;  // the learning rate grows at most this many times
  int64_t force_after_epochs = 0;        // double after this many epochs without a doubling (0: never)
  double adversarial_share = 0.0;        // ABSA: share of each batch replaced by FGSM examples at first (0: ABS)
  int64_t adversarial_until_epoch = 0;   // ABSA: epochs with adversarial examples (mid-training)
};

class AdaptiveBatchSchedule {
 public:
  // Throws std::invalid_argument naming the field for a value out of range.
  explicit AdaptiveBatchSchedule(const AdaptiveBatchOptions& options);

  // After epoch `epoch` (1-based, in order) with that epoch's eigenvalue estimate. Returns
  // whether the batch doubled.
  bool end_of_epoch(int64_t epoch, double eigenvalue);

  int64_t batch_size() const { return batch_size_; }
  double learning_rate() const { return learning_rate_; }
  // The share of the batch that is adversarial during epoch `epoch` (0-based epochs completed).
  double adversarial_share(int64_t epochs_completed) const;
  int doublings() const { return doublings_; }

  // Everything end_of_epoch() decides from (the batch, learning rate, share, the reference
  // eigenvalue and the epoch of the last doubling) as metadata["schedule"]. load() throws
  // core::CheckpointError (with no path) for a section that is missing or malformed.
  void save(core::Checkpoint& checkpoint) const;
  void load(const core::Checkpoint& checkpoint);

 private:
  AdaptiveBatchOptions options_;
  int64_t batch_size_;
  double learning_rate_;
  double share_;
  double reference_ = 0.0;
  bool has_reference_ = false;
  int64_t last_change_epoch_ = 0;
  int doublings_ = 0;
};

}  // namespace concord::supervised
