#pragma once

#include <cstdint>
#include <string>

namespace concord::comm {

// LibTorch 1.13's TCPStore server cannot be told where to listen: c10d::detail::Socket::listen
// takes a port and binds the wildcard address (IPv6 "::" with dual stack, else 0.0.0.0), so the
// rendezvous store, whose protocol has no authentication, would accept anyone who can reach the
// machine on any interface. While a ListenOnAddress is alive, a bind() in this process of the
// wildcard address to `port` binds `address` (numeric IPv4 or IPv6) instead: for an IPv4 address
// an IPv6 socket gets its mapped form (::ffff:a.b.c.d, which takes IPv4 connections to that
// address only); for an IPv6 address an IPv4 wildcard bind fails with EADDRNOTAVAIL and c10d keeps
// its IPv6 socket. Rank 0 holds one while it starts the store's server: on loopback for a
// loopback rendezvous, else on its address towards MASTER_ADDR.
//
// It works by defining bind() in the executable, which the dynamic linker prefers over libc's
// for LibTorch's calls: in the `concord` program and the tests. A module loaded into another
// program (the Python extension) does not get that precedence, and its store still listens on
// every interface. One at a time per process; other binds (other ports, specific addresses) pass
// through untouched. Throws std::invalid_argument for an address that is not numeric.
class ListenOnAddress {
 public:
  ListenOnAddress(uint16_t port, const std::string& address);
  ~ListenOnAddress();
  ListenOnAddress(const ListenOnAddress&) = delete;
  ListenOnAddress& operator=(const ListenOnAddress&) = delete;

  // Whether a bind() since construction was redirected: false means this process's bind() is
  // libc's, not ours (see above).
  bool redirected() const;
};

}  // namespace concord::comm
