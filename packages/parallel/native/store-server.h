// Rank 0's rendezvous store (see store-server.cc).
#pragma once

#include <cstdint>
#include <thread>

namespace rl2 {

/** Answers of a status query besides a rank's op count (>= 0) or -1 (group not created yet). */
constexpr int64_t kGone = -2;        // its status connection closed: the process ended
constexpr int64_t kNoAnswer = -3;    // connected but did not answer in time
constexpr int64_t kNeverJoined = -4; // never connected to the store

class StoreServer {
 public:
  /** Listens on every interface at `port` (throws WireError when it cannot) and serves on a thread. */
  StoreServer(int port, int worldSize);
  ~StoreServer();

 private:
  void loop();
  int worldSize_;
  int listenFd_ = -1;
  int wakeFds_[2] = {-1, -1};
  std::thread thread_;
};

}  // namespace rl2
