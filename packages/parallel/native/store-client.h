// Client side of rank 0's store: Gloo's Store interface over one TCP connection, and the status
// channel through which this rank answers "how many ops of group G have you entered?".
#pragma once

#include <gloo/rendezvous/store.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "wire.h"

namespace rl2 {

class TcpStore : public gloo::rendezvous::Store {
 public:
  /** Connects to host:port, retrying until `connectTimeout` passes. */
  TcpStore(const std::string& host, int port, std::chrono::milliseconds connectTimeout, std::chrono::milliseconds timeout);
  ~TcpStore() override;

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

  /** The keys of `keys` not set yet. */
  std::vector<std::string> missing(const std::vector<std::string>& keys);
  /** Every world rank's answer for `group` (op count, -1 or one of kGone/kNoAnswer/kNeverJoined). */
  std::vector<int64_t> query(const std::string& group);
  /** The address of this host's interface that reaches the store (what other ranks can dial). */
  std::string localAddress() const { return localAddress_; }

 private:
  Message request(uint8_t type, const std::vector<char>& payload, char replyType, std::chrono::milliseconds limit);
  int fd_;
  std::mutex mu_;
  std::chrono::milliseconds timeout_;
  std::string localAddress_;
};

/** A second connection registered as this rank's status channel; a thread answers probes. */
class StatusChannel {
 public:
  StatusChannel(const std::string& host, int port, int rank, std::function<int64_t(const std::string&)> opsEntered);
  ~StatusChannel();

 private:
  int fd_;
  std::thread thread_;
};

}  // namespace rl2
