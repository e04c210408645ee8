// The tuner's Workload over a real engine Session (tuner/session_workload.h). Torch-free: it only uses the
// public Session API and the profiler's recorder, CUPTI collector and analyses.
#include "tuner/workloads/session_workload.h"

#include "engine/recording.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "client/loader_findings.h"
#include "client/loader_verdict.h"
#include "engine/cpu_allocator.h"
#include "engine/session.h"
#include "engine/run_json.h"
#include "engine/tuner.h"
#include "measure/stats.h"
#include "tuner/workloads/fresh_run.h"
#include "tuner/workloads/snapshot_fill.h"
#include "profiler/analysis.h"
#include "profiler/trace.h"

namespace tb::engine {
namespace {

// Process knobs never reach the in-process session: they are measured in fresh processes.
Config without_process_knobs(Config c, const Config& current) {
  for (auto& [k, v] : c) {
    const KnobInfo* info = find_knob(k);
    if (info && info->process_scope) {
      auto it = current.find(k);
      if (it != current.end()) v = it->second;
    }
  }
  return c;
}

}  // namespace

SessionWorkload::SessionWorkload(const SessionOptions& options, Session* live) : opts_(options) {
  // The tuner runs its own loss-drift guard (on fresh sessions, see loss_probe); the session's guard would
  // run again on every A/B switch of a numerics knob.
  opts_.drift_guard_steps = 0;
  if (live) {
    session_ = live;
  } else {
    const auto created = std::chrono::steady_clock::now();
    owned_ = Session::create(opts_);
    session_ = owned_.get();
    // A fresh `tunebench-cli run` also starts a process, loads LibTorch (~0.6 s), scans its data and writes its
    // result: with this session's creation alone the fresh processes of a CPU tune (mnist_cnn on a JPEG folder,
    // ~6 s each) were underestimated and its fresh final ran 9 s past a 120 s budget.
    start_s_ = 1.5 + 1.25 * std::chrono::duration<double>(std::chrono::steady_clock::now() - created).count();
  }
  baseline_ = session_->config();
  // Unless the user pinned the allocator, the baseline is what a newcomer's process runs (glibc's
  // defaults), measured in fresh processes; the in-process windows run under a steady allocator, because
  // glibc's defaults change speed at unpredictable moments of a long process (engine/cpu_allocator.h).
  if (!options.knobs.count("cpu_allocator")) {
    baseline_["cpu_allocator"] = "glibc";
    if (active_cpu_allocator() == "glibc") {
      try {
        session_->apply({{"cpu_allocator", "glibc_tuned"}});
      } catch (const EngineError& e) {
        notes_.push_back(std::string("could not pin the allocator for steady measurements: ") + e.what());
      }
    }
  }
  measurement_allocator_ = active_cpu_allocator();
  for (auto& w : session_->take_warnings()) notes_.push_back(w);
  t0_ = std::chrono::steady_clock::now();
}

void SessionWorkload::apply(const Config& requested) {
  Config changes;
  const Config& cur = session_->config();
  const Config config = without_process_knobs(requested, cur);
  for (const auto& [k, v] : config) {
    auto it = cur.find(k);
    if (it == cur.end() || it->second != v) changes[k] = v;
  }
  if (changes.empty()) return;
  try {
    session_->apply(changes);
  } catch (const EngineError& e) {
    throw TrialFailure(e.what(), mentions_oom(e.what()));
  }
  std::string oom;
  for (auto& w : session_->take_warnings()) {
    if (mentions_oom(w)) oom = w;
    else remember(w);
  }
  // The session reverts a batch size that does not fit (and says so); anything it did not take is a failure.
  for (const auto& [k, v] : changes) {
    const auto normalized = normalize_knob_value(k, v);
    const std::string want = normalized ? *normalized : v;
    if (session_->config().at(k) != want) {
      if (!oom.empty() || k == "batch_size")
        throw TrialFailure(oom.empty() ? "batch_size " + want + " does not fit in memory" : oom, true);
      throw TrialFailure("the engine kept " + k + "=" + session_->config().at(k) + " instead of " + want, false);
    }
  }
  if (!oom.empty()) throw TrialFailure(oom, true);
}

measure::Window SessionWorkload::measure(int steps) { return measure_capped(steps, 1e300); }

measure::Window SessionWorkload::measure_capped(int steps, double max_s) {
  const double started = now_s();
  measure::Window w;
  last_records_.clear();
  auto one = [&]() {
    StepRecord r;
    try {
      r = session_->step();
    } catch (const EngineError& e) {
      throw TrialFailure(e.what(), mentions_oom(e.what()));
    }
    for (auto& msg : session_->take_warnings()) {
      if (mentions_oom(msg)) throw TrialFailure(msg, true);
      remember(msg);
    }
    return r;
  };
  // Warm-up: until the session says the step time is stable (it caps the count itself).
  for (int guard = 0; session_->warming_up() && guard < 1000; ++guard) {
    one();
    ++w.warmup_steps;
  }
  // The window: device-synced at both ends, so queued work is inside it and not in the next one.
  session_->synchronize();
  const double t0 = now_s();
  w.start_s = t0;
  for (int i = 0; i < steps && (i == 0 || now_s() - started < max_s); ++i) {
    StepRecord r = one();
    last_records_.push_back(r);
    ++w.steps;
    w.samples += r.samples;
    w.minor_faults += r.minor_faults;
    w.data_wait_s += r.data_wait_ns * 1e-9;
    add_step_memory(w, r.memory);
  }
  session_->synchronize();
  w.wall_s = now_s() - t0;
  if (w.steps > 0) last_step_s_ = w.wall_s / w.steps;
  return w;
}

std::optional<measure::Window> SessionWorkload::measure_fresh(const Config& config, int steps) {
  const std::string cli = tunebench_cli_path();
  if (cli.empty()) return std::nullopt;
  FreshRun spec;
  spec.measured_steps = steps;
  // Deadline: start-up plus generous room for the warm-up and the window at the slowest rate seen.
  const double per_step = last_step_s_ > 0 ? last_step_s_ : 1.0;
  spec.timeout_s = 120 + 20 * per_step * (steps + opts_.max_warmup_steps);
  const nlohmann::json doc = run_fresh(cli, opts_, config, spec);
  const double ended = now_s();
  measure::Window w = window_of_run(doc);
  w.start_s = ended - w.wall_s;
  return w;
}

std::vector<double> SessionWorkload::loss_probe(const Config& config, int steps) {
  // Same seed, same initial weights, same batches.
  const Config probe = without_process_knobs(loss_probe_config(baseline_, config), session_->config());
  std::string key;
  for (const auto& [k, v] : probe) key += k + "=" + v + ";";
  if (auto it = probe_cache_.find(key); it != probe_cache_.end()) return it->second;
  std::vector<double> losses;
  try {
    SessionOptions o = opts_;
    o.knobs = probe;
    o.warmup_steps = 0;
    o.dist = {};  // a process of its own, never a second rank 0 of a running group (numerics, not topology)
    auto s = Session::create(o);
    for (int i = 0; i < steps; ++i) losses.push_back(s->step().loss);
  } catch (const EngineError& e) {
    restore_globals();
    throw TrialFailure(std::string("loss probe: ") + e.what(), mentions_oom(e.what()));
  }
  restore_globals();
  probe_cache_[key] = losses;
  return losses;
}

// The loader verdict of the snapshot's steps (the last measured window) from the loader's parts so far; the
// training's own CPU is not told apart here, so the cores bound only the loading.
client::LoaderVerdict SessionWorkload::snapshot_loader_verdict(const nlohmann::json& describe) const {
  const nlohmann::json parts =
      describe.contains("loader") ? describe["loader"].value("parts", nlohmann::json()) : nlohmann::json();
  int64_t samples = 0, wall = 0, wait = 0;
  for (const auto& r : last_records_) samples += r.samples, wall += r.wall_ns, wait += r.data_wait_ns;
  return client::loader_verdict(parts, samples, wall, wait, std::max(1, int(std::thread::hardware_concurrency())));
}

std::optional<Snapshot> SessionWorkload::snapshot(int steps) {
  Snapshot s;
  // Someone else recording (the GUI asked serve for a trace) keeps its records: the Capture is inactive.
  const bool cuda = session_->describe().value("/device/kind"_json_pointer, std::string()) == "cuda";
  Capture capture(cuda);
  const measure::Window window = measure(std::max(2, steps));
  std::unique_ptr<tb::prof::Trace> trace = capture.finish();
  std::vector<double> walls;
  int64_t data_wait = 0, h2d = 0, max_wait = 0;
  for (const auto& r : last_records_) {
    walls.push_back(r.wall_ns / 1e6);
    data_wait += r.data_wait_ns;
    h2d += r.h2d_ns;
    max_wait = std::max(max_wait, r.data_wait_ns);
  }
  const double n = std::max<size_t>(1, last_records_.size());
  s.throughput = window.throughput();
  s.step_ms = measure::median(walls);
  if (trace) {
    const nlohmann::json d = session_->describe();
    auto& extra = trace->meta().extra;
    extra["intra_op_threads"] = d.value("intra_op_threads", nlohmann::json(0)).dump();
    extra["workers"] = d.value("loader_workers", nlohmann::json(0)).dump();
    extra["cpu_allocator"] = d.value("cpu_allocator", std::string());
    tb::prof::AnalysisResult a = tb::prof::analyze(*trace);
    // The engine's loader timed its parts: the loader verdict's model is what the stall finding says (as in
    // `analyze` and the GUI), and a costly part with a knob of its own (decode: fast_decode) is a switch too.
    const client::LoaderVerdict v = snapshot_loader_verdict(d);
    client::apply_loader_verdict(v, a.findings);
    if (!a.steps.empty()) fill_snapshot(s, a);
    for (const auto& f : v.fixes())
      if (!f.knob.empty()) s.switches.push_back({f.knob, f.value, f.at_most});
    // What any worker count can give, by the same model: the tuner's prior for workers says no more.
    if (const client::LoaderAdvice a = v.advice(); a.known) s.caps.push_back({"workers", a.at_most});
    if (v.valid) s.loader = v.to_json();
  }
  if (s.breakdown_ms.empty()) {
    // No analysed steps: the step records still split data wait, copy and the rest.
    const double dw = data_wait / n / 1e6, hd = h2d / n / 1e6;
    s.breakdown_ms = {{"data wait", dw}, {"h2d", hd}, {"compute", std::max(0.0, s.step_ms - dw - hd)}};
    s.bottleneck = dw > 0.15 * s.step_ms ? "loader" : "compute";
    s.worst_stall_ms = max_wait / 1e6;
    s.worst_stall_kind = "data wait";
  }
  return s;
}

double SessionWorkload::now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}
int SessionWorkload::cpu_cores() { return std::max(1u, std::thread::hardware_concurrency()); }

nlohmann::json SessionWorkload::describe() {
  nlohmann::json j = report_environment(session_->describe());
  if (!notes_.empty()) j["engine_warnings"] = notes_;
  j["measurement_allocator"] = measurement_allocator_ +
                               (measurement_allocator_ == "glibc_tuned" && !opts_.knobs.count("cpu_allocator")
                                    ? " (pinned by the tuner for steady in-process windows; cpu_allocator is "
                                      "measured in fresh processes)"
                                    : "");
  return j;
}

void SessionWorkload::remember(const std::string& w) {
  if (notes_.size() < 20 && std::find(notes_.begin(), notes_.end(), w) == notes_.end()) notes_.push_back(w);
}

void SessionWorkload::restore_globals() {
  const std::string cur = session_->config().at("anomaly_detection");
  try {
    session_->apply({{"anomaly_detection", cur == "on" ? "off" : "on"}});
    session_->apply({{"anomaly_detection", cur}});
  } catch (const EngineError&) {
  }
  session_->take_warnings();
}

std::unique_ptr<Workload> make_session_workload(const SessionOptions& options) {
  return std::make_unique<SessionWorkload>(options);
}

}  // namespace tb::engine
