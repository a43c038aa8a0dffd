#include "concord/comm/store_probe.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "concord/comm/communicator.h"

namespace concord::comm {
namespace {

constexpr uint8_t kCheckQuery = 4;  // c10d's QueryType::CHECK
constexpr uint8_t kReady = 0;       // CheckResponseType::READY
constexpr uint8_t kNotReady = 1;    // CheckResponseType::NOT_READY
constexpr const char* kProbeKey = "/concord/probe";

// Milliseconds left until `deadline`, at least 0, for poll().
int milliseconds_left(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1 << 30));
}

std::string seconds_text(std::chrono::steady_clock::duration duration) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f s", std::chrono::duration<double>(duration).count());
  return text;
}

class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

void append_uint64(std::vector<uint8_t>& bytes, uint64_t value) {
  // c10d sends its sizes in the host's byte order; every rank of a run shares it.
  const auto* raw = reinterpret_cast<const uint8_t*>(&value);
  bytes.insert(bytes.end(), raw, raw + sizeof(value));
}

void send_all(int fd, const std::vector<uint8_t>& bytes, const std::string& where,
              std::chrono::steady_clock::time_point deadline) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    pollfd writable{fd, POLLOUT, 0};
    const int ready = ::poll(&writable, 1, milliseconds_left(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0)
      throw CommTimeout("found no rendezvous store at " + where +
                        ": the service there took no query before the timeout");
    const ssize_t wrote = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (wrote < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      throw CommError("found no rendezvous store at " + where + ": sending the service there a store query failed (" +
                      std::strerror(errno) + ")");
    }
    sent += static_cast<size_t>(wrote);
  }
}

}  // namespace

void check_store_handshake(int fd, const std::string& where, std::chrono::steady_clock::time_point deadline) {
  const auto started = std::chrono::steady_clock::now();
  std::vector<uint8_t> query{kCheckQuery};
  append_uint64(query, 1);
  append_uint64(query, std::strlen(kProbeKey));
  query.insert(query.end(), kProbeKey, kProbeKey + std::strlen(kProbeKey));
  send_all(fd, query, where, deadline);
  uint8_t reply = 0;
  while (true) {
    pollfd readable{fd, POLLIN, 0};
    const int ready = ::poll(&readable, 1, milliseconds_left(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      throw CommTimeout("found no rendezvous store at " + where +
                        ": a process there accepted the connection but did not answer a store query within " +
                        seconds_text(std::chrono::steady_clock::now() - started) +
                        " (comm.timeout_seconds); check MASTER_ADDR/MASTER_PORT");
    }
    const ssize_t got = ::recv(fd, &reply, 1, MSG_DONTWAIT);
    if (got < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (got <= 0) {
      throw CommError("found no rendezvous store at " + where +
                      ": the service there closed the connection instead of answering a store query" +
                      (got < 0 ? std::string(" (") + std::strerror(errno) + ")" : std::string()) +
                      "; check MASTER_ADDR/MASTER_PORT");
    }
    break;
  }
  char byte[8];
  std::snprintf(byte, sizeof(byte), "0x%02x", reply);
  if (reply != kReady && reply != kNotReady) {
    throw CommError("found no rendezvous store at " + where + ": the service there answered a store query with " +
                    byte + " (check MASTER_ADDR/MASTER_PORT)");
  }
  // A store sends nothing it was not asked for: more bytes mean a service that talks on its own.
  uint8_t extra = 0;
  if (::recv(fd, &extra, 1, MSG_DONTWAIT | MSG_PEEK) > 0) {
    throw CommError("found no rendezvous store at " + where +
                    ": the service there sent more than the one-byte answer to a store query (check "
                    "MASTER_ADDR/MASTER_PORT)");
  }
}

void probe_store(const std::string& host, int port, std::chrono::steady_clock::time_point deadline) {
  const std::string where = host + ":" + std::to_string(port);
  const auto started = std::chrono::steady_clock::now();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* resolved = nullptr;
  if (const int failed = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &resolved);
      failed != 0 || resolved == nullptr) {
    throw CommError("MASTER_ADDR '" + host + "' does not resolve: " + ::gai_strerror(failed));
  }
  std::string last_error = "no address";
  // Rank 0 may not listen yet: try every address again until the deadline, as c10d's client does.
  while (true) {
    for (const addrinfo* address = resolved; address != nullptr; address = address->ai_next) {
      Socket socket(::socket(address->ai_family, address->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
      if (socket.fd() < 0) {
        last_error = std::strerror(errno);
        continue;
      }
      int connected = ::connect(socket.fd(), address->ai_addr, address->ai_addrlen);
      if (connected != 0 && errno == EINPROGRESS) {
        pollfd writable{socket.fd(), POLLOUT, 0};
        int ready = 0;
        do {
          ready = ::poll(&writable, 1, milliseconds_left(deadline));
        } while (ready < 0 && errno == EINTR);
        int error = ETIMEDOUT;
        socklen_t length = sizeof(error);
        if (ready > 0) ::getsockopt(socket.fd(), SOL_SOCKET, SO_ERROR, &error, &length);
        connected = error == 0 ? 0 : -1;
        errno = error;
      }
      if (connected != 0) {
        last_error = std::strerror(errno);
        continue;
      }
      try {
        check_store_handshake(socket.fd(), where, deadline);
      } catch (...) {
        ::freeaddrinfo(resolved);
        throw;
      }
      ::freeaddrinfo(resolved);
      return;
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(100, milliseconds_left(deadline))));
  }
  ::freeaddrinfo(resolved);
  throw CommTimeout("could not reach the rendezvous store at " + where + " within " +
                    seconds_text(std::chrono::steady_clock::now() - started) +
                    " (is rank 0 running? check MASTER_ADDR/MASTER_PORT): " + last_error);
}

}  // namespace concord::comm
