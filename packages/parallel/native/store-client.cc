#include "store-client.h"

#include <arpa/inet.h>
#include <gloo/common/error.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace rl2 {

static std::string peerName(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof(a);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "127.0.0.1";
  char buf[INET6_ADDRSTRLEN] = {0};
  if (a.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&a)->sin_addr, buf, sizeof(buf));
  } else {
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&a);
    if (IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr)) {
      ::inet_ntop(AF_INET, &a6->sin6_addr.s6_addr[12], buf, sizeof(buf));
    } else {
      ::inet_ntop(AF_INET6, &a6->sin6_addr, buf, sizeof(buf));
    }
  }
  return buf;
}

TcpStore::TcpStore(const std::string& host, int port, std::chrono::milliseconds connectTimeout, std::chrono::milliseconds timeout)
    : fd_(dialTcp(host, port, Clock::now() + connectTimeout)), timeout_(timeout), localAddress_(peerName(fd_)) {}

TcpStore::~TcpStore() { ::close(fd_); }

Message TcpStore::request(uint8_t type, const std::vector<char>& payload, char replyType, std::chrono::milliseconds limit) {
  std::lock_guard<std::mutex> lock(mu_);
  sendMessage(fd_, type, payload);
  Message m = recvMessage(fd_, Clock::now() + limit);
  // 'X': the store refused this rank (rank 0 runs the socket collectives) and says why
  if (m.type == 'X') throw WireError(std::string(m.payload.begin(), m.payload.end()));
  if (m.type != static_cast<uint8_t>(replyType)) throw WireError("unexpected store reply");
  return m;
}

void TcpStore::set(const std::string& key, const std::vector<char>& data) {
  request('S', Writer().str(key).bytes(data).buf, 'K', timeout_);
}

std::vector<char> TcpStore::get(const std::string& key) {
  wait({key}, timeout_);
  Message m = request('G', Writer().str(key).buf, 'V', timeout_);
  Reader r(m.payload);
  if (!r.u32()) GLOO_THROW_IO_EXCEPTION("store key ", key, " vanished");
  return r.bytes();
}

std::vector<std::string> TcpStore::missing(const std::vector<std::string>& keys) {
  Writer w;
  w.u32(static_cast<uint32_t>(keys.size()));
  for (auto& k : keys) w.str(k);
  Message m = request('C', w.buf, 'B', timeout_);
  Reader r(m.payload);
  uint32_t n = r.u32();
  std::vector<std::string> out;
  for (uint32_t i = 0; i < n && i < keys.size(); i++) {
    if (!r.u32()) out.push_back(keys[i]);
  }
  return out;
}

void TcpStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  auto deadline = Clock::now() + timeout;
  auto pause = std::chrono::microseconds(200);
  for (;;) {
    auto left = missing(keys);
    if (left.empty()) return;
    if (Clock::now() >= deadline) {
      std::string names;
      for (auto& k : left) names += (names.empty() ? "" : ", ") + k;
      GLOO_THROW_IO_EXCEPTION("rendezvous timed out after ", timeout.count(), " ms waiting for store keys [", names, "]");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(20000));
  }
}

std::vector<int64_t> TcpStore::query(const std::string& group) {
  Message m = request('Q', Writer().str(group).buf, 'R', std::chrono::milliseconds(10000));
  Reader r(m.payload);
  uint32_t n = r.u32();
  std::vector<int64_t> out(n);
  for (auto& v : out) v = r.i64();
  return out;
}

StatusChannel::StatusChannel(const std::string& host, int port, int rank, std::function<int64_t(const std::string&)> opsEntered)
    : fd_(dialTcp(host, port, Clock::now() + std::chrono::seconds(30))) {
  sendMessage(fd_, 'H', Writer().u32(static_cast<uint32_t>(rank)).buf);
  int fd = fd_;
  thread_ = std::thread([fd, opsEntered] {
    try {
      for (;;) {
        Message m = recvMessage(fd, Clock::time_point::max());
        if (m.type != 'P') continue;
        Reader r(m.payload);
        uint32_t id = r.u32();
        std::string group = r.str();
        sendMessage(fd, 'A', Writer().u32(id).i64(opsEntered(group)).buf);
      }
    } catch (const std::exception&) {
      // store gone or channel shut down: nothing left to answer
    }
  });
}

StatusChannel::~StatusChannel() {
  ::shutdown(fd_, SHUT_RDWR);
  if (thread_.joinable()) thread_.join();
  ::close(fd_);
}

}  // namespace rl2
