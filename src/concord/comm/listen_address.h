#pragma once

#include <cstdint>

namespace concord::comm {

// LibTorch 1.13's TCPStore server cannot be told where to listen: c10d::detail::Socket::listen
// takes a port and binds the wildcard address (IPv6 "::" with dual stack, else 0.0.0.0), so the
// rendezvous store, whose protocol has no authentication, would accept anyone who can reach the
// machine even when every rank runs on it. While a ListenOnLoopback is alive, a bind() in this
// process of the wildcard address to `port` binds the loopback address instead: 127.0.0.1 (for an
// IPv6 socket ::ffff:127.0.0.1, which takes IPv4 connections to 127.0.0.1 only), or ::1 for an
// IPv6 rendezvous (then an IPv4 wildcard bind fails with EADDRNOTAVAIL and c10d keeps its IPv6
// socket). rank 0 holds one while it starts the store's server.
//
// It works by defining bind() in the executable, which the dynamic linker prefers over libc's
// for LibTorch's calls: in the `concord` program and the tests. A module loaded into another
// program (the Python extension) does not get that precedence, and its store still listens on
// every interface. One at a time per process; other binds (other ports, specific addresses) pass
// through untouched.
class ListenOnLoopback {
 public:
  ListenOnLoopback(uint16_t port, bool ipv6);
  ~ListenOnLoopback();
  ListenOnLoopback(const ListenOnLoopback&) = delete;
  ListenOnLoopback& operator=(const ListenOnLoopback&) = delete;

  // Whether a bind() since construction was redirected to loopback: false means this process's
  // bind() is libc's, not ours (see above).
  bool redirected() const;
};

}  // namespace concord::comm
