#pragma once

#include <chrono>
#include <string>

namespace concord::comm {

// A checked handshake with the rendezvous store before c10d's client is given the address.
//
// LibTorch 1.13's TCPStore client trusts what it reads: a service at MASTER_ADDR:MASTER_PORT
// that is not a store (or sends bytes unasked) makes it read a length of up to 2^64 and die of
// std::length_error or std::bad_alloc, on a thread of its own where no caller can catch it; a
// process that accepts and never answers holds it past comm.timeout_seconds. So a rank that joins
// first connects a socket of its own, asks the store whether a key exists (the store protocol's
// CHECK query: one byte 4, a count of keys and each key, as uint64 lengths and bytes) and reads
// the one-byte reply (0 ready, 1 not ready) with every step bounded by the deadline, and refuses
// anything else: another reply byte, bytes beyond the reply, a closed connection, or silence.
//
// Throws CommTimeout when nothing listens ("could not reach the rendezvous store at H:P within T s
// ...") or nothing answers before `deadline`, CommError when something else answered ("found no
// rendezvous store at H:P: the service there answered a store query with 0xff ..."); each message
// names the address and reads after "rank R ".
void probe_store(const std::string& host, int port, std::chrono::steady_clock::time_point deadline);

// The handshake on a connected socket `fd` (exposed for the fuzz target, which plays the peer).
void check_store_handshake(int fd, const std::string& where, std::chrono::steady_clock::time_point deadline);

}  // namespace concord::comm
