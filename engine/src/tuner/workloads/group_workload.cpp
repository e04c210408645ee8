// The tuner's Workload over a data-parallel group (engine/tuner.h make_group_workload). Every measurement is a
// fresh `tunebench-cli run --ranks N`: the ranks of one group share one configuration from their first step,
// so no rank can train a step under another one, and a rank that fails ends its group, not the tune. The
// price is the group's start-up per window, which the tuner counts in its plan (Workload::fresh_windows).
//
// Torch-free: it starts processes and reads their JSON and traces.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <thread>

#include "engine/session.h"
#include "engine/tuner.h"
#include "measure/stats.h"
#include "profiler/trace_io.h"
#include "tuner/workloads/fresh_run.h"
#include "tuner/workloads/snapshot_fill.h"

namespace tb::engine {
namespace {

class GroupWorkload : public Workload {
 public:
  GroupWorkload(const SessionOptions& options, int ranks, int dist_timeout_s)
      : opts_(options), ranks_(ranks), dist_timeout_s_(dist_timeout_s) {
    t0_ = std::chrono::steady_clock::now();
    cli_ = tunebench_cli_path();
    if (cli_.empty())
      throw EngineError("a data-parallel tune runs every window as `tunebench-cli run --ranks N`, and this program "
                        "is not tunebench-cli (set TUNEBENCH_CLI)");
    // One step of the baseline group: it checks the setup before the budget is spent, and its rank 0 says
    // which knobs apply to this model in a group (the DDP knobs do, a model without buffers has no
    // broadcast_buffers, ...).
    nlohmann::json doc;
    try {
      FreshRun spec = spec_for(1, false);
      spec.warmup = 0;
      spec.steps = 1;
      doc = run_fresh(cli_, opts_, opts_.knobs, spec, &start_s_);
    } catch (const TrialFailure& e) {
      throw EngineError(std::string("the baseline group cannot run: ") + e.what());
    }
    const nlohmann::json config = doc.value("config", nlohmann::json::object());
    for (const auto& [k, v] : config.items())
      if (v.is_string()) baseline_[k] = v.get<std::string>();
    std::map<std::string, std::string> not_applicable;
    for (const auto& n : doc.value("not_applicable", nlohmann::json::array()))
      not_applicable[n.value("id", std::string())] = n.value("reason", std::string());
    // The build and device decide the values that cannot run (amp=fp16 on a CPU build); rank 0 decides
    // whether the knob applies at all.
    for (KnobState k : knob_states_here(opts_.device)) {
      if (auto it = baseline_.find(k.info.id); it != baseline_.end()) k.value = it->second;
      if (auto it = not_applicable.find(k.info.id); it != not_applicable.end()) {
        k.applicability.applicable = false;
        k.applicability.reason = it->second;
      } else if (!k.applicability.applicable) {
        k.applicability = {};
      }
      knobs_.push_back(std::move(k));
    }
    // The environment of the report: what the group runs on, not what its one-step check measured.
    describe_ = doc;
    for (const char* k : {"config", "config_rev", "throughput", "warmup", "warmup_steps", "steps", "window", "ranks",
                          "missing_ranks", "exits", "not_applicable", "counters", "drift_checks", "rank", "pid",
                          "parameter_digest", "seed", "error", "trace", "warnings", "world_size", "distributed"})
      describe_.erase(k);
    describe_ = report_environment(describe_);
    describe_["backend"] = doc.value(nlohmann::json::json_pointer("/distributed/backend"), std::string("?"));
    remember(doc);
    current_ = baseline_;
  }

  std::vector<KnobState> knobs() override { return knobs_; }
  Config baseline() override { return baseline_; }
  void apply(const Config& config) override { current_ = config; }

  measure::Window measure(int steps) override { return window(current_, steps); }

  std::optional<measure::Window> measure_fresh(const Config& config, int steps) override {
    return window(config, steps);
  }

  std::vector<double> loss_probe(const Config& config, int steps) override {
    // From the same initial weights (rank 0's, broadcast): rank 0's loss on its shard, every step.
    const Config probe = loss_probe_config(baseline_, config);
    const std::string key = config_arg(probe) + ";" + std::to_string(steps);
    if (auto it = probe_cache_.find(key); it != probe_cache_.end()) return it->second;
    FreshRun spec = spec_for(steps, false);
    spec.warmup = 0;
    spec.steps = steps;
    nlohmann::json doc;
    try {
      doc = run_fresh(cli_, opts_, probe, spec);
    } catch (const TrialFailure& e) {
      throw TrialFailure(std::string("loss probe: ") + e.what(), e.oom);
    }
    std::vector<double> losses;
    for (const auto& s : doc.value("steps", nlohmann::json::array()))
      if (s.contains("loss") && s["loss"].is_number()) losses.push_back(s["loss"].get<double>());
    if (losses.empty()) throw TrialFailure("loss probe: the group reported no loss", false);
    probe_cache_[key] = losses;
    return losses;
  }

  std::optional<Snapshot> snapshot(int steps) override {
    char path[] = "/tmp/tunebench-group-trace-XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) return std::nullopt;
    close(fd);
    const int n = std::max(2, steps);
    FreshRun spec = spec_for(n, true);
    spec.measured_steps = n;
    spec.trace_path = path;
    nlohmann::json doc;
    try {
      doc = run_fresh(cli_, opts_, current_, spec);
    } catch (...) {
      unlink(path);
      throw;
    }
    auto loaded = prof::load_trace(path);
    unlink(path);
    Snapshot s;
    s.throughput = window_of_run(doc).throughput();
    std::vector<double> walls;
    for (const auto& st : doc.value("steps", nlohmann::json::array()))
      if (!st.value("warmup", false)) walls.push_back(st.value("wall_ns", int64_t(0)) / 1e6);
    s.step_ms = measure::median(walls);
    if (!loaded.ok()) {
      s.findings.push_back("the group's trace could not be read: " + loaded.error().to_string());
      return s;
    }
    // Each rank's process in the merged trace, in rank order (the run names its pid).
    std::vector<std::pair<int64_t, std::string>> ranks;
    for (const auto& r : doc.value("ranks", nlohmann::json::array()))
      if (const int64_t pid = r.value("pid", int64_t(-1)); pid >= 0)
        ranks.emplace_back(pid, "rank " + std::to_string(r.value("rank", 0)));
    fill_group_snapshot(s, *loaded.value(), ranks);
    return s;
  }

  double now_s() override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }
  // A rank's share of the cores: the ranks of a group on one machine divide them.
  int cpu_cores() override { return std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / ranks_); }

  nlohmann::json describe() override {
    nlohmann::json j = describe_;
    j["ranks"] = ranks_;
    j["measurement"] = "every window a fresh group of " + std::to_string(ranks_) +
                       " ranks (tunebench-cli run --ranks " + std::to_string(ranks_) +
                       "): the samples of all ranks over the group's wall time; start-up about " +
                       std::to_string(static_cast<int>(start_s_ + 0.5)) + " s per window, not in the window";
    if (!notes_.empty()) j["engine_warnings"] = notes_;
    return j;
  }
  // What --ranks is about: the communication knobs first, the bucket size before the rest.
  std::vector<std::string> first_knobs() const override { return ddp_knobs_first(); }
  std::string fresh_windows() const override { return "a fresh group of " + std::to_string(ranks_) + " ranks"; }

 private:
  FreshRun spec_for(int steps, bool traced) const {
    FreshRun spec;
    spec.ranks = ranks_;
    spec.dist_timeout_s = dist_timeout_s_;
    // Start-up, the collective timeout (a dead rank ends the others within it) and generous room for the
    // steps at the slowest rate seen; a trace costs its collection on top.
    const double per_step = last_step_s_ > 0 ? last_step_s_ : 1.0;
    spec.timeout_s = 120 + (dist_timeout_s_ > 0 ? dist_timeout_s_ : 60) +
                     (traced ? 2 : 1) * 20 * per_step * (steps + std::max(opts_.warmup_steps, 0));
    return spec;
  }

  measure::Window window(const Config& config, int steps) {
    FreshRun spec = spec_for(steps, false);
    spec.measured_steps = steps;
    const nlohmann::json doc = run_fresh(cli_, opts_, config, spec);
    const double ended = now_s();
    measure::Window w = window_of_run(doc);
    w.start_s = ended - w.wall_s;
    if (w.steps > 0) last_step_s_ = w.wall_s / w.steps;
    remember(doc);
    return w;
  }

  void remember(const nlohmann::json& doc) {
    for (const auto& w : doc.value("warnings", nlohmann::json::array()))
      if (w.is_string() && notes_.size() < 20 && std::find(notes_.begin(), notes_.end(), w.get<std::string>()) == notes_.end())
        notes_.push_back(w.get<std::string>());
  }

  SessionOptions opts_;
  int ranks_;
  int dist_timeout_s_;
  std::string cli_;
  Config baseline_, current_;
  std::vector<KnobState> knobs_;
  nlohmann::json describe_;
  std::vector<std::string> notes_;
  std::map<std::string, std::vector<double>> probe_cache_;
  double start_s_ = 0, last_step_s_ = 0;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace

std::unique_ptr<Workload> make_group_workload(const SessionOptions& options, int ranks, int dist_timeout_s) {
  if (ranks < 2) throw EngineError("a data-parallel tune needs at least 2 ranks");
  return std::make_unique<GroupWorkload>(options, ranks, dist_timeout_s);
}

}  // namespace tb::engine
