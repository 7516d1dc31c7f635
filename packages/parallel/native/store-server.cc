// The rendezvous store rank 0 hosts at MASTER_ADDR:MASTER_PORT (the role of torch's TCPStore):
// a key-value table for Gloo's rendezvous, plus the status channel every rank keeps open so a
// rank whose collective timed out can ask which ranks reached it. One poll() thread; requests
// are answered at once except queries, which wait (at most kQueryMs) for every rank's answer.
#include "store-server.h"

#include <netinet/in.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>

#include "wire.h"

namespace rl2 {

namespace {
constexpr auto kQueryMs = std::chrono::milliseconds(2000);
/** Where the card of a rank running the socket collectives is left (read by gloo-process-group.ts). */
constexpr const char* kRefusedKey = "rl2/refused";

struct Conn {
  int fd;
  std::vector<char> in;
  int statusRank = -1;
};

struct Query {
  int askerFd;
  std::vector<int64_t> answers;
  int outstanding = 0;
  Clock::time_point deadline;
};
}  // namespace

StoreServer::StoreServer(int port, int worldSize) : worldSize_(worldSize) {
  listenFd_ = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool v6 = listenFd_ >= 0;
  if (!v6) listenFd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listenFd_ < 0) throw WireError(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(listenFd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int rc;
  if (v6) {
    int zero = 0;
    ::setsockopt(listenFd_, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(listenFd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(listenFd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  }
  if (rc != 0 || ::listen(listenFd_, 1024) != 0) {
    std::string why = std::strerror(errno);
    ::close(listenFd_);
    throw WireError(why);
  }
  if (::pipe2(wakeFds_, O_CLOEXEC) != 0) throw WireError(std::string("pipe: ") + std::strerror(errno));
  thread_ = std::thread([this] { loop(); });
}

StoreServer::~StoreServer() {
  char c = 1;
  if (::write(wakeFds_[1], &c, 1) < 0) {
  }
  if (thread_.joinable()) thread_.join();
  ::close(wakeFds_[0]);
  ::close(wakeFds_[1]);
}

void StoreServer::loop() {
  std::map<std::string, std::vector<char>> kv;
  std::vector<Conn> conns;
  std::vector<int> statusFd(worldSize_, -1);
  std::map<uint32_t, Query> queries;
  uint32_t nextQuery = 0;

  auto finishQuery = [&](std::map<uint32_t, Query>::iterator it) {
    Writer w;
    w.u32(static_cast<uint32_t>(it->second.answers.size()));
    for (int64_t v : it->second.answers) w.i64(v);
    try {
      sendMessage(it->second.askerFd, 'R', w.buf);
    } catch (const WireError&) {
    }
    return queries.erase(it);
  };
  auto dropConn = [&](size_t i) {
    Conn& c = conns[i];
    if (c.statusRank >= 0 && statusFd[c.statusRank] == c.fd) {
      statusFd[c.statusRank] = -2;  // gone (-1: never joined)
      for (auto& [id, q] : queries) {
        if (q.answers[c.statusRank] == kNoAnswer) {
          q.answers[c.statusRank] = kGone;
          q.outstanding--;
        }
      }
    }
    for (auto it = queries.begin(); it != queries.end();) it = it->second.askerFd == c.fd ? queries.erase(it) : std::next(it);
    ::close(c.fd);
    conns.erase(conns.begin() + static_cast<long>(i));
  };
  // One request; returns false when the connection must be dropped.
  auto handle = [&](Conn& c, Message& m) {
    Reader r(m.payload);
    switch (m.type) {
      case 'S': {
        std::string key = r.str();
        kv[key] = r.bytes();
        sendMessage(c.fd, 'K', {});
        return true;
      }
      case 'G': {
        auto it = kv.find(r.str());
        Writer w;
        w.u32(it != kv.end());
        w.bytes(it != kv.end() ? it->second : std::vector<char>());
        sendMessage(c.fd, 'V', w.buf);
        return true;
      }
      case 'C': {
        uint32_t n = r.u32();
        Writer w;
        w.u32(n);
        for (uint32_t i = 0; i < n; i++) w.u32(kv.count(r.str()) ? 1 : 0);
        sendMessage(c.fd, 'B', w.buf);
        return true;
      }
      case 'H': {
        int rank = static_cast<int>(r.u32());
        if (rank < 0 || rank >= worldSize_) return false;
        c.statusRank = rank;
        statusFd[rank] = c.fd;
        return true;
      }
      case 'Q': {
        std::string group = r.str();
        uint32_t id = nextQuery++;
        Query q{c.fd, std::vector<int64_t>(worldSize_, -2), 0, Clock::now() + kQueryMs};
        Writer w;
        w.u32(id).str(group);
        for (int k = 0; k < worldSize_; k++) {
          if (statusFd[k] < 0) {
            q.answers[k] = statusFd[k] == -1 ? kNeverJoined : kGone;
            continue;
          }
          try {
            sendMessage(statusFd[k], 'P', w.buf);
            q.answers[k] = kNoAnswer;
            q.outstanding++;
          } catch (const WireError&) {
          }
        }
        auto it = queries.emplace(id, std::move(q)).first;
        if (it->second.outstanding == 0) finishQuery(it);
        return true;
      }
      case 'A': {
        uint32_t id = r.u32();
        int64_t v = r.i64();
        auto it = queries.find(id);
        if (it != queries.end() && c.statusRank >= 0 && it->second.answers[c.statusRank] == kNoAnswer) {
          it->second.answers[c.statusRank] = v;
          if (--it->second.outstanding == 0) finishQuery(it);
        }
        return true;
      }
      default:
        return false;
    }
  };

  for (;;) {
    std::vector<pollfd> fds{{wakeFds_[0], POLLIN, 0}, {listenFd_, POLLIN, 0}};
    for (auto& c : conns) fds.push_back({c.fd, POLLIN, 0});
    int timeout = queries.empty() ? -1 : 50;
    if (::poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) break;
    if (fds[0].revents) break;
    for (auto it = queries.begin(); it != queries.end();) it = Clock::now() >= it->second.deadline ? finishQuery(it) : std::next(it);
    if (fds[1].revents & POLLIN) {
      int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) conns.push_back({fd, {}, -1});
    }
    // conns beyond the polled ones were just accepted; walk backwards so drops keep indices valid
    for (size_t i = fds.size() - 2; i-- > 0;) {
      if (!fds[i + 2].revents) continue;
      Conn& c = conns[i];
      char buf[65536];
      ssize_t n = ::recv(c.fd, buf, sizeof(buf), 0);
      if (n <= 0) {
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        dropConn(i);
        continue;
      }
      c.in.insert(c.in.end(), buf, buf + n);
      if (c.in[0] == '{') {
        // a JSON card: a rank running the socket collectives (peer-mesh.ts). Tell it, and leave
        // its card under kRefusedKey so the Gloo ranks fail at once too, naming it.
        auto eol = std::find(c.in.begin(), c.in.end(), '\n');
        if (eol == c.in.end()) continue;
        kv[kRefusedKey] = std::vector<char>(c.in.begin(), eol);
        const std::string reply = "{\"collectives\":\"gloo\"}\n";
        if (::send(c.fd, reply.data(), reply.size(), MSG_NOSIGNAL) < 0) {
        }
        dropConn(i);
        continue;
      }
      bool ok = true;
      while (ok && c.in.size() >= 5) {
        uint32_t len;
        std::memcpy(&len, c.in.data() + 1, 4);
        if (c.in.size() < 5 + static_cast<size_t>(len)) break;
        Message m;
        m.type = static_cast<uint8_t>(c.in[0]);
        m.payload.assign(c.in.begin() + 5, c.in.begin() + 5 + len);
        c.in.erase(c.in.begin(), c.in.begin() + 5 + len);
        try {
          ok = handle(c, m);
        } catch (const WireError&) {
          ok = false;
        }
      }
      if (!ok) dropConn(i);
    }
  }
  for (auto& c : conns) ::close(c.fd);
  ::close(listenFd_);
}

}  // namespace rl2
