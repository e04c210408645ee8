// dist/c10d_compat.h on the c10d API shapes Debian's 1.13 does not have. Debian's build takes the 1.13 branch
// of each function (the CLI's data-parallel tests run it); the other branches are instantiated here with
// stand-ins shaped as PyTorch's 2.x headers declare them (ProcessGroup of 2.1 and of 2.6+, the Reducer of 2.x
// and of 2026; TCPStoreOptions with and without useLibUV), so that a mistake in them shows here rather than
// first in the CUDA build on a lent GPU.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <cstdlib>
#include <map>
#include <optional>
#include <stdexcept>

#include "dist/c10d_compat.h"

namespace tb::engine::dist {
namespace {

struct FakeBackend : c10d::Backend {
  FakeBackend() : c10d::Backend(0, 1) {}
};

// What every stand-in process group records: the backend per device, the default, the name.
struct Recorded {
  std::map<c10::DeviceType, std::pair<int, c10d::Backend*>> backends;
  int default_backend = -1;
  std::string name, options_backend;
  int64_t options_timeout_ms = 0;
};

// >= 2.6: ProcessGroup(store, rank, size), setDefaultBackend, setGroupName.
struct Pg26 : c10::intrusive_ptr_target {
  enum BackendType : uint8_t { UNDEFINED = 0, GLOO = 1, NCCL = 2 };
  Pg26(c10::intrusive_ptr<c10d::Store>, int, int) {}
  void setBackend(c10::DeviceType d, BackendType t, const std::optional<c10::intrusive_ptr<c10d::Backend>>& b) {
    r.backends[d] = {int(t), b.value().get()};
  }
  void setDefaultBackend(const BackendType& t) { r.default_backend = int(t); }
  void setGroupName(const std::string& n) { r.name = n; }
  Recorded r;
};

// 2.0 - 2.5: ProcessGroup(store, rank, size, Options(backend name, timeout)); the default backend is the
// options' name (no setDefaultBackend, no group name in the earliest).
struct Pg21 : c10::intrusive_ptr_target {
  enum BackendType { UNDEFINED = 0, GLOO = 1, NCCL = 2 };
  struct Options : c10::intrusive_ptr_target {
    Options(std::string b, std::chrono::milliseconds t) : backend(std::move(b)), timeout(t) {}
    std::string backend;
    std::chrono::milliseconds timeout;
  };
  Pg21(const c10::intrusive_ptr<c10d::Store>&, int, int, c10::intrusive_ptr<Options> o) {
    r.options_backend = o->backend;
    r.options_timeout_ms = o->timeout.count();
  }
  void setBackend(c10::DeviceType d, BackendType t, const std::optional<c10::intrusive_ptr<c10d::Backend>>& b) {
    r.backends[d] = {int(t), b.value().get()};
  }
  Recorded r;
};

TEST(C10dCompat, A2xProcessGroupHoldsGlooForCpuAndNcclForCuda) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  auto gloo = c10::make_intrusive<FakeBackend>();
  auto nccl = c10::make_intrusive<FakeBackend>();
  const auto timeout = std::chrono::milliseconds(7000);

  auto cpu_only = c10d_compat::make_process_group<Pg26, FakeBackend>(store, 0, 2, timeout, gloo, {});
  ASSERT_EQ(cpu_only->r.backends.size(), 1u);
  EXPECT_EQ(cpu_only->r.backends.at(c10::DeviceType::CPU), std::make_pair(int(Pg26::GLOO), (c10d::Backend*)gloo.get()));
  EXPECT_EQ(cpu_only->r.default_backend, int(Pg26::GLOO));
  EXPECT_EQ(cpu_only->r.name, "tunebench");

  auto both = c10d_compat::make_process_group<Pg26, FakeBackend>(store, 0, 2, timeout, gloo, nccl);
  ASSERT_EQ(both->r.backends.size(), 2u);
  EXPECT_EQ(both->r.backends.at(c10::DeviceType::CPU).second, gloo.get());
  EXPECT_EQ(both->r.backends.at(c10::DeviceType::CUDA), std::make_pair(int(Pg26::NCCL), (c10d::Backend*)nccl.get()));
  EXPECT_EQ(both->r.default_backend, int(Pg26::NCCL));

  auto older = c10d_compat::make_process_group<Pg21, FakeBackend>(store, 1, 2, timeout, gloo, nccl);
  EXPECT_EQ(older->r.options_backend, "nccl");
  EXPECT_EQ(older->r.options_timeout_ms, 7000);
  EXPECT_EQ(older->r.backends.at(c10::DeviceType::CUDA).second, nccl.get());
  auto older_cpu = c10d_compat::make_process_group<Pg21, FakeBackend>(store, 1, 2, timeout, gloo, {});
  EXPECT_EQ(older_cpu->r.options_backend, "gloo");
}

// The Reducer's constructor shapes. Each stand-in records what reached it.
struct ReducerArgs {
  size_t params = 0, buckets = 0, limits = 0;
  int64_t cap = 0, first_cap = 0;
  bool find_unused = true, as_view = false, skip_unused = true, python = true;
  int shape = 0;
};
using P = std::vector<at::Tensor>;
using I = std::vector<std::vector<size_t>>;
using G = c10::intrusive_ptr<Pg26>;
using N = std::unordered_map<size_t, std::string>;

struct Reducer113 {  // 1.13 - 2.x: per-bucket size limits after the indices
  Reducer113(P p, I i, std::vector<size_t> l, G, std::vector<bool>, int64_t cap, bool fu, bool v, N, int64_t first) {
    a = {p.size(), i.size(), l.size(), cap, first, fu, v, false, false, 113};
  }
  ReducerArgs a;
};
struct Reducer2x {  // no limits; skip_all_reduce_unused_params and use_python_reducer
  Reducer2x(P p, I i, G, std::vector<bool>, int64_t cap, bool fu, bool v, N, int64_t first, bool skip, bool py) {
    a = {p.size(), i.size(), 0, cap, first, fu, v, skip, py, 20};
  }
  ReducerArgs a;
};
struct Reducer2026 {  // and bucket_bytes_cap_list, batched_grad_copy (defaulted)
  Reducer2026(P p, I i, G, std::vector<bool>, int64_t cap, bool fu, bool v, N, int64_t first, bool skip, bool py,
              std::vector<int64_t> caps, bool batched = false) {
    a = {p.size(), i.size(), caps.size(), cap, first, fu, v, skip, py, batched ? -1 : 2026};
  }
  ReducerArgs a;
};

template <class R>
ReducerArgs made() {
  P params{torch::zeros({2}), torch::zeros({3})};
  auto r = c10d_compat::make_reducer<R, Pg26>(params, {{1, 0}}, {123}, G{}, 25 << 20, true, 1 << 20);
  return r->a;
}

TEST(C10dCompat, EachReducerConstructorShapeGetsTheSameSettings) {
  for (const ReducerArgs& a : {made<Reducer113>(), made<Reducer2x>(), made<Reducer2026>()}) {
    SCOPED_TRACE(a.shape);
    EXPECT_EQ(a.params, 2u);
    EXPECT_EQ(a.buckets, 1u);
    EXPECT_EQ(a.cap, 25 << 20);
    EXPECT_EQ(a.first_cap, 1 << 20);
    EXPECT_FALSE(a.find_unused);
    EXPECT_TRUE(a.as_view);
    EXPECT_FALSE(a.skip_unused);
    EXPECT_FALSE(a.python);
  }
  EXPECT_EQ(made<Reducer113>().shape, 113);
  EXPECT_EQ(made<Reducer113>().limits, 1u) << "the limits reach the constructor that takes them";
  EXPECT_EQ(made<Reducer2x>().shape, 20);
  EXPECT_EQ(made<Reducer2026>().shape, 2026);
  EXPECT_EQ(made<Reducer2026>().limits, 0u) << "an empty cap list: bucket_bytes_cap for every bucket";
}

// TCPStoreOptions of 2.4+ (useLibUV, true by default) and of 1.13 (none), and a TCPStore that throws as
// LibTorch does: without libuv built in, for any useLibUV=true store; or "port in use" for every store.
struct Options24 {
  uint16_t port = 0;
  bool useLibUV = true;
};
struct Options113 {
  uint16_t port = 0;
};
template <bool kHasLibuv, bool kPortInUse = false>
struct FakeTcpStore : c10::intrusive_ptr_target {
  template <class O>
  FakeTcpStore(const std::string& h, O o) : host(h) {
    if constexpr (requires { o.useLibUV; }) {
      uses_libuv = o.useLibUV;
      ++tries;
      if (o.useLibUV && !kHasLibuv)
        throw std::runtime_error("use_libuv was requested but PyTorch was build without libuv support");
    }
    if (kPortInUse) throw std::runtime_error("The server socket has failed to listen on any local network address.");
  }
  std::string host;
  bool uses_libuv = false;
  static inline int tries = 0;
};

TEST(C10dCompat, AStoreFallsBackToTheClassicBackendOnlyWhereLibuvIsMissing) {
  unsetenv("USE_LIBUV");
  FakeTcpStore<true>::tries = FakeTcpStore<false>::tries = 0;
  auto with = c10d_compat::make_tcp_store<FakeTcpStore<true>>("h", Options24{});
  EXPECT_TRUE(with->uses_libuv) << "libuv where LibTorch has it (the wheels)";
  EXPECT_EQ(FakeTcpStore<true>::tries, 1);
  auto without = c10d_compat::make_tcp_store<FakeTcpStore<false>>("h", Options24{});
  EXPECT_FALSE(without->uses_libuv) << "Debian 13's 2.6 has no libuv";
  EXPECT_EQ(without->host, "h");
  EXPECT_EQ(FakeTcpStore<false>::tries, 2);

  setenv("USE_LIBUV", "0", 1);
  EXPECT_FALSE((c10d_compat::make_tcp_store<FakeTcpStore<true>>("h", Options24{})->uses_libuv)) << "as PyTorch reads it";
  unsetenv("USE_LIBUV");

  // Any other failure is the caller's (it names the port), and is not retried.
  FakeTcpStore<true, true>::tries = 0;
  EXPECT_THROW((c10d_compat::make_tcp_store<FakeTcpStore<true, true>>("h", Options24{})), std::runtime_error);
  EXPECT_EQ((FakeTcpStore<true, true>::tries), 1);
  // 1.13's options have no useLibUV.
  EXPECT_FALSE((c10d_compat::make_tcp_store<FakeTcpStore<false>>("h", Options113{})->uses_libuv));
}

}  // namespace
}  // namespace tb::engine::dist
