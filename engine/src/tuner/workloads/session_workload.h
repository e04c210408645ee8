// The tuner's Workload over a real engine Session (engine/tuner.h make_session_workload), declared here so
// that the live group's workload (live_group_workload.cpp) can be one with a few parts of its own. Torch-free,
// private to the engine.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/loader_verdict.h"
#include "engine/session.h"
#include "engine/tuner.h"

namespace tb::engine {

class SessionWorkload : public Workload {
 public:
  // Creates its own session from `options`, or, with `live`, measures on that running session (not owned;
  // it must outlive the workload). Either way options.knobs is the baseline.
  explicit SessionWorkload(const SessionOptions& options, Session* live = nullptr);

  std::vector<KnobState> knobs() override { return session_->knobs(); }
  Config baseline() override { return baseline_; }
  void apply(const Config& requested) override;
  measure::Window measure(int steps) override;
  measure::Window measure_capped(int steps, double max_s) override;
  std::optional<measure::Window> measure_fresh(const Config& config, int steps) override;
  std::vector<double> loss_probe(const Config& config, int steps) override;
  std::optional<Snapshot> snapshot(int steps) override;
  double now_s() override;
  int cpu_cores() override;
  std::string measurement_allocator() const override { return measurement_allocator_; }
  // A fresh `tunebench-cli run` pays what this session's creation cost (model build, CUDA and cuDNN set-up,
  // the loader's start) and the process's own start (loading LibTorch); < 0 for a live session.
  double start_s() const override { return start_s_; }
  nlohmann::json describe() override;

 protected:
  void remember(const std::string& w);
  // A probe session set process-wide switches (anomaly mode, TF32, cuDNN autotuner) for itself and its
  // destructor reset some; re-applying one knob and back makes the main session set all of them again.
  void restore_globals();
  client::LoaderVerdict snapshot_loader_verdict(const nlohmann::json& describe) const;

  SessionOptions opts_;
  std::unique_ptr<Session> owned_;
  Session* session_ = nullptr;
  Config baseline_;
  std::vector<std::string> notes_;
  std::vector<StepRecord> last_records_;
  std::string measurement_allocator_;
  double last_step_s_ = 0;
  std::map<std::string, std::vector<double>> probe_cache_;
  std::chrono::steady_clock::time_point t0_;
  double start_s_ = -1;
};

}  // namespace tb::engine
