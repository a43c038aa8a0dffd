#include "concord/policies/runtime/experience_link.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "concord/comm/tensor_description.h"
#include "concord/policies/runtime/message_tags.h"

namespace concord::policies::runtime {
namespace {

using Tags = tags::Experience;
constexpr int64_t kControlSize = 4;

std::string rank_name(int rank) { return "actor rank " + std::to_string(rank); }

// Episodes end at most once per env step of a segment, whose first field is [steps, envs, ...].
int64_t episode_capacity(const std::vector<torch::Tensor>& fields) {
  if (fields.empty() || fields.front().dim() < 2)
    throw std::logic_error("a segment's first field is not [steps, envs, ...]");
  return fields.front().size(0) * fields.front().size(1);
}

}  // namespace

ActorRanks::ActorRanks(comm::Communicator& communicator, Failures failures)
    : communicator_(communicator),
      failures_(std::move(failures)),
      actors_(static_cast<size_t>(communicator.world_size() - 1)) {}

ActorRanks::~ActorRanks() {
  // Ends at once what the requests' destructors would otherwise wait for until the timeout.
  for (Actor& actor : actors_) {
    for (auto& request : actor.pending) request->abort();
  }
}

int64_t ActorRanks::alive_count() const {
  return std::count_if(actors_.begin(), actors_.end(), [](const Actor& actor) { return actor.alive; });
}

bool ActorRanks::any_active() const {
  for (int a = 0; a < size(); ++a) {
    if (active(a)) return true;
  }
  return false;
}

void ActorRanks::drop(int a, const std::string& reason) {
  Actor& actor = actors_[static_cast<size_t>(a)];
  actor.alive = false;
  for (auto& request : actor.pending) request->abort();
  const std::string failed = rank_name(rank(a)) + " failed: " + reason;
  if (failures_.on_failure == "abort") throw std::runtime_error(failed);
  const int64_t left = alive_count();
  if (left == 0) throw std::runtime_error("every actor rank failed; the last, " + failed);
  if (failures_.dropped) failures_.dropped(rank(a), reason, left);
}

bool ActorRanks::reach(int a, const std::function<void(std::vector<std::unique_ptr<comm::Request>>&)>& post) {
  Actor& actor = actors_[static_cast<size_t>(a)];
  if (!actor.alive) return false;
  try {
    post(actor.pending);
    return true;
  } catch (const comm::CommError& error) {
    drop(a, error.what());
    return false;
  }
}

bool ActorRanks::settle(int a, Clock::time_point deadline, const std::string& missed) {
  Actor& actor = actors_[static_cast<size_t>(a)];
  if (!actor.alive) return false;
  const auto moment = std::min<Clock::duration>(std::chrono::seconds(1), failures_.patience / 4);
  deadline = std::max(deadline, Clock::now() + moment);
  try {
    {
      const comm::Watchdog::Armed armed = watchdog_.arm(deadline, [&actor] {
        for (auto& request : actor.pending) request->abort();
      });
      for (auto& request : actor.pending) request->wait();
    }
    actor.pending.clear();
    return true;
  } catch (const comm::CommAborted&) {
    drop(a, missed + " within " + failures_.patience_text + ": stalled, or slower than that");
  } catch (const comm::CommError& error) {
    drop(a, error.what());
  }
  return false;
}

void ActorRanks::receive_descriptions(int64_t fields, const std::string& noun, bool uniform) {
  for (int a = 0; a < size(); ++a) {
    if (!active(a)) continue;
    Actor& actor = actors_[static_cast<size_t>(a)];
    actor.description = torch::empty({fields, 2 + comm::kMaxDescribedDims}, torch::kInt64);
    reach(a, [&](auto& pending) {
      pending.push_back(communicator_.recv_async(actor.description, rank(a), Tags::kDescription));
    });
  }
  const Clock::time_point by = deadline();
  for (int a = 0; a < size(); ++a) {
    if (!active(a) || !settle(a, by, "sent no description of its " + noun)) continue;
    // A wrong description is a bug, not a fault of the actor's process: the run fails.
    Actor& actor = actors_[static_cast<size_t>(a)];
    const std::string wrongly = rank_name(rank(a)) + " described its " + noun + " wrongly";
    actor.layout = comm::allocate_described(actor.description, fields, wrongly);
    const torch::Tensor& first = actor.layout.front();
    for (size_t field = 0; field < (uniform ? actor.layout.size() : 1); ++field) {
      const torch::Tensor& layout = actor.layout[field];
      if (layout.dim() < 2 || layout.size(0) != first.size(0) || layout.size(1) != first.size(1) ||
          first.size(0) == 0 || first.size(1) == 0) {
        throw comm::CommError(wrongly + ": field " + std::to_string(field) +
                              " is not [steps, envs, ...] with the steps and envs of field 0, both above 0");
      }
    }
  }
}

bool ActorRanks::post_segment(int a, Segment& segment) {
  if (!active(a)) return false;
  segment.fields.clear();
  for (const torch::Tensor& buffer : layout(a)) segment.fields.push_back(torch::empty_like(buffer));
  segment.episodes = torch::zeros({1 + 2 * episode_capacity(segment.fields)}, torch::kFloat64);
  return reach(a, [&](auto& pending) {
    for (size_t field = 0; field < segment.fields.size(); ++field) {
      pending.push_back(
          communicator_.recv_async(segment.fields[field], rank(a), Tags::kSegment + static_cast<int>(field)));
    }
    pending.push_back(communicator_.recv_async(segment.episodes, rank(a), Tags::kEpisodes));
  });
}

bool ActorRanks::receive_segment(int a, Segment& segment, Clock::time_point deadline, const std::string& missed) {
  if (!settle(a, deadline, missed)) return false;
  try {
    segment.finished = unpack_episodes(segment.episodes, "it");
  } catch (const std::runtime_error& error) {
    drop(a, error.what());
    return false;
  }
  return true;
}

bool ActorRanks::answer(int a, const Control& control, const std::vector<torch::Tensor>& parameters) {
  const torch::Tensor message = torch::tensor(
      {int64_t{control.go_on ? 1 : 0}, int64_t{control.parameters_follow ? 1 : 0}, control.version, control.step},
      torch::kInt64);
  if (!control.go_on) actors_[static_cast<size_t>(a)].released = true;
  return reach(a, [&](auto& pending) {
    pending.push_back(communicator_.send_async(message, rank(a), Tags::kControl));
    if (!control.parameters_follow) return;
    for (size_t i = 0; i < parameters.size(); ++i) {
      pending.push_back(communicator_.send_async(parameters[i], rank(a), Tags::kParameters + static_cast<int>(i)));
    }
  });
}

LearnerRank::~LearnerRank() {
  try {
    flush();
  } catch (const comm::CommError&) {
    // The learner is gone: nothing is left to deliver.
  }
}

Control LearnerRank::receive(const std::vector<torch::Tensor>& parameters) {
  torch::Tensor message = torch::zeros({kControlSize}, torch::kInt64);
  communicator_.recv(message, 0, Tags::kControl);
  const int64_t* values = message.data_ptr<int64_t>();
  const Control control{values[0] == 1, values[1] == 1, values[2], values[3]};
  if (control.go_on && control.parameters_follow) {
    for (size_t i = 0; i < parameters.size(); ++i) {
      communicator_.recv(parameters[i], 0, Tags::kParameters + static_cast<int>(i));
    }
  }
  return control;
}

void LearnerRank::send(std::vector<torch::Tensor> fields, const FinishedEpisodes& finished) {
  if (static_cast<int>(fields.size()) > Tags::kMaxSegmentFields) {
    throw std::logic_error("a segment of " + std::to_string(fields.size()) + " fields has tags for " +
                           std::to_string(Tags::kMaxSegmentFields) + " only");
  }
  flush();
  if (!described_) {
    communicator_.send(comm::describe_tensors(fields), 0, Tags::kDescription);
    described_ = true;
  }
  in_flight_ = std::move(fields);
  in_flight_.push_back(pack_episodes(finished, episode_capacity(in_flight_)));
  for (size_t field = 0; field + 1 < in_flight_.size(); ++field) {
    sending_.push_back(communicator_.send_async(in_flight_[field], 0, Tags::kSegment + static_cast<int>(field)));
  }
  sending_.push_back(communicator_.send_async(in_flight_.back(), 0, Tags::kEpisodes));
}

void LearnerRank::flush() {
  for (auto& request : sending_) request->wait();
  sending_.clear();
}

}  // namespace concord::policies::runtime
