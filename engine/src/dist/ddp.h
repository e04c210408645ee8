// DistributedDataParallel in LibTorch, as PyTorch's torch.nn.parallel.DistributedDataParallel does it
// (torch/nn/parallel/distributed.py, 1.13): c10d's process group over a TCPStore rendezvous (Gloo; on GPUs
// NCCL for the CUDA tensors where the build has it, as init_process_group("cpu:gloo,cuda:nccl")), the
// module state broadcast from rank 0 at start, and c10d::Reducer, which all-reduces gradient buckets from
// autograd hooks *during* backward, so communication overlaps the rest of backward. Private to the engine.
//
// Why not a hand-written all-reduce after backward: it would serialize communication after compute and
// measure a different program from the one users run; the Reducer is PyTorch's own (bucketing, bucket
// rebuild in gradient-ready order after the first iteration, gradient_as_bucket_view, static_graph).
//
// Our comm hook replaces the Reducer's built-in one for two reasons: every bucket's Gloo all-reduce is
// recorded as a range on a "comm" track (the Gloo worker threads are not ours to instrument), and fp16
// compression is the same hook with a cast (PyTorch's fp16_compress_hook). An NCCL all-reduce is a kernel on
// its own stream: CUPTI records it on the GPU's rows, and the host only enqueues it, so no range is recorded.
#pragma once

#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/distributed.h"

namespace c10d {
class Reducer;  // reducer.hpp only in ddp.cpp: a heavy header
}

namespace tb::engine::dist {

// Where a rank runs and how its clock relates to rank 0's. Traces are CLOCK_MONOTONIC, which counts from each
// host's boot (and each time namespace's offset): a rank on another host puts its events on rank 0's clock
// before they are merged, or the timeline would place it hours or days away.
struct RankClock {
  std::string host;  // gethostname()
  int hosts = 1;     // distinct host names in the group: above 1, each rank names its host in its trace
  // Same boot and time namespace as rank 0: the clocks are the same clock, the offset exactly 0.
  bool same_clock = true;
  // Otherwise measured as Cristian's algorithm does, over the process group: this rank sends, rank 0 answers
  // with its clock, and rank 0's clock minus ours is estimated at the round trip's midpoint (`at_ns`, on our
  // clock). The shortest of kClockExchanges round trips is kept; the true offset lies within +-error_ns.
  struct Sample {
    int64_t at_ns = 0;
    int64_t offset_ns = 0;
    int64_t error_ns = 0;
  };
  // The one taken when the group formed and the latest: another is taken each time a trace is collected
  // (Group::resync_clock). Two hosts' clocks run at rates NTP corrects only slowly (up to 500 ppm apart), so
  // a long run's offset is not its first one.
  std::vector<Sample> samples;
  int64_t offset_ns = 0;  // the latest sample's
  int64_t error_ns = 0;
  nlohmann::json to_json() const;
};

// Rendezvous + process group. Throws std::runtime_error with one line (the session turns it into EngineError).
// `backend`: "gloo", or "nccl" (choose_dist_backend) for a GPU rank whose CUDA device is already current.
class Group {
 public:
  Group(const DistOptions& o, const std::string& backend);
  ~Group();
  int rank() const { return opts_.rank; }
  int size() const { return opts_.world_size; }
  const DistOptions& options() const { return opts_; }
  const c10::intrusive_ptr<c10d::ProcessGroup>& pg() const { return pg_; }
  const RankClock& clock() const { return clock_; }
  const std::string& backend() const { return backend_; }
  // Measures the offsets again, together on every rank (a collective: all call it at the same point). Throws
  // std::runtime_error when the exchange fails; the clock keeps its earlier samples.
  void resync_clock();

  // Rank 0's values of `tensors` everywhere (coalesced into 256 KiB messages, as DDP's module sync).
  void broadcast(const std::vector<torch::Tensor>& tensors);
  // The element-wise sum of every rank's `mine`, on every rank (a collective on CPU tensors: Gloo, also in
  // a GPU group). Lets the ranks decide together, e.g. which of them a bigger batch does not fit on.
  std::vector<int64_t> sum_over_ranks(const std::vector<int64_t>& mine);
  // Every rank's `mine` on rank 0, in rank order; ranks that did not post within `timeout` are empty
  // strings. Other ranks get an empty vector. Goes through the store, so it works after a collective failed.
  std::vector<std::string> gather(const std::string& key, const std::string& mine, std::chrono::seconds timeout);
  // A value under `key` in the rendezvous store, for the ranks that wait for it (a live group's orders).
  void post(const std::string& key, const std::string& value);
  // The value under `key` once it is there. Throws std::runtime_error after `timeout`; at once when the store
  // went away (the process that serves it ended); within twice the group's timeout when the store's host
  // stops answering (a partition, a host that died): the wait goes in slices of the group's timeout on a
  // connection of its own, and between slices a new connection must succeed.
  std::string await(const std::string& key, std::chrono::seconds timeout);
  // Removes `key` (quietly: it may be gone already).
  void drop(const std::string& key);

 private:
  // Every rank, once the process group formed (group_clock.cpp): hosts and clock identities through the
  // store, then the round trips with rank 0 for the ranks whose clock is not rank 0's (measure_offsets).
  void sync_clocks();
  void measure_offsets();
  // A client (or, for rank 0 outside torchrun, the server) of the rendezvous store, as the options say.
  c10::intrusive_ptr<c10d::Store> connect(bool server) const;

  DistOptions opts_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::Store> waits_;  // await()'s own connection: a timed-out wait spoils its connection
  c10::intrusive_ptr<c10d::ProcessGroup> pg_;
  std::string backend_;
  RankClock clock_;
  std::vector<bool> off_clock_;  // per rank: not on rank 0's clock (the ranks that exchange with rank 0)
  bool resync_failed_ = false;
};

// NCCL for the CUDA tensors of a GPU group (nccl_backend.cpp, only in a build with TUNEBENCH_NCCL). Throws
// std::runtime_error when this LibTorch cannot make one.
c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                    std::chrono::milliseconds timeout);

struct DdpSettings {
  int64_t bucket_cap_mb = 25;
  bool gradient_as_bucket_view = false;
  std::string comm_hook = "none";  // none | fp16
  bool broadcast_buffers = true;
  bool static_graph = false;
  bool operator==(const DdpSettings&) const = default;
};

// One Reducer over the current parameter list. Rebuilt (not patched) when the parameters or the settings
// change: every rank does the same at the same step boundary, so the ranks stay in step.
class Ddp {
 public:
  Ddp(std::shared_ptr<Group> group, std::vector<torch::Tensor> params, std::vector<torch::Tensor> buffers,
      const DdpSettings& settings);
  ~Ddp();
  // Before the forward of a micro-batch. `sync`: this micro-batch's backward reduces (false inside a
  // no_sync accumulation window: gradients accumulate locally, nothing is sent).
  void before_forward(bool sync);
  // After the loss, before backward: arms the Reducer's hooks when `sync`.
  void before_backward(bool sync);
  // After backward. static_graph's first iteration only counts hook firings (PyTorch's _DDPSink then calls
  // _delay_all_reduce at the end of backward); we make that call here, on the same thread, after backward.
  void after_backward(bool sync);
  const DdpSettings& settings() const { return settings_; }
  const std::vector<torch::Tensor>& params() const { return params_; }
  nlohmann::json describe() const;

 private:
  std::shared_ptr<Group> group_;
  std::vector<torch::Tensor> params_, buffers_;
  DdpSettings settings_;
  std::unique_ptr<c10d::Reducer> reducer_;
  // When the comm hook last handed a bucket to Gloo (recorder timestamp): after backward, the training thread's
  // wait from then on is the communication backward did not hide.
  std::shared_ptr<std::atomic<int64_t>> last_launch_ = std::make_shared<std::atomic<int64_t>>(INT64_MIN);
  int64_t iterations_ = 0;
  bool rebuilt_ = false;
};

}  // namespace tb::engine::dist
