#include "wire.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

namespace rl2 {

static void writeAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw WireError(std::string("store connection lost (") + std::strerror(errno) + ")");
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

static void readAll(int fd, char* p, size_t n, Clock::time_point deadline) {
  while (n > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) throw WireError("timed out", true);
    pollfd pfd{fd, POLLIN, 0};
    int r = ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (r < 0 && errno != EINTR) throw WireError(std::string("poll failed (") + std::strerror(errno) + ")");
    if (r <= 0) continue;
    ssize_t got = ::recv(fd, p, n, 0);
    if (got == 0) throw WireError("store connection closed");
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw WireError(std::string("store connection lost (") + std::strerror(errno) + ")");
    }
    p += got;
    n -= static_cast<size_t>(got);
  }
}

void sendMessage(int fd, uint8_t type, const std::vector<char>& payload) {
  uint32_t n = static_cast<uint32_t>(payload.size());
  std::vector<char> out;
  out.reserve(5 + payload.size());
  out.push_back(static_cast<char>(type));
  const char* len = reinterpret_cast<const char*>(&n);
  out.insert(out.end(), len, len + 4);
  out.insert(out.end(), payload.begin(), payload.end());
  writeAll(fd, out.data(), out.size());
}

Message recvMessage(int fd, Clock::time_point deadline) {
  char head[5];
  readAll(fd, head, 5, deadline);
  Message m;
  m.type = static_cast<uint8_t>(head[0]);
  uint32_t n;
  std::memcpy(&n, head + 1, 4);
  m.payload.resize(n);
  if (n) readAll(fd, m.payload.data(), n, deadline);
  return m;
}

int dialTcp(const std::string& host, int port, Clock::time_point deadline) {
  std::string last = "timed out";
  while (Clock::now() < deadline) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
    if (rc != 0) {
      last = gai_strerror(rc);
    } else {
      for (addrinfo* a = res; a; a = a->ai_next) {
        int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
          int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          ::freeaddrinfo(res);
          return fd;
        }
        last = std::strerror(errno);
        ::close(fd);
      }
      ::freeaddrinfo(res);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  throw WireError("cannot reach " + host + ":" + std::to_string(port) + " (" + last + ")", true);
}

}  // namespace rl2
