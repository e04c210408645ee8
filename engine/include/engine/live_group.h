// A live data-parallel run (`serve --ranks N`, `tune --ranks N`; docs/distributed.md): the GUI's toggles, trace
// chunks and stop reach every rank of a running DDP group. Rank 0 speaks the run protocol (engine/serve.h)
// and leads: before it does
// anything that the ranks must do together (a step, a knob change, a trace chunk, the end) it posts that as
// the next numbered order in the rendezvous store (Session::post_order). The other ranks follow: they wait
// for each order and do it, nothing else. So every rank changes a knob at the same step boundary (the
// Reducer is rebuilt everywhere or nowhere), and a follower can wait as long as rank 0 needs between steps.
//
// Why orders through the store and not one small all-reduce per step: a collective has the group's timeout
// (60 s), and rank 0 may spend longer between steps (an auto-tune's fresh-process trials); a store wait can be
// long and still ends at once when rank 0 dies, because rank 0 serves the store. Cost: one store round trip per
// step on each rank (measured in docs/distributed.md).
#pragma once

#include <cstdint>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/session.h"
#include "engine/tuner.h"
#include "profiler/trace.h"

namespace tb::engine {

// Rank 0's session as the group's: step() and apply() are ordered to the other ranks first, so whatever
// drives it (the serve loop, the GUI's toggles, an auto-tune's workload) drives the whole group. A step's
// samples are the group's: every rank takes a batch of the same size (equal shards, padded as PyTorch's
// DistributedSampler pads them, and the same configuration at every step).
class GroupLeader : public Session {
 public:
  explicit GroupLeader(std::unique_ptr<Session> rank0);

  StepRecord step() override;
  int64_t apply(const Config& changes) override;
  const Config& config() const override { return s_->config(); }
  int64_t revision() const override { return s_->revision(); }
  std::vector<KnobState> knobs() const override { return s_->knobs(); }
  void synchronize() override { s_->synchronize(); }
  bool warming_up() const override { return s_->warming_up(); }
  std::vector<std::string> take_warnings() override { return s_->take_warnings(); }
  nlohmann::json describe() const override { return s_->describe(); }
  std::vector<std::string> gather(const std::string& key, const std::string& mine) override {
    return s_->gather(key, mine);
  }
  std::string parameter_digest() const override { return s_->parameter_digest(); }
  void resync_clock() override { s_->resync_clock(); }
  void post_order(int64_t n, const std::string& order) override { s_->post_order(n, order); }
  std::string await_order(int64_t n, std::chrono::seconds timeout) override { return s_->await_order(n, timeout); }

  int world_size() const { return world_; }
  // Ordered to the other ranks; rank 0 starts or stops its own recorder itself (the caller).
  void trace(bool start);
  // Every rank's trace recorded since the last chunk, merged (one process per rank, their own pids) with
  // rank 0's (`mine`). A rank that does not answer within the group's timeout is missing from it.
  std::unique_ptr<prof::Trace> chunk(std::unique_ptr<prof::Trace> mine);
  // Orders the end and, with `gather`, returns every rank's last state in rank order: {rank, pid, steps,
  // config_rev, config, parameter_digest}; null for a rank that did not answer within the group's timeout.
  // Without it (after a failure, when a rank may be dead) nobody is waited for. Idempotent.
  nlohmann::json stop(bool gather);
  // The tuner's way to record every rank for a snapshot (engine/tuner.h GroupRecording): trace(true), then
  // chunk() and trace(false).
  GroupRecording recording();

 private:
  void order(const nlohmann::json& o);
  std::unique_ptr<Session> s_;
  int world_ = 1;
  int64_t next_ = 0, chunks_ = 0, steps_ = 0;
  bool stopped_ = false;
  nlohmann::json end_;
};

// A rank other than 0 of a live group: joins it, then does rank 0's orders until the stop order. Writes
// nothing to stdout; errors and warnings go to stderr prefixed with the rank. Returns the exit code.
int serve_follower(const SessionOptions& options);

}  // namespace tb::engine
