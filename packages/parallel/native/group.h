// One process group on Gloo: its rendezvous context and the thread that runs its ops in order.
#pragma once

#include <gloo/context.h>
#include <gloo/transport/device.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "store-client.h"

namespace rl2 {

enum class OpCode { Connect = -1, AllReduce = 0, AllGather = 1, ReduceScatter = 2, Broadcast = 3, Barrier = 4, Send = 5, Recv = 6 };
enum class Reduce { Sum = 0, Max = 1, Avg = 2 };
/** Why an op failed: 0 none, then the error codes the TypeScript side maps. */
enum class Failure { None = 0, Timeout = 1, PeerLost = 2, Rendezvous = 3, Invalid = 4 };

/** A queued collective on caller-owned memory (the caller keeps it alive until `wait`). */
struct Op {
  OpCode code;
  float* in = nullptr;
  size_t inLen = 0;
  float* out = nullptr;
  size_t outLen = 0;
  int arg = 0;  // Reduce, root or peer
  int64_t seq = -1;
  bool done = false;
  Failure failure = Failure::None;
  std::string error;
};

class Group {
 public:
  Group(std::string key, int rank, int size, TcpStore& store, std::shared_ptr<gloo::transport::Device> device,
        std::chrono::milliseconds timeout, std::chrono::milliseconds connectTimeout);
  ~Group();

  /** Queues an op; returns its ticket. Collectives (not Connect) count as entered. */
  uint64_t submit(const Op& op);
  /** Blocks until the op is done and returns it (removed from the group). */
  Op wait(uint64_t ticket);
  /** Ops entered so far (what the status channel reports). */
  int64_t entered() const { return entered_.load(); }
  const std::string& key() const { return key_; }

 private:
  void loop();
  void run(Op& op);
  void connect();
  std::string key_;
  int rank_, size_;
  TcpStore& store_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::chrono::milliseconds timeout_, connectTimeout_;
  std::shared_ptr<gloo::Context> ctx_;
  uint32_t tag_ = 0;
  Failure broken_ = Failure::None;
  std::string brokenWhy_;

  std::mutex mu_;
  std::condition_variable queued_, finished_;
  std::deque<uint64_t> queue_;
  std::map<uint64_t, Op> ops_;
  uint64_t nextTicket_ = 0;
  std::atomic<int64_t> entered_{0};
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace rl2
