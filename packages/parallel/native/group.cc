// Each group runs its ops on its own thread, in the order they were submitted (every member
// submits the same sequence, so the ops match up); callers block in `wait` or carry on and wait
// later (iallGather). The context connects lazily on the first op, so creating sub-groups in
// any order never blocks. After a failure the group is broken: later ops fail at once.
#include "group.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/types.h>

#include <cstring>

namespace rl2 {

namespace {
constexpr uint8_t kReduceScatterPrefix = 0xe1;
// Gloo's ring all-reduce sends at most this much per message (its default, and torch's, is
// 1 MiB). 4 MiB halves the messages, wake-ups and send/recv handshakes of the 32 MiB all-reduce
// and cost 5-15% less CPU time per op (user + sys over the ranks) than 1 MiB on 2 and 4 ranks
// on loopback (2-core AMD EPYC, 2026-12-02). Buffers up to 2 MiB per rank (4 MiB on 2 ranks,
// 8 MiB on 4) are unchanged: each rank's chunk is split in at least 2 segments anyway.
constexpr size_t kAllReduceSegmentBytes = 4 << 20;
constexpr uint8_t kSendRecvPrefix = 0xe2;

using ReduceFn = void (*)(void*, const void*, const void*, size_t);
ReduceFn reduceFn(Reduce r) {
  return r == Reduce::Max ? static_cast<ReduceFn>(&gloo::max<float>) : static_cast<ReduceFn>(&gloo::sum<float>);
}

void scale(float* p, size_t n, float by) {
  for (size_t i = 0; i < n; i++) p[i] *= by;
}

Failure classify(const std::string& what) {
  if (what.find("Timed out") != std::string::npos || what.find("timed out") != std::string::npos) return Failure::Timeout;
  return Failure::PeerLost;
}

/**
 * Ring reduce-scatter (Patarasuk & Yuan 2009): in step s rank r sends its running sum of chunk
 * r-s-1 to the right and adds the left's running sum of chunk r-s-2 to its own values; after
 * size-1 steps it holds the full reduction of chunk r. `in` is left untouched.
 */
void ringReduceScatter(gloo::Context& ctx, const float* in, float* out, size_t chunk, ReduceFn fn, uint32_t tag,
                       std::chrono::milliseconds timeout) {
  const int n = ctx.size, r = ctx.rank;
  if (n == 1) {
    std::memcpy(out, in, chunk * sizeof(float));
    return;
  }
  const int right = (r + 1) % n, left = (r - 1 + n) % n;
  std::vector<float> acc(chunk), got(chunk);
  const uint64_t slot = gloo::Slot::build(kReduceScatterPrefix, tag);
  const float* sendFrom = in + static_cast<size_t>((r - 1 + n) % n) * chunk;
  for (int s = 0; s < n - 1; s++) {
    const size_t into = static_cast<size_t>((r - s - 2 + 2 * n) % n);
    auto recvBuf = ctx.createUnboundBuffer(got.data(), chunk * sizeof(float));
    auto sendBuf = ctx.createUnboundBuffer(const_cast<float*>(sendFrom), chunk * sizeof(float));
    recvBuf->recv(left, slot);
    sendBuf->send(right, slot);
    recvBuf->waitRecv(timeout);
    sendBuf->waitSend(timeout);
    float* dst = s == n - 2 ? out : acc.data();
    fn(dst, got.data(), in + into * chunk, chunk);
    sendFrom = dst;
  }
}
}  // namespace

Group::Group(std::string key, int rank, int size, TcpStore& store, std::shared_ptr<gloo::transport::Device> device,
             std::chrono::milliseconds timeout, std::chrono::milliseconds connectTimeout)
    : key_(std::move(key)), rank_(rank), size_(size), store_(store), device_(std::move(device)), timeout_(timeout),
      connectTimeout_(connectTimeout) {
  thread_ = std::thread([this] { loop(); });
}

Group::~Group() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  queued_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (ctx_) ctx_->closeConnections();
}

uint64_t Group::submit(const Op& op) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t t = nextTicket_++;
  Op& o = ops_[t] = op;
  if (op.code != OpCode::Connect) o.seq = entered_.fetch_add(1);
  queue_.push_back(t);
  queued_.notify_one();
  return t;
}

Op Group::wait(uint64_t ticket) {
  std::unique_lock<std::mutex> lock(mu_);
  finished_.wait(lock, [&] { return ops_.at(ticket).done; });
  Op o = ops_.at(ticket);
  ops_.erase(ticket);
  return o;
}

void Group::loop() {
  for (;;) {
    Op op;
    uint64_t t;
    {
      std::unique_lock<std::mutex> lock(mu_);
      queued_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      t = queue_.front();
      queue_.pop_front();
      op = ops_.at(t);
    }
    run(op);
    {
      std::lock_guard<std::mutex> lock(mu_);
      op.done = true;
      ops_[t] = op;
    }
    finished_.notify_all();
  }
}

void Group::connect() {
  gloo::rendezvous::PrefixStore prefixed(key_, store_);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank_, size_);
  ctx->setTimeout(connectTimeout_);
  try {
    ctx->connectFullMesh(prefixed, device_);
  } catch (const std::exception& e) {
    std::vector<std::string> keys;
    for (int k = 0; k < size_; k++) keys.push_back(key_ + "/" + std::to_string(k));
    std::string who;
    try {
      for (auto& k : store_.missing(keys)) who += (who.empty() ? "" : ", ") + k.substr(key_.size() + 1);
    } catch (const std::exception&) {
    }
    broken_ = Failure::Rendezvous;
    brokenWhy_ = who.empty() ? std::string("connecting the group failed: ") + e.what()
                             : "group ranks [" + who + "] never joined it within " + std::to_string(connectTimeout_.count()) + " ms";
    return;
  }
  ctx->setTimeout(timeout_);
  ctx_ = ctx;
}

void Group::run(Op& op) {
  if (!ctx_ && broken_ == Failure::None) connect();
  if (broken_ != Failure::None) {
    op.failure = broken_;
    op.error = brokenWhy_;
    return;
  }
  if (op.code == OpCode::Connect) return;
  gloo::Context& ctx = *ctx_;
  const uint32_t tag = tag_++;
  try {
    switch (op.code) {
      case OpCode::AllReduce: {
        gloo::AllreduceOptions o(ctx_);
        o.setOutput(op.in, op.inLen);
        o.setReduceFunction(reduceFn(static_cast<Reduce>(op.arg)));
        o.setTag(tag);
        o.setMaxSegmentSize(kAllReduceSegmentBytes);
        gloo::allreduce(o);
        if (static_cast<Reduce>(op.arg) == Reduce::Avg) scale(op.in, op.inLen, 1.0f / static_cast<float>(size_));
        break;
      }
      case OpCode::AllGather: {
        gloo::AllgatherOptions o(ctx_);
        o.setInput(op.in, op.inLen);
        o.setOutput(op.out, op.outLen);
        o.setTag(tag);
        gloo::allgather(o);
        break;
      }
      case OpCode::ReduceScatter: {
        ringReduceScatter(ctx, op.in, op.out, op.outLen, reduceFn(static_cast<Reduce>(op.arg)), tag, timeout_);
        if (static_cast<Reduce>(op.arg) == Reduce::Avg) scale(op.out, op.outLen, 1.0f / static_cast<float>(size_));
        break;
      }
      case OpCode::Broadcast: {
        gloo::BroadcastOptions o(ctx_);
        o.setOutput(op.in, op.inLen);
        o.setRoot(op.arg);
        o.setTag(tag);
        gloo::broadcast(o);
        break;
      }
      case OpCode::Barrier: {
        gloo::BarrierOptions o(ctx_);
        o.setTag(tag);
        gloo::barrier(o);
        break;
      }
      case OpCode::Send: {
        auto buf = ctx.createUnboundBuffer(op.in, op.inLen * sizeof(float));
        buf->send(op.arg, gloo::Slot::build(kSendRecvPrefix, 0));
        buf->waitSend(timeout_);
        break;
      }
      case OpCode::Recv: {
        auto buf = ctx.createUnboundBuffer(op.in, op.inLen * sizeof(float));
        buf->recv(op.arg, gloo::Slot::build(kSendRecvPrefix, 0));
        buf->waitRecv(timeout_);
        break;
      }
      default:
        op.failure = Failure::Invalid;
        op.error = "unknown op";
        return;
    }
  } catch (const std::exception& e) {
    op.failure = classify(e.what());
    op.error = e.what();
    broken_ = op.failure;
    brokenWhy_ = std::string("an earlier op of this group failed: ") + e.what();
  }
}

}  // namespace rl2
