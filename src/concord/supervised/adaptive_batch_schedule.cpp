#include "concord/supervised/adaptive_batch_schedule.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "concord/core/checkpoint.h"
#include "concord/core/checkpoint_fields.h"

namespace concord::supervised {

AdaptiveBatchSchedule::AdaptiveBatchSchedule(const AdaptiveBatchOptions& options)
    : options_(options),
      batch_size_(options.initial_batch),
      learning_rate_(options.initial_learning_rate),
      share_(options.adversarial_share) {
  if (options.initial_batch < 1) throw std::invalid_argument("adaptive batch: the initial batch must be >= 1");
  if (!(options.initial_learning_rate > 0.0))
    throw std::invalid_argument("adaptive batch: the learning rate must be > 0");
  if (options.max_ratio < 1) {
    throw std::invalid_argument("fit.abs.max_ratio = " + std::to_string(options.max_ratio) + ": must be >= 1");
  }
  if (options.max_learning_rate_ratio < 1) {
    throw std::invalid_argument("fit.abs.max_lr_ratio = " + std::to_string(options.max_learning_rate_ratio) +
                                ": must be >= 1");
  }
  if (options.force_after_epochs < 0) {
    throw std::invalid_argument("fit.abs.force_after_epochs = " + std::to_string(options.force_after_epochs) +
                                ": must be >= 0");
  }
  if (!(options.adversarial_share >= 0.0 && options.adversarial_share < 1.0)) {
    throw std::invalid_argument("fit.abs.adversarial_share = " + std::to_string(options.adversarial_share) +
                                ": must lie in [0, 1)");
  }
}

bool AdaptiveBatchSchedule::end_of_epoch(int64_t epoch, double eigenvalue) {
  if (!has_reference_) {
    reference_ = eigenvalue;
    has_reference_ = true;
  }
  reference_ = std::max(reference_, eigenvalue);
  const bool flattened = eigenvalue <= reference_ / 2.0;
  const bool overdue = options_.force_after_epochs > 0 && epoch - last_change_epoch_ >= options_.force_after_epochs;
  const bool room = batch_size_ * 2 <= options_.initial_batch * options_.max_ratio;
  if (!(flattened || overdue) || !room) return false;
  batch_size_ *= 2;
  if (learning_rate_ * 2.0 <= options_.initial_learning_rate * static_cast<double>(options_.max_learning_rate_ratio)) {
    learning_rate_ *= 2.0;
  }
  share_ /= 2.0;
  reference_ = eigenvalue;
  last_change_epoch_ = epoch;
  ++doublings_;
  return true;
}

double AdaptiveBatchSchedule::adversarial_share(int64_t epochs_completed) const {
  return epochs_completed < options_.adversarial_until_epoch ? share_ : 0.0;
}

void AdaptiveBatchSchedule::save(core::Checkpoint& checkpoint) const {
  checkpoint.metadata["schedule"] = {
      {"batch_size", batch_size_}, {"learning_rate", learning_rate_},         {"adversarial_share", share_},
      {"reference", reference_},   {"has_reference", has_reference_ ? 1 : 0}, {"last_change_epoch", last_change_epoch_},
      {"doublings", doublings_}};
}

void AdaptiveBatchSchedule::load(const core::Checkpoint& checkpoint) {
  // Read into a copy: a malformed section leaves this schedule as it was.
  AdaptiveBatchSchedule restored = *this;
  restored.batch_size_ = core::metadata_int(checkpoint, "schedule", "batch_size");
  restored.learning_rate_ = core::metadata_double(checkpoint, "schedule", "learning_rate");
  restored.share_ = core::metadata_double(checkpoint, "schedule", "adversarial_share");
  restored.reference_ = core::metadata_double(checkpoint, "schedule", "reference");
  restored.has_reference_ = core::metadata_int(checkpoint, "schedule", "has_reference") != 0;
  restored.last_change_epoch_ = core::metadata_int(checkpoint, "schedule", "last_change_epoch");
  restored.doublings_ = static_cast<int>(core::metadata_int(checkpoint, "schedule", "doublings"));
  if (restored.batch_size_ < 1 || !(restored.learning_rate_ > 0.0)) {
    throw core::CheckpointError(core::CheckpointError::Kind::kCorrupt, {},
                                "metadata 'schedule' has batch_size " + std::to_string(restored.batch_size_) +
                                    " and learning_rate " + std::to_string(restored.learning_rate_));
  }
  *this = restored;
}

}  // namespace concord::supervised
