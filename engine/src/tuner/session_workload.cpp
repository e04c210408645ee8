// The tuner's Workload over a real engine Session (engine/tuner.h make_session_workload). Torch-free: it
// only uses the public Session API and the profiler's recorder, CUPTI collector and analyses.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <thread>

#include "engine/cpu_allocator.h"
#include "engine/session.h"
#include "engine/tuner.h"
#include "measure/stats.h"
#include "tuner/child_process.h"
#include "profiler/analysis.h"
#include "profiler/cupti_collector.h"
#include "profiler/recorder.h"
#include "profiler/trace.h"

namespace tb::engine {
namespace {

bool mentions_oom(const std::string& s) {
  return s.find("out of memory") != std::string::npos || s.find("can't allocate memory") != std::string::npos;
}

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

std::string config_arg(const Config& c) {
  std::string s;
  for (const auto& [k, v] : c) s += (s.empty() ? "" : ",") + k + "=" + v;
  return s;
}

class SessionWorkload : public Workload {
 public:
  explicit SessionWorkload(const SessionOptions& options) : opts_(options) {
    // The tuner runs its own loss-drift guard (on fresh sessions, see loss_probe); the session's guard would
    // run again on every A/B switch of a numerics knob.
    opts_.drift_guard_steps = 0;
    session_ = Session::create(opts_);
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

  std::vector<KnobState> knobs() override { return session_->knobs(); }
  Config baseline() override { return baseline_; }

  void apply(const Config& requested) override {
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
      std::string want = v;
      normalize_knob_value(k, want);
      if (session_->config().at(k) != want) {
        if (!oom.empty() || k == "batch_size")
          throw TrialFailure(oom.empty() ? "batch_size " + want + " does not fit in memory" : oom, true);
        throw TrialFailure("the engine kept " + k + "=" + session_->config().at(k) + " instead of " + want, false);
      }
    }
    if (!oom.empty()) throw TrialFailure(oom, true);
  }

  measure::Window measure(int steps) override {
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
    for (int i = 0; i < steps; ++i) {
      StepRecord r = one();
      last_records_.push_back(r);
      ++w.steps;
      w.samples += r.samples;
      w.minor_faults += r.minor_faults;
      w.data_wait_s += r.data_wait_ns * 1e-9;
    }
    session_->synchronize();
    w.wall_s = now_s() - t0;
    if (w.steps > 0) last_step_s_ = w.wall_s / w.steps;
    return w;
  }

  std::optional<measure::Window> measure_fresh(const Config& config, int steps) override {
    char exe[4096];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) throw TrialFailure("cannot find this program to start a fresh process", false);
    exe[n] = 0;
    // Only tunebench-cli can run `run`: a test binary embedding the engine cannot start fresh processes.
    const std::string self(exe);
    const std::string cli = std::getenv("TUNEBENCH_CLI") ? std::getenv("TUNEBENCH_CLI")
                            : self.size() >= 13 && self.substr(self.size() - 13) == "tunebench-cli" ? self
                                                                                                    : "";
    if (cli.empty()) return std::nullopt;
    char json_path[] = "/tmp/tunebench-fresh-XXXXXX";
    const int fd = mkstemp(json_path);
    if (fd < 0) throw TrialFailure("cannot create a temporary file", false);
    close(fd);
    std::vector<std::string> argv = {cli, "run", "--model", opts_.model, "--data", opts_.data, "--device", opts_.device,
                                     "--seed", std::to_string(opts_.seed), "--warmup", std::to_string(opts_.warmup_steps),
                                     "--drift-steps", "0", "--measured-steps", std::to_string(steps), "--json", json_path,
                                     "--set", config_arg(config)};
    if (opts_.input_channels > 0)
      argv.insert(argv.end(), {"--input", std::to_string(opts_.input_channels) + "," + std::to_string(opts_.input_height) +
                                              "," + std::to_string(opts_.input_width)});
    if (opts_.num_classes > 0) argv.insert(argv.end(), {"--classes", std::to_string(opts_.num_classes)});
    // Deadline: start-up plus generous room for the warm-up and the window at the slowest rate seen.
    const double per_step = last_step_s_ > 0 ? last_step_s_ : 1.0;
    const double timeout = 120 + 20 * per_step * (steps + opts_.max_warmup_steps);
    const double started = now_s();
    ChildResult r = run_child(argv, environment_without_allocator(), timeout);
    const double ended = now_s();
    nlohmann::json j;
    {
      std::ifstream f(json_path);
      if (f) try {
          f >> j;
        } catch (...) {
        }
    }
    unlink(json_path);
    if (!r.started) throw TrialFailure("fresh process: " + r.error, false);
    if (r.timed_out) throw TrialFailure("fresh process: no result within " + std::to_string(int(timeout)) + " s", false);
    if (r.exit_code != 0 || !j.contains("window")) {
      const std::string why = r.stderr_tail.empty() ? "exit code " + std::to_string(r.exit_code) : r.stderr_tail;
      throw TrialFailure("fresh process: " + why, mentions_oom(why));
    }
    const auto& jw = j["window"];
    measure::Window w;
    w.steps = jw.value("steps", 0);
    w.samples = jw.value("samples", int64_t(0));
    w.wall_s = jw.value("wall_s", 0.0);
    w.warmup_steps = jw.value("warmup_steps", 0);
    w.minor_faults = jw.value("minor_faults", int64_t(0));
    w.start_s = std::max(started, ended - w.wall_s);
    (void)started;
    return w;
  }

  std::vector<double> loss_probe(const Config& config, int steps) override {
    // Same seed, same initial weights, same batches: the baseline's loader settings (deterministic order)
    // with the numerics-changing knobs of `config`, the loss read every step.
    Config probe = baseline_;
    for (const auto& [k, v] : config) {
      const KnobInfo* info = find_knob(k);
      if (info && info->changes_numerics) probe[k] = v;
    }
    probe["sync_free_logging"] = "1";
    probe = without_process_knobs(probe, session_->config());
    std::string key;
    for (const auto& [k, v] : probe) key += k + "=" + v + ";";
    if (auto it = probe_cache_.find(key); it != probe_cache_.end()) return it->second;
    std::vector<double> losses;
    try {
      SessionOptions o = opts_;
      o.knobs = probe;
      o.warmup_steps = 0;
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

  std::optional<Snapshot> snapshot(int steps) override {
    Snapshot s;
    auto& rec = tb::prof::Recorder::instance();
    // Someone else is recording (the GUI asked serve for a trace): do not steal their records.
    const bool record = !rec.enabled();
    const bool cuda = session_->describe().value("/device/kind"_json_pointer, std::string()) == "cuda";
    bool cupti = false;
    if (record) {
      if (cuda) cupti = tb::prof::CuptiCollector::instance().start().ok();
      rec.start();
    }
    measure::Window window;
    try {
      window = measure(std::max(2, steps));
    } catch (...) {
      if (record) {
        rec.stop();
        rec.collect();
        if (cupti) tb::prof::CuptiCollector::instance().stop();
      }
      throw;
    }
    std::unique_ptr<tb::prof::Trace> trace;
    if (record) {
      rec.stop();
      trace = rec.collect();
      if (cupti) {
        auto gpu = tb::prof::CuptiCollector::instance().collect();
        tb::prof::CuptiCollector::instance().stop();
        if (gpu && trace) trace->merge(*gpu);
      }
    }
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
      const tb::prof::AnalysisResult a = tb::prof::analyze(*trace);
      if (!a.steps.empty()) fill_from_analysis(s, a);
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

  double now_s() override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }
  int cpu_cores() override { return std::max(1u, std::thread::hardware_concurrency()); }

  std::string measurement_allocator() const override { return measurement_allocator_; }
  nlohmann::json describe() override {
    nlohmann::json j = session_->describe();
    // The report wants one readable device line; the details stay under device_info.
    if (j.contains("device") && j["device"].is_object()) {
      const auto d = j["device"];
      std::string kind = d.value("kind", std::string("?")), name = d.value("name", std::string());
      std::string line = kind + (name.empty() ? "" : ": " + name);
      if (d.contains("cores")) line += " (" + d["cores"].dump() + " cores)";
      if (d.contains("sm")) line += " (sm " + d["sm"].dump() + ")";
      j["device_info"] = d;
      j["device"] = line;
    }
    for (const char* k : {"loader", "skipped_steps", "nan_losses", "optimizer_steps", "drift_checks", "parameters"})
      j.erase(k);
    if (!notes_.empty()) j["engine_warnings"] = notes_;
    j["measurement_allocator"] = measurement_allocator_ +
                                 (measurement_allocator_ == "glibc_tuned" && !opts_.knobs.count("cpu_allocator")
                                      ? " (pinned by the tuner for steady in-process windows; cpu_allocator is "
                                        "measured in fresh processes)"
                                      : "");
    return j;
  }

 private:
  void remember(const std::string& w) {
    if (notes_.size() < 20 && std::find(notes_.begin(), notes_.end(), w) == notes_.end()) notes_.push_back(w);
  }

  // A probe session set process-wide switches (anomaly mode, TF32, cuDNN autotuner) for itself and its
  // destructor reset some; re-applying one knob and back makes the main session set all of them again.
  void restore_globals() {
    const std::string cur = session_->config().at("anomaly_detection");
    try {
      session_->apply({{"anomaly_detection", cur == "on" ? "off" : "on"}});
      session_->apply({{"anomaly_detection", cur}});
    } catch (const EngineError&) {
    }
    session_->take_warnings();
  }

  void fill_from_analysis(Snapshot& s, const tb::prof::AnalysisResult& a) {
    const double n = static_cast<double>(a.steps.size());
    auto mean = [&](int64_t tb::prof::StepBreakdown::*f) {
      double t = 0;
      for (const auto& st : a.steps) t += static_cast<double>(st.*f);
      return t / n / 1e6;
    };
    double dur = 0;
    for (const auto& st : a.steps) dur += static_cast<double>(st.duration_ns());
    dur = dur / n / 1e6;
    if (a.has_gpu) {
      const double busy = mean(&tb::prof::StepBreakdown::gpu_busy_ns);
      const double stall = mean(&tb::prof::StepBreakdown::loader_stall_ns);
      const double gap = mean(&tb::prof::StepBreakdown::launch_gap_ns);
      // Idle with no loader or launch cause: after syncs, runtime calls, cross-stream waits, unexplained.
      const double other = mean(&tb::prof::StepBreakdown::other_idle_ns) + mean(&tb::prof::StepBreakdown::event_wait_ns) +
                           mean(&tb::prof::StepBreakdown::sync_idle_ns) + mean(&tb::prof::StepBreakdown::runtime_idle_ns);
      const double sync = mean(&tb::prof::StepBreakdown::sync_ns);
      s.breakdown_ms = {{"GPU busy", busy}, {"loader stall", stall}, {"launch gaps", gap}, {"other idle", other}};
      if (busy >= 0.85 * dur) s.bottleneck = "compute";
      else if (stall >= gap && stall >= other) s.bottleneck = "loader";
      else if (gap >= other) s.bottleneck = "launch";
      else s.bottleneck = sync > 0.5 * other ? "sync" : "compute";
      int64_t worst = 0;
      std::string kind;
      for (const auto& iv : a.loader_stall_intervals)
        if (iv.length() > worst) { worst = iv.length(); kind = "loader stall"; }
      for (const auto& iv : a.launch_gap_intervals)
        if (iv.length() > worst) { worst = iv.length(); kind = "launch gap"; }
      s.worst_stall_ms = worst / 1e6;
      s.worst_stall_kind = kind.empty() ? "none" : kind;
    } else {
      const double dw = mean(&tb::prof::StepBreakdown::data_wait_ns);
      const double hd = mean(&tb::prof::StepBreakdown::h2d_ns);
      const double fw = mean(&tb::prof::StepBreakdown::forward_ns);
      const double bw = mean(&tb::prof::StepBreakdown::backward_ns);
      const double op = mean(&tb::prof::StepBreakdown::optimizer_ns);
      s.breakdown_ms = {{"data wait", dw}, {"h2d", hd},        {"forward", fw},
                        {"backward", bw},  {"optimizer", op}, {"other", std::max(0.0, dur - dw - hd - fw - bw - op)}};
      s.bottleneck = dw > 0.15 * dur ? "loader" : "compute";
      int64_t worst = 0;
      for (const auto& st : a.steps) worst = std::max(worst, st.data_wait_ns);
      s.worst_stall_ms = worst / 1e6;
      s.worst_stall_kind = "data wait";
    }
    if (s.step_ms <= 0) s.step_ms = dur;
    for (const auto& f : a.findings) {
      if (s.findings.size() >= 3) break;
      s.findings.push_back(f.message + (f.knob.empty() ? "" : " (try " + f.knob + "=" + f.value + ")"));
    }
    if (s.findings.empty()) s.findings.push_back("the analyses found no stall worth a finding");
  }

  SessionOptions opts_;
  std::unique_ptr<Session> session_;
  Config baseline_;
  std::vector<std::string> notes_;
  std::vector<StepRecord> last_records_;
  std::string measurement_allocator_;
  double last_step_s_ = 0;
  std::map<std::string, std::vector<double>> probe_cache_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace

std::unique_ptr<Workload> make_session_workload(const SessionOptions& options) {
  return std::make_unique<SessionWorkload>(options);
}

}  // namespace tb::engine
