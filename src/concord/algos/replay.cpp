#include "concord/algos/replay.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/stack.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "concord/algos/tensor_checks.h"
#include "concord/core/checkpoint_fields.h"
#include "concord/core/torch_thread.h"

namespace concord::algos {
namespace {

constexpr const char* kContentsPrefix = "replay/";
constexpr const char* kSamplerTensor = "replay_rng";

// `t` on the host as `dtype` (its own by default), without dispatching an operation where it
// already is: a step is a few rows, and each operation costs more than its copy.
at::Tensor on_host(const at::Tensor& t, std::optional<at::ScalarType> dtype = std::nullopt) {
  const at::ScalarType wanted = dtype.value_or(t.scalar_type());
  if (t.device().is_cpu() && t.scalar_type() == wanted && !t.requires_grad()) return t;
  return t.detach().to(at::kCPU, wanted);
}

// A host copy of `t` (as `dtype`, its own by default) that nobody else writes to, in one operation.
at::Tensor host_copy(const at::Tensor& t, std::optional<at::ScalarType> dtype = std::nullopt) {
  const at::ScalarType wanted = dtype.value_or(t.scalar_type());
  if (t.device().is_cpu() && t.scalar_type() == wanted && !t.requires_grad()) return t.clone();
  return t.detach().to(at::kCPU, wanted, /*non_blocking=*/false, /*copy=*/true);
}

// Rows [...] as one [k, ...] tensor; a single row as a view of itself (the buffer copies it).
at::Tensor stack_rows(const std::vector<at::Tensor>& rows) {
  return rows.size() == 1 ? rows.front().unsqueeze(0) : at::stack(rows);
}

// `values` as a float CPU tensor, rounded as .to(at::kFloat) rounds, in one allocation.
at::Tensor host_floats(const std::vector<double>& values) {
  at::Tensor out = at::empty({static_cast<int64_t>(values.size())}, at::kFloat);
  float* data = out.data_ptr<float>();
  for (size_t i = 0; i < values.size(); ++i) data[i] = static_cast<float>(values[i]);
  return out;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::ostringstream out;
  out << at::IntArrayRef(shape);
  return out.str();
}

// `t` ([B] where `shape` is {1}, else [B, *shape]) as [B, *shape].
at::Tensor with_shape(const char* owner, const char* name, const at::Tensor& t, int64_t rows,
                      const std::vector<int64_t>& shape) {
  if (t.dim() == 1 && shape.size() == 1 && shape[0] == 1 && t.size(0) == rows) return t.unsqueeze(1);
  if (t.dim() < 1 || t.size(0) != rows || t.sizes().slice(1) != at::IntArrayRef(shape)) {
    tensor_checks::fail(owner, std::string(name) + " must be [" + std::to_string(rows) + ", " +
                                   shape_text(shape).substr(1) + ", got " + tensor_checks::describe(t));
  }
  return t;
}

// A step's acting estimates (transition::kActingQ and kActingNextValue, [rows] each, from an
// Ape-X actor), as two host double tensors; none when the actor gave none (new transitions then
// take the buffer's maximum) or the replay samples uniformly. One without the other is refused.
std::optional<std::pair<at::Tensor, at::Tensor>> acting_estimates(const char* owner, const TensorMap& step,
                                                                  int64_t rows, bool prioritized) {
  const auto q = step.find(transition::kActingQ);
  const auto next_value = step.find(transition::kActingNextValue);
  const bool has_q = q != step.end() && q->second.defined();
  const bool has_next_value = next_value != step.end() && next_value->second.defined();
  if (has_q != has_next_value) {
    tensor_checks::fail(owner, std::string("the acting estimates come together: '") +
                                   (has_q ? transition::kActingNextValue : transition::kActingQ) + "' is missing");
  }
  if (!has_q || !prioritized) return std::nullopt;
  tensor_checks::check_1d(owner, transition::kActingQ, q->second, rows);
  tensor_checks::check_1d(owner, transition::kActingNextValue, next_value->second, rows);
  return std::make_pair(on_host(q->second, at::kDouble).contiguous(),
                        on_host(next_value->second, at::kDouble).contiguous());
}

// Ape-X's initial priority of a transition, by the acting network's estimates:
// |G + discount * V(bootstrap observation) - Q(o, a)| + eps, the learner's own priority formula
// with the actor's network in place of both online and target network.
double initial_priority(double return_, double discount, double bootstrap_value, double q_taken, double eps) {
  return std::abs(return_ + discount * bootstrap_value - q_taken) + eps;
}

at::Tensor text_bytes(const std::string& text) {
  at::Tensor bytes = at::empty({static_cast<int64_t>(text.size())}, at::kByte);
  std::memcpy(bytes.data_ptr<uint8_t>(), text.data(), text.size());
  return bytes;
}

std::string bytes_text(const at::Tensor& bytes) {
  const at::Tensor contiguous = bytes.to(at::kCPU).contiguous();
  return std::string(reinterpret_cast<const char*>(contiguous.data_ptr<uint8_t>()),
                     static_cast<size_t>(contiguous.numel()));
}

uint64_t seed_from_torch() {
  const at::Tensor draw =
      at::randint(std::numeric_limits<int64_t>::max(), {1}, core::thread_generator(at::kCPU), at::kLong);
  return static_cast<uint64_t>(draw.item<int64_t>());
}

ReplaySpec checked(ReplaySpec spec) {
  if (spec.capacity < 1) throw std::invalid_argument(spec.owner + ": the replay's capacity must be >= 1");
  if (spec.n_step < 1) throw std::invalid_argument(spec.owner + ": n_step must be >= 1");
  if (spec.num_actions < 0) throw std::invalid_argument(spec.owner + ": num_actions must be >= 0");
  return spec;
}

}  // namespace

Replay::Replay(ReplaySpec spec) : spec_(checked(std::move(spec))), rng_(seed_from_torch()) {
  if (spec_.observation_dtype) buffer_ = std::make_unique<ReplayBuffer>(buffer_config(*spec_.observation_dtype));
}

ReplayBufferConfig Replay::buffer_config(at::ScalarType observation_dtype) const {
  ReplayBufferConfig config;
  config.capacity = spec_.capacity;
  config.prioritized = spec_.prioritized;
  config.alpha = spec_.priority_alpha;
  const ReplayField action =
      spec_.num_actions > 0 ? ReplayField{{}, at::kLong} : ReplayField{spec_.action_shape, at::kFloat};
  config.fields = {
      {replay_field::kObservation, {spec_.observation_shape, observation_dtype}},
      {replay_field::kAction, action},
      {replay_field::kReturn, {{}, at::kFloat}},
      {replay_field::kDiscount, {{}, at::kFloat}},
      {replay_field::kBootstrapObservation, {spec_.observation_shape, observation_dtype}},
  };
  return config;
}

ReplayBuffer& Replay::buffer_for(at::ScalarType observation_dtype) {
  if (!buffer_) buffer_ = std::make_unique<ReplayBuffer>(buffer_config(observation_dtype));
  return *buffer_;
}

void Replay::add(const TensorMap& step, int stream) {
  const char* owner = spec_.owner.c_str();
  auto field = [&](const char* name) -> const at::Tensor& {
    const auto found = step.find(name);
    if (found == step.end() || !found->second.defined()) {
      tensor_checks::fail(owner, std::string("field '") + name + "' is missing");
    }
    return found->second;
  };
  const at::Tensor& raw_observations = field(transition::kObservations);
  if (raw_observations.dim() < 1) {
    tensor_checks::fail(owner, "observations must be [B, ...], got " + tensor_checks::describe(raw_observations));
  }
  const int64_t rows = raw_observations.size(0);
  const at::Tensor observations = with_shape(owner, "observations", raw_observations, rows, spec_.observation_shape);
  const at::Tensor next_observations =
      with_shape(owner, "next_observations", field(transition::kNextObservations), rows, spec_.observation_shape);
  const bool truncation_given = spec_.require_truncated || step.count(transition::kTruncated) != 0;
  for (const char* name : {transition::kRewards, transition::kTerminated}) {
    tensor_checks::check_1d(owner, name, field(name), rows);
  }
  if (truncation_given) tensor_checks::check_1d(owner, transition::kTruncated, field(transition::kTruncated), rows);
  const at::Tensor& raw_actions = field(transition::kActions);
  const bool discrete = spec_.num_actions > 0;
  if (discrete && (at::isFloatingType(raw_actions.scalar_type()) || raw_actions.scalar_type() == at::kBool)) {
    tensor_checks::fail(owner, "actions must be integer action indices, got " + tensor_checks::describe(raw_actions));
  }
  if (discrete) tensor_checks::check_1d(owner, transition::kActions, raw_actions, rows);
  const at::Tensor actions =
      discrete ? raw_actions : with_shape(owner, "actions", raw_actions, rows, spec_.action_shape);
  if (rows == 0) return;
  // Checked on the host rows: a reduction per bound costs more than the env step.
  const auto check_action_range = [&](const at::Tensor& a) {
    if (!discrete) return;
    const int64_t* values = a.data_ptr<int64_t>();
    const auto [lowest, highest] = std::minmax_element(values, values + rows);
    if (*lowest < 0 || *highest >= spec_.num_actions) {
      tensor_checks::fail(owner, "actions must lie in [0, " + std::to_string(spec_.num_actions) + "), got " +
                                     std::to_string(*lowest) + " to " + std::to_string(*highest));
    }
  };
  const at::ScalarType action_dtype = discrete ? at::kLong : at::kFloat;
  const at::ScalarType observation_dtype = spec_.observation_dtype.value_or(observations.scalar_type());
  const auto estimates = acting_estimates(owner, step, rows, spec_.prioritized);

  c10::NoGradGuard no_grad;
  if (spec_.n_step == 1) {
    // The one-step target: G = r_t, discount = gamma (0 after a termination; a truncation
    // bootstraps), from next_observations (the final observation where an episode ended). The
    // numbers an NStepQueue of n = 1 gives, without the per-env queues. The buffer copies the
    // rows, so host tensors go in as they are; discounts are written on the host (a step is a
    // few rows, and an operation per field would cost more than the env step).
    const at::Tensor a = on_host(actions, action_dtype).contiguous();
    check_action_range(a);
    const at::Tensor terminated = on_host(field(transition::kTerminated), at::kFloat).contiguous();
    at::Tensor discounts = at::empty({rows}, at::kFloat);
    const float* ended = terminated.data_ptr<float>();
    float* discount = discounts.data_ptr<float>();
    for (int64_t b = 0; b < rows; ++b) discount[b] = ended[b] != 0.0f ? 0.0f : static_cast<float>(spec_.gamma);
    const at::Tensor o = on_host(observations, observation_dtype);
    const at::Tensor r = on_host(field(transition::kRewards), at::kFloat).contiguous();
    std::optional<at::Tensor> priorities;
    if (estimates) {
      priorities = at::empty({rows}, at::kFloat);
      const double* q = estimates->first.data_ptr<double>();
      const double* next_value = estimates->second.data_ptr<double>();
      for (int64_t b = 0; b < rows; ++b) {
        priorities->data_ptr<float>()[b] = static_cast<float>(
            initial_priority(r.data_ptr<float>()[b], discount[b], next_value[b], q[b], spec_.priority_eps));
      }
    }
    buffer_for(observation_dtype)
        .add(
            {
                {replay_field::kObservation, o},
                {replay_field::kAction, a},
                {replay_field::kReturn, r},
                {replay_field::kDiscount, discounts},
                {replay_field::kBootstrapObservation, on_host(next_observations, observation_dtype)},
            },
            priorities);
    return;
  }

  // n-step windows keep steps by reference: give them copies nobody else writes to.
  const at::Tensor o = host_copy(observations, observation_dtype);
  const at::Tensor next_o = host_copy(next_observations, observation_dtype);
  const at::Tensor a = host_copy(actions, action_dtype).contiguous();
  check_action_range(a);
  // Flags and rewards are read on the host, without an operation where they already are (as the
  // one-step path): a step is a few rows, and each operation costs more than the step.
  const at::Tensor term = on_host(field(transition::kTerminated), at::kFloat).contiguous();
  const at::Tensor trunc = on_host(field(transition::kTruncated), at::kFloat).contiguous();
  const at::Tensor r = on_host(field(transition::kRewards), at::kDouble).contiguous();
  ReplayBuffer& buffer = buffer_for(observation_dtype);

  // Each env's window (n_step_returns.h) emits the transitions it completes.
  std::vector<NStepQueue>& queues = windows_[stream];
  if (queues.empty()) queues.assign(static_cast<size_t>(rows), NStepQueue(spec_.n_step, spec_.gamma));
  if (static_cast<int64_t>(queues.size()) != rows) {
    tensor_checks::fail(owner, "stream " + std::to_string(stream) + " had " + std::to_string(queues.size()) +
                                   " environments, this step has " + std::to_string(rows));
  }
  std::vector<at::Tensor> observation_rows, action_rows, bootstrap_rows;
  std::vector<double> returns, discounts, priorities;
  for (int64_t b = 0; b < rows; ++b) {
    // The actor's estimates travel in the window with their step: a transition completed here
    // takes Q(o_t, a_t) from its first step and the bootstrap value from its last.
    ActingEstimates acting;
    if (estimates) acting = {estimates->first.data_ptr<double>()[b], estimates->second.data_ptr<double>()[b]};
    for (NStepTransition& done :
         queues[static_cast<size_t>(b)].push(o[b], a[b], r.data_ptr<double>()[b], term.data_ptr<float>()[b] != 0.0f,
                                             trunc.data_ptr<float>()[b] != 0.0f, next_o[b], acting)) {
      observation_rows.push_back(std::move(done.observation));
      action_rows.push_back(std::move(done.action));
      returns.push_back(done.reward);
      discounts.push_back(done.discount);
      bootstrap_rows.push_back(std::move(done.bootstrap_observation));
      if (estimates) {
        priorities.push_back(
            initial_priority(done.reward, done.discount, done.bootstrap_value, done.q_first, spec_.priority_eps));
      }
    }
  }
  if (returns.empty()) return;
  std::optional<at::Tensor> initial;
  // A stream that starts giving estimates mid-window completes its first transitions without one
  // (NaN): those, and only then, take the buffer's maximum.
  const bool complete = estimates && std::none_of(priorities.begin(), priorities.end(),
                                                  [](double priority) { return std::isnan(priority); });
  if (complete) initial = host_floats(priorities);
  buffer.add(
      {
          {replay_field::kObservation, stack_rows(observation_rows)},
          {replay_field::kAction, stack_rows(action_rows)},
          {replay_field::kReturn, host_floats(returns)},
          {replay_field::kDiscount, host_floats(discounts)},
          {replay_field::kBootstrapObservation, stack_rows(bootstrap_rows)},
      },
      initial);
}

ReplaySample Replay::sample(int64_t batch_size, double beta) {
  if (!buffer_) throw std::invalid_argument(spec_.owner + ": the replay is empty");
  return buffer_->sample(batch_size, rng_, beta);
}

void Replay::update_priorities(const at::Tensor& indices, const at::Tensor& priorities) {
  if (!buffer_) throw std::invalid_argument(spec_.owner + ": the replay is empty");
  buffer_->update_priorities(indices, priorities);
}

TensorMap Replay::take_all() { return buffer_ ? buffer_->take_all() : TensorMap{}; }

int64_t Replay::size() const { return buffer_ ? buffer_->size() : 0; }

void Replay::save(core::Checkpoint& checkpoint, bool with_contents) const {
  checkpoint.tensors[kSamplerTensor] = text_bytes(core::rng_state(rng_));
  if (with_contents && buffer_) {
    for (const auto& [name, tensor] : buffer_->state()) checkpoint.tensors[kContentsPrefix + name] = tensor;
  }
}

Replay::Saved Replay::read(const core::Checkpoint& checkpoint, bool accept_contents) const {
  Saved saved;
  if (checkpoint.tensors.count(kSamplerTensor) != 0) {
    std::istringstream in(bytes_text(checkpoint.tensors.at(kSamplerTensor)));
    core::Rng rng;
    in >> rng;
    if (in.fail()) core::checkpoint_corrupt(std::string("tensor '") + kSamplerTensor + "' is not a generator state");
    saved.rng = rng;
  }
  const TensorMap contents = core::tensors_under(checkpoint, kContentsPrefix);
  if (!accept_contents || contents.empty()) return saved;
  // The observation dtype is the saved one where it is the env's.
  const at::ScalarType observation_dtype = spec_.observation_dtype.value_or(
      core::checkpoint_tensor(checkpoint, std::string(kContentsPrefix) + "fields/" + replay_field::kObservation)
          .scalar_type());
  try {
    saved.buffer = std::make_unique<ReplayBuffer>(buffer_config(observation_dtype));
    saved.buffer->load_state(contents);
  } catch (const std::invalid_argument& error) {
    core::checkpoint_corrupt(std::string("the replay (tensors '") + kContentsPrefix +
                             "...') does not fit: " + error.what());
  }
  return saved;
}

void Replay::restore(Saved saved, bool keep_unsaved_contents) {
  if (saved.rng) rng_ = *saved.rng;
  if (saved.buffer) {
    buffer_ = std::move(saved.buffer);
  } else if (!keep_unsaved_contents) {
    buffer_ =
        spec_.observation_dtype ? std::make_unique<ReplayBuffer>(buffer_config(*spec_.observation_dtype)) : nullptr;
  }
  windows_.clear();
}

}  // namespace concord::algos
