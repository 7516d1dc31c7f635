// Framing of the rendezvous store protocol (store-server.cc <-> store-client.cc), one message:
// [u8 type][u32 payload bytes][payload], little endian. Payload fields: strings as u32 length +
// bytes, integers fixed width. Blocking helpers with a deadline; a closed or timed-out socket
// throws WireError.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace rl2 {

struct WireError : std::runtime_error {
  bool timedOut;
  WireError(const std::string& what, bool timedOut = false) : std::runtime_error(what), timedOut(timedOut) {}
};

using Clock = std::chrono::steady_clock;

struct Message {
  uint8_t type = 0;
  std::vector<char> payload;
};

/** Appends fields to a payload. */
struct Writer {
  std::vector<char> buf;
  Writer& u32(uint32_t v) {
    const char* p = reinterpret_cast<const char*>(&v);
    buf.insert(buf.end(), p, p + 4);
    return *this;
  }
  Writer& i64(int64_t v) {
    const char* p = reinterpret_cast<const char*>(&v);
    buf.insert(buf.end(), p, p + 8);
    return *this;
  }
  Writer& str(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    buf.insert(buf.end(), s.begin(), s.end());
    return *this;
  }
  Writer& bytes(const std::vector<char>& b) {
    u32(static_cast<uint32_t>(b.size()));
    buf.insert(buf.end(), b.begin(), b.end());
    return *this;
  }
};

/** Reads fields of a payload; throws WireError on a short payload. */
struct Reader {
  const std::vector<char>& buf;
  size_t at = 0;
  explicit Reader(const std::vector<char>& b) : buf(b) {}
  void need(size_t n) {
    if (at + n > buf.size()) throw WireError("malformed store message");
  }
  uint32_t u32() {
    need(4);
    uint32_t v;
    std::memcpy(&v, buf.data() + at, 4);
    at += 4;
    return v;
  }
  int64_t i64() {
    need(8);
    int64_t v;
    std::memcpy(&v, buf.data() + at, 8);
    at += 8;
    return v;
  }
  std::string str() {
    uint32_t n = u32();
    need(n);
    std::string s(buf.data() + at, n);
    at += n;
    return s;
  }
  std::vector<char> bytes() {
    uint32_t n = u32();
    need(n);
    std::vector<char> b(buf.data() + at, buf.data() + at + n);
    at += n;
    return b;
  }
};

/** Whole-message send; throws on a closed socket. */
void sendMessage(int fd, uint8_t type, const std::vector<char>& payload);
/** Blocks until one whole message arrived or `deadline` passed (then WireError with timedOut). */
Message recvMessage(int fd, Clock::time_point deadline);

/** Connect a TCP socket to host:port, retrying until `deadline`; throws WireError naming the target. */
int dialTcp(const std::string& host, int port, Clock::time_point deadline);

}  // namespace rl2
