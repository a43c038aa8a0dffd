#include "concord/algos/sequence_replay.h"

#include <ATen/ops/randint.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/zeros.h>

#include <limits>
#include <stdexcept>
#include <utility>

#include "concord/core/torch_thread.h"

namespace concord::algos {
namespace {

uint64_t seed_from_torch() {
  const at::Tensor draw =
      at::randint(std::numeric_limits<int64_t>::max(), {1}, core::thread_generator(at::kCPU), at::kLong);
  return static_cast<uint64_t>(draw.item<int64_t>());
}

SequenceReplaySpec checked(SequenceReplaySpec spec) {
  const std::string& owner = spec.owner;
  if (spec.capacity < 1) throw std::invalid_argument(owner + ": the sequence replay's capacity must be >= 1");
  if (spec.burn_in < 0) throw std::invalid_argument(owner + ": burn_in must be >= 0");
  if (spec.trace < 1) throw std::invalid_argument(owner + ": the learned steps per sequence must be >= 1");
  if (spec.n_step < 1) throw std::invalid_argument(owner + ": n_step must be >= 1");
  if (spec.num_actions < 1) throw std::invalid_argument(owner + ": needs discrete actions");
  if (spec.state_shapes.empty()) throw std::invalid_argument(owner + ": a sequence replay needs a recurrent state");
  return spec;
}

const at::Tensor& field(const TensorMap& step, const std::string& name, const std::string& owner) {
  const auto found = step.find(name);
  if (found == step.end() || !found->second.defined()) {
    throw std::invalid_argument(owner + ": the step has no '" + name + "'" +
                                (name.rfind(kTransitionStatePrefix, 0) == 0
                                     ? " (an agent with memory needs its state collected with every step)"
                                     : ""));
  }
  return found->second;
}

}  // namespace

SequenceReplay::SequenceReplay(SequenceReplaySpec spec) : spec_(checked(std::move(spec))), rng_(seed_from_torch()) {}

SequenceReplay::~SequenceReplay() = default;

ReplayBuffer& SequenceReplay::buffer_for(at::ScalarType observation_dtype) {
  if (buffer_) return *buffer_;
  const int64_t steps = spec_.steps();
  std::vector<int64_t> observations{steps + 1};
  observations.insert(observations.end(), spec_.observation_shape.begin(), spec_.observation_shape.end());
  ReplayBufferConfig config;
  config.capacity = spec_.capacity;
  config.prioritized = spec_.prioritized;
  config.alpha = spec_.priority_alpha;
  config.fields = {
      {sequence_field::kObservations, {observations, observation_dtype}},
      {sequence_field::kActions, {{steps}, at::kLong}},
      {sequence_field::kRewards, {{steps}, at::kFloat}},
      {sequence_field::kValid, {{steps}, at::kFloat}},
      {sequence_field::kTerminated, {{steps}, at::kFloat}},
      {sequence_field::kStarts, {{steps + 1}, at::kFloat}},
  };
  for (const auto& [name, shape] : spec_.state_shapes) {
    config.fields[sequence_field::kStatePrefix + name] = {shape, at::kFloat};
  }
  buffer_ = std::make_unique<ReplayBuffer>(std::move(config));
  return *buffer_;
}

void SequenceReplay::add(const TensorMap& step, int stream) {
  const std::string& owner = spec_.owner;
  const at::Tensor observations = field(step, transition::kObservations, owner).cpu();
  const at::Tensor actions = field(step, transition::kActions, owner).to(at::kCPU, at::kLong).contiguous();
  const at::Tensor rewards = field(step, transition::kRewards, owner).to(at::kCPU, at::kFloat).contiguous();
  const at::Tensor terminated = field(step, transition::kTerminated, owner).to(at::kCPU, at::kFloat).contiguous();
  const at::Tensor truncated = field(step, transition::kTruncated, owner).to(at::kCPU, at::kFloat).contiguous();
  const at::Tensor next = field(step, transition::kNextObservations, owner).cpu();
  const int64_t batch = observations.size(0);
  std::map<std::string, at::Tensor> states;
  for (const auto& [name, shape] : spec_.state_shapes) {
    at::Tensor state = field(step, kTransitionStatePrefix + name, owner).to(at::kCPU, at::kFloat);
    std::vector<int64_t> expected{batch};
    expected.insert(expected.end(), shape.begin(), shape.end());
    if (state.sizes() != at::IntArrayRef(expected)) {
      throw std::invalid_argument(owner + ": state '" + name +
                                  "' must hold one row of the network's state per env of the step");
    }
    states[name] = std::move(state);
  }
  std::vector<int64_t> observation_rows{batch};
  observation_rows.insert(observation_rows.end(), spec_.observation_shape.begin(), spec_.observation_shape.end());
  if (observations.sizes() != at::IntArrayRef(observation_rows) || next.sizes() != observations.sizes()) {
    throw std::invalid_argument(owner + ": observations do not have the env's shape");
  }
  for (const at::Tensor* rows : {&actions, &rewards, &terminated, &truncated}) {
    if (rows->dim() != 1 || rows->size(0) != batch) {
      throw std::invalid_argument(owner + ": the step's fields disagree on the number of envs");
    }
  }
  const int64_t* action = actions.data_ptr<int64_t>();
  for (int64_t b = 0; b < batch; ++b) {
    if (action[b] < 0 || action[b] >= spec_.num_actions) {
      throw std::invalid_argument(owner + ": action " + std::to_string(action[b]) + " is outside [0, " +
                                  std::to_string(spec_.num_actions) + ")");
    }
  }
  std::vector<Episode>& episodes = episodes_[stream];
  if (episodes.empty()) episodes.resize(static_cast<size_t>(batch));
  if (static_cast<int64_t>(episodes.size()) != batch) {
    throw std::invalid_argument(owner + ": stream " + std::to_string(stream) + " had " +
                                std::to_string(episodes.size()) + " envs, this step has " + std::to_string(batch));
  }
  ReplayBuffer& buffer = buffer_for(observations.scalar_type());
  const float* reward = rewards.data_ptr<float>();
  const float* terminal = terminated.data_ptr<float>();
  const float* cut = truncated.data_ptr<float>();
  const int64_t steps = spec_.steps();
  std::vector<TensorMap> ready;
  for (int64_t b = 0; b < batch; ++b) {
    Episode& episode = episodes[static_cast<size_t>(b)];
    Step recorded;
    recorded.observation = observations[b].clone();
    recorded.action = action[b];
    recorded.reward = reward[b];
    for (const auto& [name, state] : states) recorded.state[name] = state[b].clone();
    episode.steps.push_back(std::move(recorded));
    const int64_t last = episode.position++;  // this step's episode position
    const bool ended = terminal[b] > 0.0f || cut[b] > 0.0f;
    // Store every window this step completes: those whose last step it is, and at the episode's
    // end every window whose learned steps begin by it.
    while (true) {
      const int64_t k = episode.next_window;
      const int64_t start = k * spec_.trace - spec_.burn_in;
      if (!(start + steps - 1 <= last || (ended && k * spec_.trace <= last))) break;
      ready.push_back(window(episode, k, next[b], terminal[b] > 0.0f));
      ++episode.next_window;
    }
    if (ended) {
      episode = Episode{};
      continue;
    }
    // Drop the steps no later window reaches back to.
    const int64_t keep_from = episode.next_window * spec_.trace - spec_.burn_in;
    while (!episode.steps.empty() && episode.base < keep_from) {
      episode.steps.pop_front();
      ++episode.base;
    }
  }
  if (!ready.empty()) {
    TensorMap rows;
    for (const auto& [name, ignored] : ready.front()) {
      std::vector<at::Tensor> parts;
      parts.reserve(ready.size());
      for (const TensorMap& one : ready) parts.push_back(one.at(name));
      rows[name] = at::stack(parts);
    }
    buffer.add(rows);
  }
}

TensorMap SequenceReplay::window(const Episode& episode, int64_t k, const at::Tensor& bootstrap,
                                 bool terminated) const {
  const int64_t steps = spec_.steps();
  const int64_t start = k * spec_.trace - spec_.burn_in;  // the episode position of window position 0
  const int64_t last = episode.position - 1;              // the episode's last recorded step
  std::vector<int64_t> observation_shape{steps + 1};
  observation_shape.insert(observation_shape.end(), spec_.observation_shape.begin(), spec_.observation_shape.end());
  at::Tensor observations = at::zeros(observation_shape, bootstrap.options());
  at::Tensor actions = at::zeros({steps}, at::kLong);
  at::Tensor rewards = at::zeros({steps}, at::kFloat);
  at::Tensor valid = at::zeros({steps}, at::kFloat);
  at::Tensor terminal = at::zeros({steps}, at::kFloat);
  at::Tensor starts = at::zeros({steps + 1}, at::kFloat);
  int64_t* action = actions.data_ptr<int64_t>();
  float* reward = rewards.data_ptr<float>();
  float* is_valid = valid.data_ptr<float>();
  for (int64_t i = 0; i <= steps; ++i) {
    const int64_t position = start + i;
    if (position < 0) continue;
    if (position == 0) starts[i] = 1.0f;
    if (position <= last && i < steps) {
      const Step& step = episode.steps[static_cast<size_t>(position - episode.base)];
      observations[i].copy_(step.observation);
      action[i] = step.action;
      reward[i] = step.reward;
      is_valid[i] = 1.0f;
      if (position == last && terminated) terminal[i] = 1.0f;
    } else if (position == last + 1) {
      observations[i].copy_(bootstrap);
      break;
    }
  }
  TensorMap row{{sequence_field::kObservations, observations}, {sequence_field::kActions, actions},
                {sequence_field::kRewards, rewards},           {sequence_field::kValid, valid},
                {sequence_field::kTerminated, terminal},       {sequence_field::kStarts, starts}};
  for (const auto& [name, shape] : spec_.state_shapes) {
    // Before the episode's first observation the state is the initial one.
    row[sequence_field::kStatePrefix + name] =
        start <= 0 ? at::zeros(shape, at::kFloat)
                   : episode.steps[static_cast<size_t>(start - episode.base)].state.at(name);
  }
  return row;
}

ReplaySample SequenceReplay::sample(int64_t batch_size, double beta) {
  if (!buffer_) throw std::invalid_argument(spec_.owner + ": the sequence replay is empty");
  return buffer_->sample(batch_size, rng_, beta);
}

void SequenceReplay::update_priorities(const at::Tensor& indices, const at::Tensor& priorities) {
  if (buffer_) buffer_->update_priorities(indices, priorities);
}

int64_t SequenceReplay::size() const { return buffer_ ? buffer_->size() : 0; }

void SequenceReplay::clear() {
  buffer_.reset();
  episodes_.clear();
}

}  // namespace concord::algos
