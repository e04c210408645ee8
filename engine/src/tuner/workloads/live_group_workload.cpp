// The tuner's Workload over a live data-parallel group (engine/tuner.h make_live_group_workload): the session
// workload on rank 0's running session, whose steps and changes rank 0 orders to every rank
// (engine/live_group.h), so a window costs no group start-up. What needs a group of its own, the loss
// probes and the process knobs (the allocator, the group size), runs in fresh groups (make_group_workload),
// made the first time one is needed. Torch-free.
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "engine/distributed.h"
#include "engine/recording.h"
#include "measure/stats.h"
#include "profiler/ranks.h"
#include "profiler/recorder.h"
#include "tuner/workloads/fresh_run.h"
#include "tuner/workloads/session_workload.h"
#include "tuner/workloads/snapshot_fill.h"

namespace tb::engine {
namespace {

class LiveGroupWorkload : public SessionWorkload {
 public:
  LiveGroupWorkload(Session& live, const SessionOptions& options, int ranks, int dist_timeout_s, GroupRecording rec)
      : SessionWorkload(options, &live), ranks_(ranks), dist_timeout_s_(dist_timeout_s), rec_(std::move(rec)) {
    hosts_ = live.describe().value(nlohmann::json::json_pointer("/distributed/hosts"), 1);
    if (hosts_ > 1)
      notes_.push_back("the group spans " + std::to_string(hosts_) +
                       " hosts: no fresh group can be started from here, so process knobs are not tried and loss "
                       "probes run in rank 0's process alone");
  }

  // Every rank's trace of the same steps: rank 0's step and the straggler, as a fresh group's snapshot has.
  std::optional<Snapshot> snapshot(int steps) override {
    // No hooks, or someone else is recording (the GUI asked serve for a trace): rank 0's own snapshot.
    if (!rec_.start || !rec_.collect || prof::Recorder::instance().enabled()) return SessionWorkload::snapshot(steps);
    // Rank 0 records as every other capture does (engine/recording.h): ranges and, on a GPU, CUPTI's records.
    Capture capture(session_->describe().value(nlohmann::json::json_pointer("/device/kind"), std::string()) == "cuda");
    rec_.start();
    measure::Window window;
    try {
      window = measure(std::max(2, steps));
    } catch (...) {
      rec_.collect(capture.finish());  // the other ranks stop recording too
      throw;
    }
    std::unique_ptr<prof::Trace> mine = capture.finish();
    if (mine)
      mine->meta().process_names[static_cast<int64_t>(::getpid())] =
          rank_process_name(session_->describe().value("distributed", nlohmann::json::object()));
    auto merged = rec_.collect(std::move(mine));
    Snapshot s;
    s.throughput = window.throughput();
    std::vector<double> walls;
    for (const auto& r : last_records_) walls.push_back(r.wall_ns / 1e6);
    s.step_ms = measure::median(walls);
    if (!merged) {
      s.findings.emplace_back("the group's trace could not be collected");  // in place: GCC 12 warns on moving the temporary
      return s;
    }
    // Rank order from the names the ranks gave their processes.
    const auto& names = merged->meta().process_names;
    std::vector<int64_t> pids;
    for (const auto& [pid, name] : names)
      if (name.rfind("rank ", 0) == 0) pids.push_back(pid);
    prof::sort_processes(merged->meta(), pids);
    std::vector<std::pair<int64_t, std::string>> ranks;
    for (int64_t pid : pids) ranks.emplace_back(pid, names.at(pid));
    fill_group_snapshot(s, *merged, ranks);
    return s;
  }

  // A fresh group starts on this host only (run --ranks N): across hosts it would measure another topology.
  std::optional<measure::Window> measure_fresh(const Config& config, int steps) override {
    if (hosts_ > 1) return std::nullopt;
    return fresh().measure_fresh(config, steps);
  }
  std::vector<double> loss_probe(const Config& config, int steps) override {
    // Across hosts: a one-process probe in rank 0's process (the same seeded batches and weights).
    return hosts_ < 2 ? fresh().loss_probe(config, steps) : SessionWorkload::loss_probe(config, steps);
  }
  // A rank's share of the cores: the ranks of a group on one machine divide them.
  int cpu_cores() override { return std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / ranks_); }
  std::vector<std::string> first_knobs() const override { return ddp_knobs_first(); }
  nlohmann::json describe() override {
    nlohmann::json j = SessionWorkload::describe();
    j["ranks"] = ranks_;
    j["measurement"] = "the running group of " + std::to_string(ranks_) +
                       " ranks: rank 0 orders every step and change to all ranks at the same step boundary; a "
                       "window is the samples of all ranks over rank 0's wall time; " +
                       std::string(hosts_ > 1 ? "across hosts: loss probes in rank 0's process, no process knobs"
                                              : "loss probes and process knobs in fresh groups");
    return j;
  }

 private:
  Workload& fresh() {
    if (!fresh_) {
      SessionOptions o = opts_;
      o.dist = {};  // a group of its own (its ranks get their own torchrun variables)
      o.knobs = baseline_;
      fresh_ = make_group_workload(o, ranks_, dist_timeout_s_);
    }
    return *fresh_;
  }

  int ranks_;
  int hosts_ = 1;
  int dist_timeout_s_;
  GroupRecording rec_;
  std::unique_ptr<Workload> fresh_;
};

}  // namespace

std::unique_ptr<Workload> make_live_group_workload(Session& live, const SessionOptions& options, int ranks,
                                                   int dist_timeout_s, GroupRecording recording) {
  if (ranks < 2) throw EngineError("a data-parallel tune needs at least 2 ranks");
  return std::make_unique<LiveGroupWorkload>(live, options, ranks, dist_timeout_s, std::move(recording));
}

}  // namespace tb::engine
