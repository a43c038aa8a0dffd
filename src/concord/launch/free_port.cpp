#include "concord/launch/free_port.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace concord::launch {

int find_free_port() {
  const int socket_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (socket_fd < 0)
    throw std::runtime_error(std::string("cannot open a socket to find a free port: ") + std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  // Rank 0's TCPStore listens on every interface, so the port must be free on the wildcard
  // address; a port free on 127.0.0.1 alone could still be taken on another address.
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  if (bind(socket_fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      getsockname(socket_fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const int error = errno;
    close(socket_fd);
    throw std::runtime_error(std::string("cannot bind a socket to find a free port: ") + std::strerror(error));
  }
  close(socket_fd);
  return ntohs(address.sin_port);
}

}  // namespace concord::launch
