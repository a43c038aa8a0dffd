#include "concord/algos/replay_buffer.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/tensor.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "concord/algos/sum_tree.h"
#include "concord/algos/tensor_checks.h"
#include "concord/core/config_problems.h"

namespace concord::algos {
namespace {

using tensor_checks::describe;
using tensor_checks::fail;

constexpr const char* kCapacityKey = "capacity";
constexpr const char* kNumAddedKey = "num_added";
constexpr const char* kPrioritiesKey = "priorities";
constexpr const char* kMaxPriorityKey = "max_priority";
constexpr const char* kFieldPrefix = "fields/";

std::string describe_or_undefined(const at::Tensor& t) { return t.defined() ? describe(t) : "an undefined tensor"; }

// "[N, 10, 10, 4] Byte": the layout a field's tensor must have with `rows` leading rows
// (printed as N when negative).
std::string expected_layout(const ReplayField& field, int64_t rows) {
  std::ostringstream out;
  out << "[" << (rows >= 0 ? std::to_string(rows) : std::string("N"));
  for (int64_t d : field.shape) out << ", " << d;
  out << "] " << field.dtype;
  return out.str();
}

bool has_layout(const at::Tensor& t, const ReplayField& field) {
  if (!t.defined() || t.scalar_type() != field.dtype || t.dim() != 1 + static_cast<int64_t>(field.shape.size())) {
    return false;
  }
  for (size_t d = 0; d < field.shape.size(); ++d) {
    if (t.size(static_cast<int64_t>(d) + 1) != field.shape[d]) return false;
  }
  return true;
}

std::string field_names(const std::map<std::string, ReplayField>& fields) {
  std::string names;
  for (const auto& [name, field] : fields) names += (names.empty() ? "" : ", ") + name;
  return names;
}

// `priorities` as float64 values on the CPU, after checking it is [n], floating, finite, >= 0.
std::vector<double> checked_priorities(const char* fn, const at::Tensor& priorities, int64_t n) {
  if (!priorities.defined() || priorities.dim() != 1 || priorities.size(0) != n || !priorities.is_floating_point()) {
    fail(fn,
         "priorities must be a floating [" + std::to_string(n) + "] tensor, got " + describe_or_undefined(priorities));
  }
  const at::Tensor values = priorities.detach().to(at::kCPU, at::kDouble).contiguous();
  const double* data = values.data_ptr<double>();
  std::vector<double> out(data, data + n);
  for (double p : out) {
    if (!(p >= 0.0) || std::isinf(p)) fail(fn, "priorities must be finite and >= 0, got " + std::to_string(p));
  }
  return out;
}

// A scalar (one-element) integer tensor's value.
int64_t state_integer(const TensorMap& state, const char* key) {
  const auto found = state.find(key);
  if (found == state.end()) fail("ReplayBuffer::load_state", std::string("tensor '") + key + "' is missing");
  const at::Tensor& t = found->second;
  if (!t.defined() || t.numel() != 1 || at::isFloatingType(t.scalar_type()) || t.scalar_type() == at::kBool) {
    fail("ReplayBuffer::load_state",
         std::string("tensor '") + key + "' must be an integer scalar, got " + describe_or_undefined(t));
  }
  return t.item<int64_t>();
}

}  // namespace

void ReplayBufferConfig::validate() const {
  core::ConfigProblems problems;
  problems.check(capacity >= 1, "capacity", capacity, ">= 1");
  problems.check(alpha >= 0.0 && std::isfinite(alpha), "alpha", alpha, "finite and >= 0");
  if (fields.empty()) problems.add("fields is empty: declare at least one field");
  for (const auto& [name, field] : fields) {
    const std::string what = "fields." + name;
    problems.check(!name.empty(), "field name", "\"\"", "non-empty");
    problems.check(std::all_of(field.shape.begin(), field.shape.end(), [](int64_t d) { return d >= 0; }),
                   (what + ".shape").c_str(), field.shape, "non-negative sizes");
    problems.check(field.dtype != c10::ScalarType::Undefined, (what + ".dtype").c_str(), "Undefined", "a dtype");
  }
  problems.throw_if_any("ReplayBufferConfig");
}

double BetaSchedule::at(int64_t step) const {
  if (!(beta0 >= 0.0 && beta0 <= 1.0) || steps < 0 || step < 0) {
    throw std::invalid_argument(
        "BetaSchedule: need beta0 in [0, 1], steps >= 0 and step >= 0, got beta0=" + std::to_string(beta0) +
        ", steps=" + std::to_string(steps) + ", step=" + std::to_string(step));
  }
  if (step >= steps) return 1.0;
  return beta0 + (1.0 - beta0) * (static_cast<double>(step) / static_cast<double>(steps));
}

ReplayBuffer::ReplayBuffer(ReplayBufferConfig config) : config_(core::validated(std::move(config))) {
  for (const auto& [name, field] : config_.fields) {
    std::vector<int64_t> sizes{config_.capacity};
    sizes.insert(sizes.end(), field.shape.begin(), field.shape.end());
    storage_[name] = at::empty(sizes, at::TensorOptions().dtype(field.dtype));
  }
  if (config_.prioritized) {
    tree_ = std::make_unique<SumTree>(config_.capacity);
    priorities_.assign(static_cast<size_t>(config_.capacity), 0.0);
  }
}

ReplayBuffer::~ReplayBuffer() = default;

double ReplayBuffer::leaf_priority(double priority) const { return std::pow(priority, config_.alpha); }

int64_t ReplayBuffer::size_locked() const { return std::min(num_added_, config_.capacity); }

int64_t ReplayBuffer::index_of_slot(int64_t slot) const {
  // The newest transition has index num_added_ - 1; the one in `slot` is that many slots older
  // as the ring runs backwards from the newest slot.
  return num_added_ - 1 - (num_added_ - 1 - slot) % config_.capacity;
}

int64_t ReplayBuffer::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return size_locked();
}

int64_t ReplayBuffer::num_added() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return num_added_;
}

double ReplayBuffer::max_priority() const {
  if (!config_.prioritized) fail("ReplayBuffer::max_priority", "the buffer is not prioritized");
  std::lock_guard<std::mutex> lock(mutex_);
  return max_priority_;
}

double ReplayBuffer::priority(int64_t index) const {
  constexpr const char* kFn = "ReplayBuffer::priority";
  if (!config_.prioritized) fail(kFn, "the buffer is not prioritized");
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t oldest = std::max<int64_t>(0, num_added_ - config_.capacity);
  if (index < oldest || index >= num_added_) {
    fail(kFn, "index " + std::to_string(index) + " is not stored (stored: [" + std::to_string(oldest) + ", " +
                  std::to_string(num_added_) + "))");
  }
  return priorities_[static_cast<size_t>(index % config_.capacity)];
}

void ReplayBuffer::add(const TensorMap& batch, const std::optional<at::Tensor>& priorities) {
  constexpr const char* kFn = "ReplayBuffer::add";
  // Everything is checked and staged on the CPU before the lock is taken: the buffer's config
  // is immutable, and a failed add must change nothing.
  for (const auto& [name, tensor] : batch) {
    if (config_.fields.count(name) == 0) {
      fail(kFn, "unknown field '" + name + "' (declared: " + field_names(config_.fields) + ")");
    }
  }
  int64_t n = -1;
  std::string first_name;
  std::vector<std::pair<at::Tensor*, at::Tensor>> staged;  // storage, rows to write
  for (const auto& [name, field] : config_.fields) {
    const auto found = batch.find(name);
    if (found == batch.end()) fail(kFn, "field '" + name + "' is missing");
    const at::Tensor& t = found->second;
    if (!has_layout(t, field)) {
      fail(kFn, "field '" + name + "' is " + describe_or_undefined(t) + ", expected " + expected_layout(field, n));
    }
    if (n < 0) {
      n = t.size(0);
      first_name = name;
    } else if (t.size(0) != n) {
      fail(kFn, "field '" + name + "' has " + std::to_string(t.size(0)) + " rows but '" + first_name + "' has " +
                    std::to_string(n));
    }
    staged.emplace_back(&storage_.at(name), t);
  }
  std::vector<double> given;
  if (priorities) {
    if (!config_.prioritized) fail(kFn, "priorities given to a buffer that is not prioritized");
    given = checked_priorities(kFn, *priorities, n);
  }
  if (n == 0) return;

  // Of a batch larger than the buffer only the last `capacity` rows would survive.
  const int64_t kept = std::min(n, config_.capacity);
  const int64_t skipped = n - kept;
  // Rows are copied as bytes: a step's transition is a row or a few, and per-operation dispatch
  // would cost more than the copy. Host rows in order are read where they lie.
  c10::NoGradGuard no_grad;
  for (auto& [storage, rows] : staged) {
    if (!rows.device().is_cpu() || !rows.is_contiguous()) rows = rows.detach().to(at::kCPU).contiguous();
  }

  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t start = num_added_ + skipped;
  const int64_t first_slot = start % config_.capacity;
  // Slots first_slot.. up to the end of storage, then from slot 0 where the rows wrap around.
  const int64_t before_wrap = std::min(kept, config_.capacity - first_slot);
  for (auto& [storage, rows] : staged) {
    const size_t row_bytes = rows.numel() / static_cast<size_t>(n) * rows.element_size();
    const auto* source = static_cast<const char*>(rows.data_ptr()) + static_cast<size_t>(skipped) * row_bytes;
    auto* target = static_cast<char*>(storage->data_ptr());
    std::memcpy(target + static_cast<size_t>(first_slot) * row_bytes, source,
                static_cast<size_t>(before_wrap) * row_bytes);
    std::memcpy(target, source + static_cast<size_t>(before_wrap) * row_bytes,
                static_cast<size_t>(kept - before_wrap) * row_bytes);
  }
  if (config_.prioritized) {
    for (double p : given) max_priority_ = std::max(max_priority_, p);
    for (int64_t j = 0; j < kept; ++j) {
      const double p = given.empty() ? max_priority_ : given[static_cast<size_t>(skipped + j)];
      const int64_t slot = (start + j) % config_.capacity;
      priorities_[static_cast<size_t>(slot)] = p;
      tree_->set(slot, leaf_priority(p));
    }
  }
  num_added_ += n;
}

ReplaySample ReplayBuffer::sample(int64_t batch_size, core::Rng& rng, double beta) const {
  constexpr const char* kFn = "ReplayBuffer::sample";
  if (batch_size < 1) fail(kFn, "batch_size must be >= 1, got " + std::to_string(batch_size));
  if (!(beta >= 0.0 && beta <= 1.0)) fail(kFn, "beta must lie in [0, 1], got " + std::to_string(beta));

  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t stored = size_locked();
  if (stored == 0) fail(kFn, "the buffer is empty");
  if (batch_size > stored) {
    fail(kFn, "batch_size " + std::to_string(batch_size) + " is larger than the " + std::to_string(stored) +
                  " transitions stored");
  }
  std::vector<int64_t> slots(static_cast<size_t>(batch_size));
  std::vector<int64_t> indices(static_cast<size_t>(batch_size));
  std::vector<float> weights(static_cast<size_t>(batch_size), 1.0f);
  if (!config_.prioritized) {
    for (int64_t& slot : slots) slot = core::uniform_index(rng, stored);
  } else {
    const double total = tree_->total();
    if (!(total > 0.0)) fail(kFn, "every stored priority is 0, so nothing can be drawn");
    const double segment = total / static_cast<double>(batch_size);
    const double min_leaf = tree_->min_positive();
    for (int64_t j = 0; j < batch_size; ++j) {
      const double mass = (static_cast<double>(j) + core::uniform(rng, 0.0, 1.0)) * segment;
      const int64_t slot = tree_->find_prefix(mass);
      slots[static_cast<size_t>(j)] = slot;
      // (N P(i))^-beta / (N P_min)^-beta = (p_i^alpha / p_min^alpha)^-beta.
      weights[static_cast<size_t>(j)] = static_cast<float>(std::pow(tree_->get(slot) / min_leaf, -beta));
    }
  }
  for (size_t j = 0; j < slots.size(); ++j) indices[j] = index_of_slot(slots[j]);

  ReplaySample out;
  // Rows are gathered as bytes, as add() writes them: for a batch of small rows index_select's
  // dispatch, and the index tensor it needs, cost more than the copies.
  for (const auto& [name, storage] : storage_) {
    std::vector<int64_t> sizes = storage.sizes().vec();
    sizes[0] = batch_size;
    at::Tensor rows = at::empty(sizes, storage.options());
    const size_t row_bytes = static_cast<size_t>(storage.numel() / storage.size(0)) * storage.element_size();
    const auto* from = static_cast<const char*>(storage.data_ptr());
    auto* to = static_cast<char*>(rows.data_ptr());
    for (size_t j = 0; j < slots.size(); ++j) {
      std::memcpy(to + j * row_bytes, from + static_cast<size_t>(slots[j]) * row_bytes, row_bytes);
    }
    out.fields[name] = std::move(rows);
  }
  out.indices = at::tensor(indices, at::kLong);
  out.weights = at::tensor(weights, at::kFloat);
  return out;
}

int64_t ReplayBuffer::update_priorities(const at::Tensor& indices, const at::Tensor& priorities) {
  constexpr const char* kFn = "ReplayBuffer::update_priorities";
  if (!config_.prioritized) fail(kFn, "the buffer is not prioritized");
  if (!indices.defined() || indices.dim() != 1 || indices.scalar_type() != at::kLong) {
    fail(kFn, "indices must be a [M] int64 tensor, got " + describe_or_undefined(indices));
  }
  const int64_t m = indices.size(0);
  const std::vector<double> values = checked_priorities(kFn, priorities, m);
  const at::Tensor index_tensor = indices.to(at::kCPU).contiguous();
  const int64_t* index_data = index_tensor.data_ptr<int64_t>();

  std::lock_guard<std::mutex> lock(mutex_);
  for (int64_t j = 0; j < m; ++j) {
    if (index_data[j] < 0 || index_data[j] >= num_added_) {
      fail(kFn, "index " + std::to_string(index_data[j]) + " was never issued (" + std::to_string(num_added_) +
                    " transitions added)");
    }
  }
  // Stale: overwritten since it was sampled (see the header).
  const int64_t oldest = num_added_ - config_.capacity;
  int64_t applied = 0;
  for (int64_t j = 0; j < m; ++j) {
    if (index_data[j] < oldest) continue;
    const int64_t slot = index_data[j] % config_.capacity;
    const double p = values[static_cast<size_t>(j)];
    priorities_[static_cast<size_t>(slot)] = p;
    tree_->set(slot, leaf_priority(p));
    max_priority_ = std::max(max_priority_, p);
    ++applied;
  }
  return applied;
}

TensorMap ReplayBuffer::take_all() {
  constexpr const char* kFn = "ReplayBuffer::take_all";
  if (config_.prioritized) fail(kFn, "a prioritized buffer is sampled, not taken in order");
  std::lock_guard<std::mutex> lock(mutex_);
  if (num_added_ > config_.capacity) {
    fail(kFn, std::to_string(num_added_) + " transitions were added since the last take, more than the capacity of " +
                  std::to_string(config_.capacity));
  }
  TensorMap out;
  for (const auto& [name, storage] : storage_) out[name] = storage.slice(0, 0, num_added_).clone();
  num_added_ = 0;
  return out;
}

TensorMap ReplayBuffer::state() const {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t stored = size_locked();
  TensorMap out;
  out[kCapacityKey] = at::scalar_tensor(config_.capacity, at::kLong);
  out[kNumAddedKey] = at::scalar_tensor(num_added_, at::kLong);
  for (const auto& [name, storage] : storage_) out[kFieldPrefix + name] = storage.slice(0, 0, stored).clone();
  if (config_.prioritized) {
    out[kPrioritiesKey] =
        at::tensor(std::vector<double>(priorities_.begin(), priorities_.begin() + stored), at::kDouble);
    out[kMaxPriorityKey] = at::scalar_tensor(max_priority_, at::kDouble);
  }
  return out;
}

void ReplayBuffer::load_state(const TensorMap& state) {
  constexpr const char* kFn = "ReplayBuffer::load_state";
  // Everything is checked before anything changes.
  const int64_t capacity = state_integer(state, kCapacityKey);
  if (capacity != config_.capacity) {
    fail(kFn, "the state's capacity is " + std::to_string(capacity) + ", this buffer's is " +
                  std::to_string(config_.capacity));
  }
  const int64_t num_added = state_integer(state, kNumAddedKey);
  if (num_added < 0) fail(kFn, "num_added must be >= 0, got " + std::to_string(num_added));
  const int64_t stored = std::min(num_added, config_.capacity);

  const std::string prefix = kFieldPrefix;
  for (const auto& [key, tensor] : state) {
    if (key.compare(0, prefix.size(), prefix) == 0) {
      const std::string name = key.substr(prefix.size());
      if (config_.fields.count(name) == 0) {
        fail(kFn, "unexpected field '" + name + "' (declared: " + field_names(config_.fields) + ")");
      }
    } else if (key != kCapacityKey && key != kNumAddedKey && key != kPrioritiesKey && key != kMaxPriorityKey) {
      fail(kFn, "unexpected tensor '" + key + "'");
    }
  }
  for (const auto& [name, field] : config_.fields) {
    const auto found = state.find(prefix + name);
    if (found == state.end()) fail(kFn, "field '" + name + "' is missing");
    if (!has_layout(found->second, field) || found->second.size(0) != stored) {
      fail(kFn, "field '" + name + "' is " + describe_or_undefined(found->second) + ", expected " +
                    expected_layout(field, stored));
    }
  }
  std::vector<double> loaded_priorities;
  double loaded_max_priority = 1.0;
  if (config_.prioritized) {
    const auto found = state.find(kPrioritiesKey);
    if (found == state.end()) fail(kFn, "tensor 'priorities' is missing (saved by a uniform buffer?)");
    if (found->second.scalar_type() != at::kDouble) {
      fail(kFn, "priorities must be float64, got " + describe_or_undefined(found->second));
    }
    loaded_priorities = checked_priorities(kFn, found->second, stored);
    const auto max_found = state.find(kMaxPriorityKey);
    if (max_found == state.end()) fail(kFn, "tensor 'max_priority' is missing (saved by a uniform buffer?)");
    const at::Tensor& max_tensor = max_found->second;
    if (!max_tensor.defined() || max_tensor.numel() != 1 || !max_tensor.is_floating_point()) {
      fail(kFn, "max_priority must be a floating scalar, got " + describe_or_undefined(max_tensor));
    }
    loaded_max_priority = max_tensor.item<double>();
    if (!(loaded_max_priority >= 1.0) || std::isinf(loaded_max_priority)) {
      fail(kFn, "max_priority must be finite and >= 1, got " + std::to_string(loaded_max_priority));
    }
  }

  c10::NoGradGuard no_grad;
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [name, storage] : storage_) storage.slice(0, 0, stored).copy_(state.at(prefix + name));
  num_added_ = num_added;
  if (config_.prioritized) {
    tree_ = std::make_unique<SumTree>(config_.capacity);
    std::fill(priorities_.begin(), priorities_.end(), 0.0);
    for (int64_t slot = 0; slot < stored; ++slot) {
      priorities_[static_cast<size_t>(slot)] = loaded_priorities[static_cast<size_t>(slot)];
      tree_->set(slot, leaf_priority(loaded_priorities[static_cast<size_t>(slot)]));
    }
    max_priority_ = loaded_max_priority;
  }
}

}  // namespace concord::algos
