#pragma once

#include <chrono>
#include <memory>

#include "concord/comm/communicator.h"

namespace concord::comm {

struct ThreadGroupState;

// world_size ranks that are threads of one process: communicator(r) is rank r's Communicator,
// to be used by one thread. Collectives and messages go through shared memory with the same
// semantics (ordering, timeouts, errors) as the process backends, so code written against
// Communicator runs on threads in tests and in thread-level policies.
//
//   ThreadGroup group(3);
//   std::thread([&] { auto comm = group.communicator(1); comm->allreduce(t); ... });
class ThreadGroup {
 public:
  explicit ThreadGroup(int world_size, std::chrono::milliseconds timeout = std::chrono::seconds(30));
  ~ThreadGroup();
  int world_size() const;
  // Each rank's communicator may be created once; throws std::invalid_argument otherwise.
  std::unique_ptr<Communicator> communicator(int rank);

 private:
  std::shared_ptr<ThreadGroupState> state_;
};

}  // namespace concord::comm
