#pragma once

// A listener that is not a rendezvous store, for the tests of a rank's join: it sends 64 KiB of
// 0xff, never answers, answers more than a store would, or hangs up. Header-only.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace concord::test {

// A listener on 127.0.0.1 (a port of the kernel's choosing) that treats each connection as its
// mode says and keeps it open until the listener is destroyed.
class Listener {
 public:
  enum class Mode { kGarbage, kSilent, kReplyAndMore, kHangUp };

  explicit Listener(Mode mode) : mode_(mode) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    socklen_t length = sizeof(address);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    EXPECT_EQ(::listen(fd_, 8), 0);
    thread_ = std::thread([this] { serve(); });
  }
  ~Listener() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    for (int connection : connections_) ::close(connection);
    ::close(fd_);
  }
  int port() const { return port_; }

 private:
  void serve() {
    while (!stop_) {
      const int connection = ::accept(fd_, nullptr, nullptr);
      if (connection < 0) return;
      if (mode_ == Mode::kGarbage) {
        const std::vector<char> garbage(64 * 1024, static_cast<char>(0xff));
        (void)::send(connection, garbage.data(), garbage.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      } else if (mode_ == Mode::kReplyAndMore) {
        const char reply[] = {1, 0, 0, 0};
        (void)::send(connection, reply, sizeof(reply), MSG_NOSIGNAL);
      } else if (mode_ == Mode::kHangUp) {
        ::close(connection);
        continue;
      }
      connections_.push_back(connection);
    }
  }

  Mode mode_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::vector<int> connections_;
  std::thread thread_;
};

}  // namespace concord::test
