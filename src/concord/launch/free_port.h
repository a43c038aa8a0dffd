#pragma once

namespace concord::launch {

// A TCP port that nothing on this machine is bound to right now, found by binding port 0 and
// asking the kernel which port it chose. The port is released before returning, so another
// program may take it before rank 0 binds it (torchrun has the same window); it is only a good
// guess for a single-machine run. Throws std::runtime_error if no socket can be bound.
int find_free_port();

}  // namespace concord::launch
