#include "concord/comm/listen_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <stdexcept>

namespace concord::comm {
namespace {

// The redirection in force: set before the store starts, read by bind() on LibTorch's threads.
std::atomic<int> redirect_port{0};  // 0: no redirection
std::atomic<bool> redirect_used{false};
std::mutex redirect_mutex;  // guards the address below while it is written and read
bool redirect_ipv6 = false;
in_addr redirect_ipv4_address{};
in6_addr redirect_ipv6_address{};

int system_bind(int fd, const sockaddr* address, socklen_t length) {
  return static_cast<int>(::syscall(SYS_bind, fd, address, length));
}

}  // namespace

ListenOnAddress::ListenOnAddress(uint16_t port, const std::string& address) {
  std::lock_guard<std::mutex> lock(redirect_mutex);
  if (inet_pton(AF_INET, address.c_str(), &redirect_ipv4_address) == 1) {
    redirect_ipv6 = false;
  } else if (inet_pton(AF_INET6, address.c_str(), &redirect_ipv6_address) == 1) {
    redirect_ipv6 = true;
  } else {
    throw std::invalid_argument("cannot listen on '" + address + "': not a numeric IPv4 or IPv6 address");
  }
  redirect_used = false;
  redirect_port = port;
}

ListenOnAddress::~ListenOnAddress() { redirect_port = 0; }

bool ListenOnAddress::redirected() const { return redirect_used.load(); }

namespace {

int bind_redirecting_wildcard(int fd, const sockaddr* address, socklen_t length) {
  const int port = redirect_port.load();
  if (port == 0 || address == nullptr) return system_bind(fd, address, length);
  std::lock_guard<std::mutex> lock(redirect_mutex);
  if (address->sa_family == AF_INET && length >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    sockaddr_in inet{};
    std::memcpy(&inet, address, sizeof(inet));
    if (ntohs(inet.sin_port) == port && inet.sin_addr.s_addr == htonl(INADDR_ANY)) {
      redirect_used = true;
      if (redirect_ipv6) {
        errno = EADDRNOTAVAIL;
        return -1;
      }
      inet.sin_addr = redirect_ipv4_address;
      return system_bind(fd, reinterpret_cast<const sockaddr*>(&inet), sizeof(inet));
    }
  } else if (address->sa_family == AF_INET6 && length >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    sockaddr_in6 inet6{};
    std::memcpy(&inet6, address, sizeof(inet6));
    if (ntohs(inet6.sin6_port) == port && IN6_IS_ADDR_UNSPECIFIED(&inet6.sin6_addr)) {
      redirect_used = true;
      if (redirect_ipv6) {
        inet6.sin6_addr = redirect_ipv6_address;
      } else {
        // ::ffff:a.b.c.d: c10d's dual-stack socket then takes IPv4 connections to that address only.
        std::memset(&inet6.sin6_addr, 0, sizeof(inet6.sin6_addr));
        inet6.sin6_addr.s6_addr[10] = 0xff;
        inet6.sin6_addr.s6_addr[11] = 0xff;
        std::memcpy(&inet6.sin6_addr.s6_addr[12], &redirect_ipv4_address, sizeof(redirect_ipv4_address));
      }
      return system_bind(fd, reinterpret_cast<const sockaddr*>(&inet6), sizeof(inet6));
    }
  }
  return system_bind(fd, address, length);
}

}  // namespace
}  // namespace concord::comm

// The process's bind(): libc's (the system call) except inside a ListenOnAddress. Default
// visibility, so that the executable exports it and LibTorch's calls resolve here.
extern "C" __attribute__((visibility("default"))) int bind(int fd, const sockaddr* address, socklen_t length) noexcept {
  return concord::comm::bind_redirecting_wildcard(fd, address, length);
}
