// N-API surface of rl2_gloo.node (loaded by src/comm/gloo-addon.ts). Synchronous calls: the
// collectives themselves run on each group's thread (group.cc); `wait` blocks the caller until
// one is done, which is what the blocking ProcessGroup needs inside tfjs gradient functions.
// Buffers are the caller's Float32Arrays, read and written in place (no copies); a reference
// keeps each one alive from `submit` to `wait`.
#include <gloo/config.h>
#include <gloo/transport/tcp/device.h>
#include <node_api.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "group.h"
#include "store-client.h"
#include "store-server.h"

namespace {

using namespace rl2;

constexpr int kAbi = 1;

struct Runtime {
  std::unique_ptr<StoreServer> server;
  std::unique_ptr<TcpStore> store;
  std::unique_ptr<StatusChannel> status;
  std::shared_ptr<gloo::transport::Device> device;
  std::chrono::milliseconds timeout{300000}, connectTimeout{300000};
  std::mutex groupsMu;
  std::vector<Group*> groups;
  std::map<std::string, Group*> byKey;
  std::map<std::pair<int, uint64_t>, std::vector<napi_ref>> held;  // JS thread only
};
// Never destroyed: group and transport threads may still run while the process exits.
Runtime* rt = new Runtime();

#define CHECK(call)                                         \
  do {                                                      \
    if ((call) != napi_ok) {                                \
      napi_throw_error(env, nullptr, "rl2_gloo: " #call);   \
      return nullptr;                                       \
    }                                                       \
  } while (0)

napi_value fail(napi_env env, const std::string& msg) {
  napi_throw_error(env, nullptr, msg.c_str());
  return nullptr;
}

bool args(napi_env env, napi_callback_info info, size_t want, napi_value* argv) {
  size_t argc = want;
  if (napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) != napi_ok || argc < want) {
    napi_throw_type_error(env, nullptr, "rl2_gloo: too few arguments");
    return false;
  }
  return true;
}

int64_t num(napi_env env, napi_value v) {
  double d = 0;
  napi_get_value_double(env, v, &d);
  return static_cast<int64_t>(d);
}

std::string str(napi_env env, napi_value v) {
  size_t n = 0;
  napi_get_value_string_utf8(env, v, nullptr, 0, &n);
  std::string s(n, '\0');
  napi_get_value_string_utf8(env, v, s.data(), n + 1, &n);
  return s;
}

napi_value makeStr(napi_env env, const std::string& s) {
  napi_value v;
  napi_create_string_utf8(env, s.data(), s.size(), &v);
  return v;
}

napi_value makeNum(napi_env env, double d) {
  napi_value v;
  napi_create_double(env, d, &v);
  return v;
}

bool floats(napi_env env, napi_value v, float** data, size_t* len) {
  bool is = false;
  napi_is_typedarray(env, v, &is);
  napi_typedarray_type type;
  void* p = nullptr;
  if (!is || napi_get_typedarray_info(env, v, &type, len, &p, nullptr, nullptr) != napi_ok || type != napi_float32_array) {
    napi_throw_type_error(env, nullptr, "rl2_gloo: expected a Float32Array");
    return false;
  }
  *data = static_cast<float*>(p);
  return true;
}

// host(port, worldSize): rank 0 serves the store at MASTER_PORT.
napi_value Host(napi_env env, napi_callback_info info) {
  napi_value a[2];
  if (!args(env, info, 2, a)) return nullptr;
  try {
    rt->server = std::make_unique<StoreServer>(static_cast<int>(num(env, a[0])), static_cast<int>(num(env, a[1])));
  } catch (const std::exception& e) {
    return fail(env, e.what());
  }
  return nullptr;
}

// connect(host, port, rank, timeoutMs, rendezvousTimeoutMs, ifaceAddr): store client, status
// channel and the TCP device; returns the local address the device listens on.
napi_value Connect(napi_env env, napi_callback_info info) {
  napi_value a[6];
  if (!args(env, info, 6, a)) return nullptr;
  std::string host = str(env, a[0]);
  int port = static_cast<int>(num(env, a[1]));
  int rank = static_cast<int>(num(env, a[2]));
  rt->timeout = std::chrono::milliseconds(num(env, a[3]));
  rt->connectTimeout = std::chrono::milliseconds(num(env, a[4]));
  std::string iface = str(env, a[5]);
  try {
    rt->store = std::make_unique<TcpStore>(host, port, rt->connectTimeout, rt->connectTimeout);
    rt->status = std::make_unique<StatusChannel>(host, port, rank, [](const std::string& key) -> int64_t {
      std::lock_guard<std::mutex> lock(rt->groupsMu);
      auto it = rt->byKey.find(key);
      return it == rt->byKey.end() ? -1 : it->second->entered();
    });
    gloo::transport::tcp::attr attr;
    attr.hostname = iface.empty() ? rt->store->localAddress() : iface;
    rt->device = gloo::transport::tcp::CreateDevice(attr);
    return makeStr(env, attr.hostname);
  } catch (const std::exception& e) {
    return fail(env, e.what());
  }
}

napi_value StoreSet(napi_env env, napi_callback_info info) {
  napi_value a[2];
  if (!args(env, info, 2, a)) return nullptr;
  std::string v = str(env, a[1]);
  try {
    rt->store->set(str(env, a[0]), std::vector<char>(v.begin(), v.end()));
  } catch (const std::exception& e) {
    return fail(env, e.what());
  }
  return nullptr;
}

napi_value StoreGet(napi_env env, napi_callback_info info) {
  napi_value a[1];
  if (!args(env, info, 1, a)) return nullptr;
  try {
    auto v = rt->store->get(str(env, a[0]));
    return makeStr(env, std::string(v.begin(), v.end()));
  } catch (const std::exception& e) {
    return fail(env, e.what());
  }
}

// storeMissing(keys): the keys not set yet.
napi_value StoreMissing(napi_env env, napi_callback_info info) {
  napi_value a[1];
  if (!args(env, info, 1, a)) return nullptr;
  uint32_t n = 0;
  CHECK(napi_get_array_length(env, a[0], &n));
  std::vector<std::string> keys;
  for (uint32_t i = 0; i < n; i++) {
    napi_value k;
    CHECK(napi_get_element(env, a[0], i, &k));
    keys.push_back(str(env, k));
  }
  try {
    auto left = rt->store->missing(keys);
    napi_value out;
    CHECK(napi_create_array_with_length(env, left.size(), &out));
    for (size_t i = 0; i < left.size(); i++) CHECK(napi_set_element(env, out, static_cast<uint32_t>(i), makeStr(env, left[i])));
    return out;
  } catch (const std::exception& e) {
    return fail(env, e.what());
  }
}

// group(key, groupRank, groupSize): the group's id (the same key returns the same group).
napi_value MakeGroup(napi_env env, napi_callback_info info) {
  napi_value a[3];
  if (!args(env, info, 3, a)) return nullptr;
  if (!rt->device) return fail(env, "rl2_gloo: connect() first");
  std::string key = str(env, a[0]);
  std::lock_guard<std::mutex> lock(rt->groupsMu);
  auto it = rt->byKey.find(key);
  if (it == rt->byKey.end()) {
    auto* g = new Group(key, static_cast<int>(num(env, a[1])), static_cast<int>(num(env, a[2])), *rt->store, rt->device, rt->timeout,
                        rt->connectTimeout);
    rt->groups.push_back(g);
    it = rt->byKey.emplace(key, g).first;
  }
  for (size_t i = 0; i < rt->groups.size(); i++) {
    if (rt->groups[i] == it->second) return makeNum(env, static_cast<double>(i));
  }
  return nullptr;
}

Group* groupAt(napi_env env, napi_value v) {
  int64_t id = num(env, v);
  std::lock_guard<std::mutex> lock(rt->groupsMu);
  if (id < 0 || static_cast<size_t>(id) >= rt->groups.size() || !rt->groups[id]) {
    napi_throw_error(env, nullptr, "rl2_gloo: no such group (closed?)");
    return nullptr;
  }
  return rt->groups[id];
}

// submit(group, code, in, out | null, arg): queue an op; returns its ticket.
napi_value Submit(napi_env env, napi_callback_info info) {
  napi_value a[5];
  if (!args(env, info, 5, a)) return nullptr;
  Group* g = groupAt(env, a[0]);
  if (!g) return nullptr;
  Op op;
  op.code = static_cast<OpCode>(num(env, a[1]));
  op.arg = static_cast<int>(num(env, a[4]));
  std::vector<napi_ref> refs;
  if (!floats(env, a[2], &op.in, &op.inLen)) return nullptr;
  napi_ref r;
  CHECK(napi_create_reference(env, a[2], 1, &r));
  refs.push_back(r);
  napi_valuetype t;
  CHECK(napi_typeof(env, a[3], &t));
  if (t != napi_null && t != napi_undefined) {
    if (!floats(env, a[3], &op.out, &op.outLen)) return nullptr;
    CHECK(napi_create_reference(env, a[3], 1, &r));
    refs.push_back(r);
  }
  uint64_t ticket = g->submit(op);
  rt->held[{static_cast<int>(num(env, a[0])), ticket}] = std::move(refs);
  return makeNum(env, static_cast<double>(ticket));
}

// wait(group, ticket): null when the op succeeded, else { failure, message, seq }.
napi_value Wait(napi_env env, napi_callback_info info) {
  napi_value a[2];
  if (!args(env, info, 2, a)) return nullptr;
  Group* g = groupAt(env, a[0]);
  if (!g) return nullptr;
  uint64_t ticket = static_cast<uint64_t>(num(env, a[1]));
  Op op = g->wait(ticket);
  auto it = rt->held.find({static_cast<int>(num(env, a[0])), ticket});
  if (it != rt->held.end()) {
    for (napi_ref r : it->second) napi_delete_reference(env, r);
    rt->held.erase(it);
  }
  napi_value out;
  if (op.failure == Failure::None) {
    CHECK(napi_get_null(env, &out));
    return out;
  }
  CHECK(napi_create_object(env, &out));
  CHECK(napi_set_named_property(env, out, "failure", makeNum(env, static_cast<double>(op.failure))));
  CHECK(napi_set_named_property(env, out, "message", makeStr(env, op.error)));
  CHECK(napi_set_named_property(env, out, "seq", makeNum(env, static_cast<double>(op.seq))));
  return out;
}

// query(groupKey): per world rank, the ops of that group it entered (see store-server.h).
napi_value Query(napi_env env, napi_callback_info info) {
  napi_value a[1];
  if (!args(env, info, 1, a)) return nullptr;
  try {
    auto v = rt->store->query(str(env, a[0]));
    napi_value out;
    CHECK(napi_create_array_with_length(env, v.size(), &out));
    for (size_t i = 0; i < v.size(); i++)
      CHECK(napi_set_element(env, out, static_cast<uint32_t>(i), makeNum(env, static_cast<double>(v[i]))));
    return out;
  } catch (const std::exception& e) {
    return fail(env, e.what());
  }
}

// close(): ends every group, the status channel, the store connection and (rank 0) the store.
napi_value Close(napi_env env, napi_callback_info) {
  std::vector<Group*> gs;
  {
    std::lock_guard<std::mutex> lock(rt->groupsMu);
    gs = rt->groups;
    for (auto& g : rt->groups) g = nullptr;
    rt->byKey.clear();
  }
  for (Group* g : gs) delete g;
  rt->status.reset();
  rt->store.reset();
  rt->server.reset();
  rt->device.reset();
  return nullptr;
}

napi_value Init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"host", nullptr, Host, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"connect", nullptr, Connect, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"storeSet", nullptr, StoreSet, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"storeGet", nullptr, StoreGet, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"storeMissing", nullptr, StoreMissing, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"group", nullptr, MakeGroup, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"submit", nullptr, Submit, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"wait", nullptr, Wait, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"query", nullptr, Query, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"close", nullptr, Close, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"abi", nullptr, nullptr, nullptr, nullptr, makeNum(env, kAbi), napi_enumerable, nullptr},
      {"glooVersion", nullptr, nullptr, nullptr, nullptr,
       makeStr(env, std::to_string(GLOO_VERSION_MAJOR) + "." + std::to_string(GLOO_VERSION_MINOR) + "." +
                        std::to_string(GLOO_VERSION_PATCH)),
       napi_enumerable, nullptr},
  };
  napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
  return exports;
}

}  // namespace

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
