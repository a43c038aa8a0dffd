#include "concord/comm/loopback_listen.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace concord::comm {
namespace {

std::atomic<int> loopback_port{0};  // 0: no redirection
std::atomic<bool> loopback_ipv6{false};
std::atomic<bool> loopback_used{false};

int system_bind(int fd, const sockaddr* address, socklen_t length) {
  return static_cast<int>(::syscall(SYS_bind, fd, address, length));
}

}  // namespace

ListenOnLoopback::ListenOnLoopback(uint16_t port, bool ipv6) {
  loopback_used = false;
  loopback_ipv6 = ipv6;
  loopback_port = port;
}

ListenOnLoopback::~ListenOnLoopback() { loopback_port = 0; }

bool ListenOnLoopback::redirected() const { return loopback_used.load(); }

namespace {

int bind_redirecting_wildcard(int fd, const sockaddr* address, socklen_t length) {
  const int port = loopback_port.load();
  if (port == 0 || address == nullptr) return system_bind(fd, address, length);
  if (address->sa_family == AF_INET && length >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    sockaddr_in inet{};
    std::memcpy(&inet, address, sizeof(inet));
    if (ntohs(inet.sin_port) == port && inet.sin_addr.s_addr == htonl(INADDR_ANY)) {
      loopback_used = true;
      if (loopback_ipv6) {
        errno = EADDRNOTAVAIL;
        return -1;
      }
      inet.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      return system_bind(fd, reinterpret_cast<const sockaddr*>(&inet), sizeof(inet));
    }
  } else if (address->sa_family == AF_INET6 && length >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    sockaddr_in6 inet6{};
    std::memcpy(&inet6, address, sizeof(inet6));
    if (ntohs(inet6.sin6_port) == port && IN6_IS_ADDR_UNSPECIFIED(&inet6.sin6_addr)) {
      loopback_used = true;
      if (loopback_ipv6) {
        inet6.sin6_addr = in6addr_loopback;
      } else {
        // ::ffff:127.0.0.1: c10d's dual-stack socket then takes IPv4 connections to 127.0.0.1 only.
        std::memset(&inet6.sin6_addr, 0, sizeof(inet6.sin6_addr));
        inet6.sin6_addr.s6_addr[10] = 0xff;
        inet6.sin6_addr.s6_addr[11] = 0xff;
        const uint32_t loopback = htonl(INADDR_LOOPBACK);
        std::memcpy(&inet6.sin6_addr.s6_addr[12], &loopback, sizeof(loopback));
      }
      return system_bind(fd, reinterpret_cast<const sockaddr*>(&inet6), sizeof(inet6));
    }
  }
  return system_bind(fd, address, length);
}

}  // namespace
}  // namespace concord::comm

// The process's bind(): libc's (the system call) except inside a ListenOnLoopback. Default
// visibility, so that the executable exports it and LibTorch's calls resolve here.
extern "C" __attribute__((visibility("default"))) int bind(int fd, const sockaddr* address, socklen_t length) noexcept {
  return concord::comm::bind_redirecting_wildcard(fd, address, length);
}
