// libFuzzer target: the handshake a joining rank makes with the rendezvous store before c10d's
// client sees the address (comm::check_store_handshake), against a peer that sends the input.
//
// Input: its first byte picks whether the peer then hangs up (even) or stays silent (odd, the
// timeout path, with a deadline 1 ms away); the rest is what the peer sends, all of it before the
// handshake starts. The handshake must return only for a store's answer (exactly one byte, 0 or 1)
// and otherwise throw CommError; any other exception, a crash or a hang is a finding.
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "concord/comm/communicator.h"
#include "concord/comm/store_probe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool silent = (data[0] & 1) != 0;
  const uint8_t* reply = data + 1;
  const size_t reply_size = size - 1;
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) std::abort();
  // The socket buffer holds the whole input (libFuzzer's inputs are a few KiB): no writer thread.
  size_t sent = 0;
  while (sent < reply_size) {
    const ssize_t wrote = ::send(ends[1], reply + sent, reply_size - sent, MSG_NOSIGNAL);
    if (wrote <= 0) break;
    sent += static_cast<size_t>(wrote);
  }
  if (!silent) ::shutdown(ends[1], SHUT_WR);
  bool returned = false;
  try {
    concord::comm::check_store_handshake(ends[0], "peer:1",
                                         std::chrono::steady_clock::now() + std::chrono::milliseconds(1));
    returned = true;
  } catch (const concord::comm::CommError&) {
  }
  if (returned && (sent != 1 || reply[0] > 1)) std::abort();
  ::close(ends[0]);
  ::close(ends[1]);
  return 0;
}
