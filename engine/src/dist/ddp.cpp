// c10d process group, module sync and the Reducer (dist/ddp.h).
#include "dist/ddp.h"

#include "dist/c10d_compat.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>

#include <algorithm>
#include <cstdlib>
#include <future>
#include <limits>
#include <optional>
#include <stdexcept>
#include <thread>

#include "profiler/range_names.h"
#include "profiler/recorder.h"

namespace tb::engine::dist {
namespace {

// Runs `f` on a thread of its own and waits at most `limit` for it: nullopt when it did not finish (the thread
// goes on alone, holding what `f` captured), else its value or its exception. c10d's store calls do not all
// keep their timeouts when the network goes silent: from 2.x a timed-out wait cancels on the server and then
// reads the answer with no time limit, and a new client retries its connect; on a cut link both block until
// the kernel gives up (26 s seen for a 5 s wait).
template <class F>
auto bounded(std::chrono::milliseconds limit, F f) -> std::optional<decltype(f())> {
  std::packaged_task<decltype(f())()> task(std::move(f));
  auto done = task.get_future();
  std::thread(std::move(task)).detach();
  if (done.wait_for(limit) != std::future_status::ready) return std::nullopt;
  return done.get();
}

constexpr size_t kBroadcastBytes = 256 * 1024;  // DDP's broadcast_bucket_size

std::string one_line(const std::string& s) {
  auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

// A rank on another machine told to reach the store on loopback: torchrun's c10d rendezvous sets MASTER_ADDR
// to the first node's host name, and on a machine whose name resolves to itself only, that is "localhost".
std::string loopback_hint(const DistOptions& o) {
  const bool loopback = o.master_addr == "localhost" || o.master_addr.rfind("127.", 0) == 0 || o.master_addr == "::1";
  if (!loopback || o.world_size <= o.local_world_size) return "";
  return "; MASTER_ADDR=" + o.master_addr + " is this machine, but only " + std::to_string(o.local_world_size) +
         " of the " + std::to_string(o.world_size) +
         " ranks run here: give the first node a host name the others resolve, or start torchrun with "
         "--master_addr <its address> --master_port <port>";
}

// The Gloo device: an interface named by GLOO_SOCKET_IFNAME (as PyTorch reads it), loopback for a local
// group, else the interface the host name resolves to.
std::shared_ptr<::gloo::transport::Device> gloo_device(const std::string& master_addr) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  if (master_addr == "localhost" || master_addr.rfind("127.", 0) == 0)
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

// All-reduce (mean) of one gradient bucket, optionally in fp16 (PyTorch's allreduce_hook and
// fp16_compress_hook), recorded as one range per bucket on the thread that completes it.
// (CommHookInterface directly: CppCommHookInterface's parseHookResult calls a function Debian's libtorch does
// not export.)
class RecordedAllReduceHook : public c10d::CommHookInterface {
 public:
  RecordedAllReduceHook(const c10::intrusive_ptr<c10d::ProcessGroup>& pg, bool fp16, bool record_range,
                        std::shared_ptr<std::atomic<int64_t>> last_launch)
      : state_(pg), fp16_(fp16), record_range_(record_range), last_launch_(std::move(last_launch)) {}

  at::Tensor parseHookResult(const c10::IValue& result) override {
    return result.isTensor() ? result.toTensor() : result.toTensorVector().at(0);
  }

  c10::intrusive_ptr<c10::ivalue::Future> runHook(c10d::GradBucket& bucket) override {
    const int64_t t0 = prof::Recorder::timestamp();
    last_launch_->store(t0, std::memory_order_relaxed);
    at::Tensor buffer = bucket.getBufferRef();
    const int64_t bytes = int64_t(buffer.numel()) * (fp16_ ? 2 : int64_t(buffer.element_size()));
    std::vector<at::Tensor> tensors{fp16_ ? buffer.to(torch::kHalf) : buffer};
    tensors[0].div_(state_->getSize());  // divide first: the fp16 sum cannot overflow
    auto fut = state_->allreduce(tensors)->getFuture();
    const bool fp16 = fp16_, record_range = record_range_;
    return fut->then(
        [t0, bytes, buffer, fp16, record_range](c10::ivalue::Future& done) {
          // Not mutable: LibTorch 2.x calls the callback as const (copy_ is a const method of Tensor).
          // value() rethrows the collective's error (a dead peer, the timeout): then() calls us either way,
          // and returning the buffer without asking would train on with gradients nobody reduced.
          const auto reduced = done.value().toTensorVector();
          if (fp16) buffer.copy_(reduced.at(0));
          if (record_range) record(t0, bytes);
          return c10::IValue(buffer);
        },
        c10::TensorType::get());
  }

 private:
  // Consecutive collectives complete on the same Gloo thread: each range starts no earlier than the last
  // one ended there, so a queued bucket shows its transfer, not its wait behind the previous one.
  static void record(int64_t t0, int64_t bytes) {
    thread_local int64_t last_end = INT64_MIN;
    thread_local bool named = false;
    if (!prof::Recorder::instance().enabled()) return;
    if (!named) {
      // Gloo's thread, or the training thread when the all-reduce had already completed as the hook was
      // attached (the callback then runs inline): that one stays "train".
      prof::name_thread_if_unnamed("comm (gloo)");
      named = true;
    }
    prof::Recorder::range_since(prof::names::kGlooAllReduce, std::max(t0, last_end), bytes);
    last_end = prof::Recorder::timestamp();
  }
  c10::intrusive_ptr<c10d::ProcessGroup> state_;
  bool fp16_;
  bool record_range_;  // Gloo: the callback runs when the transfer ended. NCCL: as soon as it is enqueued.
  std::shared_ptr<std::atomic<int64_t>> last_launch_;
};

}  // namespace

namespace {
// A connection to the group's store (its server, on rank 0 without torchrun's agent). Free of Group: await()
// runs it on a thread that may outlive the group.
c10::intrusive_ptr<c10d::Store> connect_store(const DistOptions& o, bool server) {
  c10d::TCPStoreOptions so;
  so.port = uint16_t(o.master_port);
  so.isServer = server;
  if (!o.agent_store) so.numWorkers = size_t(o.world_size);
  so.waitWorkers = false;  // the process group's own rendezvous waits (with the timeout)
  so.timeout = std::chrono::milliseconds(int64_t(o.timeout_s) * 1000);
  so.multiTenant = true;
  auto tcp = c10d_compat::make_tcp_store(o.master_addr, so);
  if (!o.agent_store) return tcp;
  return c10::make_intrusive<c10d::PrefixStore>("/worker/attempt_" + std::to_string(o.restart_count), tcp);
}
}  // namespace

c10::intrusive_ptr<c10d::Store> Group::connect(bool server) const { return connect_store(opts_, server); }

Group::Group(const DistOptions& o, const std::string& backend) : opts_(o), backend_(backend) {
  const auto timeout = std::chrono::milliseconds(int64_t(o.timeout_s) * 1000);
  const bool server = !o.agent_store && o.rank == 0;
  try {
    store_ = connect(server);
  } catch (const std::exception& e) {
    // Rank 0 serves the store: it did not reach it, it could not listen (a port in use, say).
    throw std::runtime_error("rank " + std::to_string(o.rank) +
                             (server ? ": cannot open the rendezvous store on port " + std::to_string(o.master_port)
                                          : ": cannot reach the rendezvous store at " + o.master_addr + ":" +
                                                std::to_string(o.master_port)) +
                             " (" + one_line(e.what()) + ")" + loopback_hint(o));
  }
  // Each backend rendezvouses under a prefix of its own, as init_process_group gives each device's backend.
  auto pg_store = c10::make_intrusive<c10d::PrefixStore>("tunebench/pg", store_);
  try {
    auto go = c10d::ProcessGroupGloo::Options::create(timeout);
    go->devices.push_back(gloo_device(o.master_addr));
    auto gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(pg_store, o.rank, o.world_size, go);
    c10::intrusive_ptr<c10d::Backend> nccl;
    if (backend_ == "nccl")
      nccl = make_nccl_backend(c10::make_intrusive<c10d::PrefixStore>("tunebench/nccl", store_), o.rank, o.world_size,
                               timeout);
    pg_ = c10d_compat::make_process_group(pg_store, o.rank, o.world_size, timeout, gloo, nccl);
  } catch (const std::exception& e) {
    throw std::runtime_error("rank " + std::to_string(o.rank) + ": the " + backend_ + " process group of " +
                             std::to_string(o.world_size) + " ranks did not form within " + std::to_string(o.timeout_s) +
                             " s (" + one_line(e.what()) + ")");
  }
  try {
    sync_clocks();
  } catch (const std::exception& e) {
    throw std::runtime_error("rank " + std::to_string(o.rank) + ": the clock exchange with rank 0 failed (" +
                             one_line(e.what()) + ")");
  }
}

Group::~Group() = default;

void Group::broadcast(const std::vector<torch::Tensor>& tensors) {
  if (tensors.empty()) return;
  torch::NoGradGuard ng;
  c10d::broadcast_coalesced(pg_, tensors, kBroadcastBytes, 0);
}

std::vector<int64_t> Group::sum_over_ranks(const std::vector<int64_t>& mine) {
  if (mine.empty()) return {};
  std::vector<torch::Tensor> t{torch::tensor(mine, torch::dtype(torch::kLong)).clone()};
  c10d::AllreduceOptions o;
  o.reduceOp = c10d::ReduceOp::SUM;
  pg_->allreduce(t, o)->wait();
  const auto* v = t[0].data_ptr<int64_t>();
  return std::vector<int64_t>(v, v + mine.size());
}

std::vector<std::string> Group::gather(const std::string& key, const std::string& mine, std::chrono::seconds timeout) {
  store_->set(key + "/" + std::to_string(opts_.rank), bytes(mine));
  if (opts_.rank != 0) return {};
  std::vector<std::string> out(size_t(opts_.world_size));
  out[0] = mine;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int r = 1; r < opts_.world_size; ++r) {
    const std::string k = key + "/" + std::to_string(r);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    try {
      store_->wait({k}, std::max(std::chrono::milliseconds(1), left));
      auto v = store_->get(k);
      out[size_t(r)].assign(v.begin(), v.end());
      drop(k);  // a live group gathers a trace at every chunk: the store must not keep them all
    } catch (const std::exception&) {
      // That rank is gone or late: its entry stays empty and the caller says so.
    }
  }
  drop(key + "/0");
  return out;
}

void Group::post(const std::string& key, const std::string& value) { store_->set(key, bytes(value)); }

std::string Group::await(const std::string& key, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const auto slice = std::chrono::milliseconds(int64_t(std::max(1, opts_.timeout_s)) * 1000);
  // What a call may take beyond its own timeout before the store counts as gone.
  const auto grace = std::chrono::milliseconds(500);
  auto gone = [&](const std::string& why) {
    return std::runtime_error("the rendezvous store at " + opts_.master_addr + ":" + std::to_string(opts_.master_port) +
                              " no longer answers (" + why + ")");
  };
  for (;;) {
    if (!waits_) {
      // A new connection comes at once while the store's host is up, and is given up after the group's
      // timeout when the host is gone or cut off without closing its sockets (no reset ever comes).
      std::optional<c10::intrusive_ptr<c10d::Store>> fresh;
      try {
        fresh = bounded(slice + grace, [o = opts_] { return connect_store(o, false); });
      } catch (const std::exception& e) {
        throw gone(one_line(e.what()));
      }
      if (!fresh) throw gone("no connection within " + std::to_string(opts_.timeout_s) + " s");
      waits_ = *fresh;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) throw std::runtime_error("'" + key + "' did not come within " + std::to_string(timeout.count()) + " s");
    const auto wait = std::min(slice, left);
    const auto started = std::chrono::steady_clock::now();
    try {
      auto store = waits_;
      if (auto v = bounded(wait + grace, [store, key, wait] {
            store->wait({key}, wait);
            return store->get(key);
          }))
        return {v->begin(), v->end()};
    } catch (const std::exception& e) {
      // A closed connection (the store's process ended: rank 0, or torchrun's agent) ends the wait at once.
      // A slice that ran out says "Socket Timeout" (1.13) or "wait timeout" (2.x); whatever a LibTorch says,
      // a wait that lasted its whole slice timed out.
      const std::string what = e.what();
      const bool timed_out = what.find("Socket Timeout") != std::string::npos ||
                             what.find("wait timeout") != std::string::npos ||
                             std::chrono::steady_clock::now() - started >= wait * 9 / 10;
      if (!timed_out) throw;
    }
    // The slice ran out (or the wait overstayed it). That connection still owes the timed-out wait's answer,
    // so it is dropped, and the next round connects afresh.
    waits_.reset();
  }
}

void Group::drop(const std::string& key) {
  try {
    store_->deleteKey(key);
  } catch (const std::exception&) {
  }
}

Ddp::Ddp(std::shared_ptr<Group> group, std::vector<torch::Tensor> params, std::vector<torch::Tensor> buffers,
         const DdpSettings& settings)
    : group_(std::move(group)), params_(std::move(params)), buffers_(std::move(buffers)), settings_(settings) {
  // As DDP 1.13 without find_unused_parameters: one bucket for the first iteration; the Reducer rebuilds the
  // buckets (bucket_cap_mb each, the first 1 MiB) in the order gradients became ready, before the second.
  const size_t n = params_.size();
  auto [indices, limits] = c10d::compute_bucket_assignment_by_size(params_, {std::numeric_limits<size_t>::max()},
                                                                   std::vector<bool>(n, false));
  std::reverse(indices.begin(), indices.end());
  std::reverse(limits.begin(), limits.end());
  reducer_ = c10d_compat::make_reducer<c10d::Reducer>(params_, std::move(indices), std::move(limits), group_->pg(),
                                                      settings_.bucket_cap_mb * 1024 * 1024,
                                                      settings_.gradient_as_bucket_view,
                                                      int64_t(c10d::kDefaultFirstBucketBytes));
  if (settings_.static_graph) reducer_->set_static_graph();
  reducer_->register_comm_hook(std::make_unique<RecordedAllReduceHook>(
      group_->pg(), settings_.comm_hook == "fp16", group_->backend() == "gloo", last_launch_));
}

Ddp::~Ddp() = default;

void Ddp::before_forward(bool sync) {
  if (sync) {
    ++iterations_;
    reducer_->prepare_for_forward();
  }
  if (reducer_->rebuild_buckets()) rebuilt_ = true;
  // DDP's _sync_buffers: BatchNorm statistics follow rank 0 before every synchronized forward.
  if (sync && settings_.broadcast_buffers) group_->broadcast(buffers_);
}

void Ddp::before_backward(bool sync) {
  if (sync) reducer_->prepare_for_backward({});
}

void Ddp::after_backward(bool sync) {
  if (!sync) return;
  if (settings_.static_graph && iterations_ == 1) reducer_->delay_all_reduce();
  // backward returned when the last bucket's result was back: from that bucket's hand-over until now the
  // training thread only waited (the Reducer's finalize). Recorded inside the step's backward range.
  const int64_t t = last_launch_->exchange(INT64_MIN, std::memory_order_relaxed);
  if (t != INT64_MIN) prof::Recorder::range_since(prof::names::kCommWait, t);
}

nlohmann::json Ddp::describe() const {
  nlohmann::json j{{"backend", group_->backend()},
                   {"world_size", group_->size()},
                   {"rank", group_->rank()},
                   {"iterations", iterations_},
                   {"buckets_rebuilt", rebuilt_},
                   {"bucket_cap_mb", settings_.bucket_cap_mb},
                   {"gradient_as_bucket_view", settings_.gradient_as_bucket_view},
                   {"comm_hook", settings_.comm_hook},
                   {"broadcast_buffers", settings_.broadcast_buffers},
                   {"static_graph", settings_.static_graph}};
  j.update(group_->clock().to_json());
  return j;
}

}  // namespace tb::engine::dist
