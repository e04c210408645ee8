#include "analysis_findings.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "analysis_cpu.h"
#include "knobs/table.h"

namespace tb::prof::detail {

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}
std::string fmt_ms(double ns) { return fmt("%.3f ms", ns / 1e6); }
std::string fmt_pct(double s) { return fmt("%.1f%%", s * 100.0); }

// XProf's input-pipeline grades, by the share of the step spent waiting for input (client/loader_verdict.cpp
// grades a script's loader verdict the same way), and the other half of XProf's input time: the batches'
// host-to-device copies (our h2d range; Kineto: HtoD memcpy GPU time), a share of the same time.
std::string input_grade(double wait_share, int64_t h2d_ns, double window_ns) {
  std::string g = wait_share >= 0.20 ? "highly input-bound" : wait_share >= 0.05 ? "moderately input-bound" : "";
  if (!g.empty()) g = "; " + g + " by XProf's grades (20% of the step highly, 5% moderately)";
  if (h2d_ns > 0) g += "; host-to-device copies " + fmt_pct(double(h2d_ns) / window_ns) + " more (transfer, not host)";
  return g;
}
double bound(double share) { return share >= 0.999999 ? 1e6 : 1.0 / (1.0 - std::max(0.0, share)); }

namespace {

Finding make(FindingKind kind, const char* knob, std::string value, std::vector<std::string> also, double share,
             Interval evidence) {
  Finding f;
  f.kind = kind;
  f.id = to_string(kind);
  f.knob = knob;
  f.value = std::move(value);
  f.also = std::move(also);
  f.share = share;
  f.max_speedup = bound(share);
  f.evidence = evidence;
  return f;
}

}  // namespace

Finding loader_stall_finding(const Trace& trace, double share, Interval evidence) {
  // Our traces record the training machine's cores: more loader threads than cores only compete with the
  // step. Traces from elsewhere (Kineto) get the common starting point, 4.
  int workers = 4;
  if (auto it = trace.meta().extra.find("cpu_cores"); it != trace.meta().extra.end()) {
    const int cores = std::atoi(it->second.c_str());
    if (cores > 0) workers = std::clamp(cores, 1, 8);
  }
  return make(FindingKind::LoaderStall, "workers", std::to_string(workers), {"prefetch", "pin_memory"}, share, evidence);
}

namespace {

// The message's last clause: the Amdahl bound, or why none is given.
std::string gain(const Finding& f, const AnalysisResult& r, const AnalysisOptions& opt) {
  if (r.trusted) return "at most " + fmt("%.2fx", f.max_speedup);
  if (r.steps.empty()) return "no gain bounded: the trace has no steps";
  return "no gain bounded: " + std::to_string(r.steps.size()) + " step(s), need " + std::to_string(opt.min_trusted_steps);
}

// Compute capability from Kineto's deviceProperties (computeMajor), -1 unknown.
int compute_major(const Trace& trace) {
  auto it = trace.meta().extra.find("compute_capability");
  return it == trace.meta().extra.end() ? -1 : std::atoi(it->second.c_str());
}

// The knobs a script run has (the launcher's and the interpreter's allocator): the knob table's.
const std::set<std::string>& script_knobs() {
  static const std::set<std::string> s = [] {
    std::set<std::string> ids;
    for (const auto& row : knobs::table())
      if (knobs::script_has(row)) ids.insert(row.id);
    return ids;
  }();
  return s;
}

// What a script (or a trace from elsewhere) is told where the engine would be given a knob it does not have:
// the code change in words, and the script knob that comes closest.
struct Remedy {
  const char* words;          // the "-> ..." clause
  const char* script_knob;    // "" when no script knob does it
  const char* script_value;
};
const Remedy* remedy_for(const std::string& engine_knob) {
  static const std::pair<const char*, Remedy> table[] = {
      {"sync_free_logging",
       {"read the loss on the host every N steps instead of loss.item() (or a metric's .item()) each step: a code "
        "change", "", ""}},
      {"cuda_graphs",
       {"torch.compile (compile=on; mode=\"reduce-overhead\" replays CUDA graphs) / a bigger batch (the DataLoader's "
        "batch_size and the learning rate: a code change) / a fused optimizer (foreach=True or fused=True)",
        "compile", "on"}},
  };
  for (const auto& [k, r] : table)
    if (engine_knob == k) return &r;
  return nullptr;
}

// A finding proposes only what exists for the run its trace came from
// (TraceMetadata::extra["tunebench_run"]: "engine" from the recorder, "script" from the launcher): the
// engine's knobs for an engine run, the launcher's for a script, and words for a trace from elsewhere (no
// run to switch a knob on). An analysis of a public ImageNet script once offered `sync_free_logging`, an
// engine knob no script has.
}  // namespace

void fit_to_run(const Trace& trace, std::vector<Finding>& findings) {
  const auto it = trace.meta().extra.find("tunebench_run");
  std::string run = it == trace.meta().extra.end() ? "" : it->second;
  // Traces the engine's recorder wrote before it named its run are in TuneBench's own format.
  if (run.empty() && trace.meta().source_format == "tunebench") run = "engine";
  if (run == "engine") return;
  for (Finding& f : findings) {
    if (f.knob.empty()) continue;
    const bool script = run == "script";
    if (script) {
      std::vector<std::string> also;
      for (const auto& a : f.also)
        if (script_knobs().count(a)) also.push_back(a);
      f.also = also;
      if (script_knobs().count(f.knob)) continue;
    }
    const Remedy* rem = remedy_for(f.knob);
    if (rem) {
      // The "-> ...; " clause before the bound names the change.
      const size_t a = f.message.find("-> "), b = f.message.rfind("; ");
      if (a != std::string::npos && b != std::string::npos && b > a)
        f.message = f.message.substr(0, a + 3) + rem->words + f.message.substr(b);
    }
    if (script && rem && rem->script_knob[0]) {
      f.knob = rem->script_knob;
      f.value = rem->script_value;
    } else {
      f.knob.clear();
      f.value.clear();
      if (!script) f.also.clear();
    }
  }
}

void add_tensor_core_finding(const Trace& trace, const AnalysisOptions& opt, int64_t mm_total, int64_t mm_tc,
                             int64_t compute_total, AnalysisResult& r) {
  const int64_t window_len = r.traced_ns() - r.profiler_ns;  // the program's own time, as add_findings
  if (mm_total <= 0 || compute_total <= 0 || window_len <= 0 || r.tensor_core_share >= 0.5) return;
  if (r.matmul_share < 0.2) return;
  const int cc = compute_major(trace);
  if (cc >= 0 && cc < 7) return;  // no Tensor Cores before Volta
  // Non-Tensor-Core matmul time as a share of the window: its share of compute kernel time, scaled by the
  // compute union's share of the window (kernels on several streams overlap).
  const double share = std::min(1.0, static_cast<double>(mm_total - mm_tc) / static_cast<double>(compute_total) *
                                         (static_cast<double>(r.compute_ns) / static_cast<double>(window_len)));
  if (share < opt.finding_min_share) return;
  std::vector<std::string> also = {"channels_last"};
  if (cc < 0 || cc >= 8) also.insert(also.begin(), "tf32");  // TF32 needs Ampere or later
  Finding f = make(FindingKind::LowTensorCore, "amp", "fp16", also, share, r.window);
  f.message = "matmul/conv kernels take " + fmt_pct(r.matmul_share) + " of compute kernel time, only " +
              fmt_pct(r.tensor_core_share) + " of it on Tensor Cores -> amp" + (also.size() > 1 ? " / tf32" : "") +
              " / channels_last; " + gain(f, r, opt);
  f.bounded = r.trusted;
  r.findings.push_back(std::move(f));
}

void add_findings(const Trace& trace, const AnalysisOptions& opt, const Evidence& ev, AnalysisResult& r) {
  // Shares and bounds are of the program's own time: the profiler's own (r.profiler_ns) is in no class of the
  // program's and would only shrink every share it is not in.
  const int64_t window_len = r.own_ns();
  const double wl = window_len > 0 ? static_cast<double>(window_len) : 1.0;
  const char* span = r.window_from_steps ? "step time" : "the analysed window";
  auto push = [&](Finding f, const std::string& text) {
    f.message = text + gain(f, r, opt);
    f.bounded = r.trusted;
    r.findings.push_back(std::move(f));
  };

  if (r.loader_stall_ns > 0 && r.loader_stall_ns / wl >= opt.finding_min_share) {
    const double share = r.loader_stall_ns / wl;
    const int64_t h2d = r.input_copy_ns();
    push(loader_stall_finding(trace, share, ev.stall),
         std::string(r.has_gpu ? "GPU waited for the loader " : "training thread waited for data ") + fmt_pct(share) +
             " of " + span + " (" + fmt_ms(r.loader_stall_ns) + " in " + std::to_string(r.loader_stall_count) +
             " intervals" + input_grade(share, h2d, wl) + ") -> workers / prefetch / pin_memory; ");
  }
  if (r.launch_gap_ns > 0 && r.launch_gap_ns / wl >= opt.finding_min_share) {
    const double share = r.launch_gap_ns / wl;
    // Time the launching thread recorded nothing: no CPU op to blame, the profiler did not see the host.
    std::string unrecorded;
    if (r.launch_gap_unrecorded_ns > 0)
      unrecorded = "; " + fmt_ms(r.launch_gap_unrecorded_ns) + " of it with no host time recorded on the launching "
                   "thread (Python or code outside the recorded ops: profile with stack/ranges to see it)";
    push(make(FindingKind::LaunchGap, "cuda_graphs", "on", {"batch_size", "fused_pointwise", "fused_optimizer"}, share,
              ev.gap),
         "GPU idle waiting for the host to launch " + fmt_pct(share) + " of " + span + " (" + fmt_ms(r.launch_gap_ns) +
             " in " + std::to_string(r.launch_gap_count) + " gaps" + unrecorded +
             ") -> cuda_graphs / bigger batch_size / fused ops; ");
  }
  if (r.sync_idle_ns > 0 && r.sync_idle_ns / wl >= opt.finding_min_share) {
    // Bounded by the GPU idle time the syncs cause, not by the host's time in them: a sync while the GPU is
    // busy costs the GPU nothing.
    const double share = r.sync_idle_ns / wl;
    push(make(FindingKind::SyncPoints, "sync_free_logging", "20", {}, share, ev.sync),
         "GPU idle after the host blocked on it " + fmt_pct(share) + " of " + span + " (" + fmt_ms(r.sync_idle_ns) +
             "; " + std::to_string(r.sync_count) + " sync points, " + fmt_ms(r.sync_ns) +
             " host time) -> sync_free_logging; ");
  }
  if (r.comm_exposed_ns > 0 && r.comm_exposed_ns / wl >= opt.finding_min_share) {
    const double share = r.comm_exposed_ns / wl;
    push(make(FindingKind::ExposedComm, "", "", {}, share, ev.comm),
         "communication not overlapped with compute " + fmt_pct(share) + " of " + span + " (" +
             fmt_ms(r.comm_exposed_ns) + " of " + fmt_ms(r.comm_ns) + " communication, " +
             fmt_pct(std::max(0.0, r.comm_overlap)) +
             " overlapped) -> overlap it with compute (DDP bucket size, fewer and larger collectives); ");
  }
  if (r.runtime_idle_ns > 0 && r.runtime_idle_ns / wl >= opt.finding_min_share) {
    const double share = r.runtime_idle_ns / wl;
    // A graph instantiated in most steps is one of those calls every step: warming up does not remove it.
    const CudaGraphCaptures& c = r.cuda_graphs.capture;
    const bool instantiating =
        r.cuda_graphs.steps >= 2 && c.instantiations + c.updates > 0 && c.steps_with * 2 > r.cuda_graphs.steps &&
        c.late_steps_with * 2 > r.cuda_graphs.steps - r.cuda_graphs.steps / 2;
    push(make(FindingKind::RuntimeCalls, "", "", {}, share, ev.runtime),
         "GPU idle while the host sat in allocation/setup CUDA calls (cudaMalloc, cudaFree, stream creation, lazy "
         "kernel loading" + std::string(instantiating ? ", CUDA graph instantiation" : "") + ") " + fmt_pct(share) +
             " of " + span + " (" + fmt_ms(r.runtime_idle_ns) + ") -> " +
             (instantiating ? "instantiate the CUDA graph once (cuda_graph_recapture), " : "") +
             "warm up before measuring, keep memory cached (no empty_cache in the loop); not a launch gap; ");
  }
  if (r.event_wait_ns > 0 && r.event_wait_ns / wl >= opt.finding_min_share) {
    // Each wait costs the time from the other stream's work ending to the waiting work starting: fewer,
    // larger dependencies (DDP buckets) or a captured graph pay it less often.
    const double share = r.event_wait_ns / wl;
    std::vector<std::string> also;
    if (r.comm_ns > 0) also.push_back("bucket_cap_mb");
    also.push_back("cuda_graphs");
    push(make(FindingKind::EventWait, "", "", also, share, ev.event_wait),
         "GPU idle while queued work waited on another stream " + fmt_pct(share) + " of " + span + " (" +
             fmt_ms(r.event_wait_ns) + " in " + std::to_string(r.event_wait_count) +
             " cross-stream waits) -> fewer cross-stream dependencies: larger DDP buckets, fewer stream "
             "syncs/record_stream, CUDA graphs; ");
  }
  add_host_findings(trace, opt, r);
  fit_to_run(trace, r.findings);
  std::stable_sort(r.findings.begin(), r.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.share > b.share; });

  const TraceMetadata& m = trace.meta();
  if (!r.has_gpu && r.launches > 0) {
    Finding f;
    f.kind = FindingKind::GpuNotRecorded;
    f.id = to_string(f.kind);
    f.message = std::to_string(r.launches) + " kernel launches on the host but no GPU activity in the trace: the "
                "GPU side was not recorded (CUPTI activity off?); GPU idle and launch gaps cannot be analysed";
    f.evidence = r.window;
    r.findings.insert(r.findings.begin(), std::move(f));
  }
  if (m.collector_state == "off" || m.collector_state == "not built") {
    Finding f;
    f.kind = FindingKind::CollectorOff;
    f.id = to_string(f.kind);
    // The reason often says "CPU-only timeline" itself; say it once.
    const std::string& why = m.collector_reason;
    f.message = "GPU collector " + m.collector_state + (why.empty() ? "" : ": " + why) +
                (why.find("CPU-only") == std::string::npos ? " - CPU-only timeline" : "");
    f.evidence = r.window;
    r.findings.insert(r.findings.begin(), std::move(f));
  }
  if (m.dropped_records > 0) {
    Finding f;
    f.kind = FindingKind::DroppedRecords;
    f.id = to_string(f.kind);
    f.message = std::to_string(m.dropped_records) + " records were dropped while recording: totals are lower bounds";
    f.evidence = r.window;
    r.findings.push_back(std::move(f));
  }
}

void add_idle_notes(const Trace& trace, AnalysisResult& r) {
  const double idle = static_cast<double>(std::max<int64_t>(1, r.gpu_idle_ns));
  auto at = [&](int64_t t) { return "+" + fmt_ms(t - r.window.t0); };  // relative to the window's start
  if (r.has_gpu && r.event_wait_count > 0) {
    std::string b = "cross-stream waits: " + fmt_ms(r.event_wait_ns) + " of GPU idle (" +
                    fmt_pct(static_cast<double>(r.event_wait_ns) / idle) + " of the idle) in " +
                    std::to_string(r.event_wait_count) + " intervals where queued work waited on another stream";
    const EventWait* longest = nullptr;
    for (const EventWait& w : r.event_waits)
      if (!longest || w.idle.length() > longest->idle.length()) longest = &w;
    if (longest) {
      b += "; longest " + fmt_ms(longest->idle.length()) + " at " + at(longest->idle.t0) + ": stream " +
           std::to_string(longest->stream) + " after stream " + std::to_string(longest->after_stream) + ", " +
           longest->wait + " at " + at(longest->wait_ns);
      if (longest->event_record >= 0) b += " on the event recorded by correlation " + std::to_string(longest->event_record);
    }
    r.notes.push_back(b);
  }
  if (r.has_gpu && r.launch_gap_unrecorded_ns > 0 && r.launch_gap_ns > 0) {
    r.notes.push_back(
        "host time not recorded: " + fmt_ms(r.launch_gap_unrecorded_ns) + " of the " + fmt_ms(r.launch_gap_ns) +
        " launch gap (" + fmt_pct(static_cast<double>(r.launch_gap_unrecorded_ns) / static_cast<double>(r.launch_gap_ns)) +
        ", " + std::to_string(r.launch_gap_unrecorded_count) +
        " gaps) passed while the launching thread recorded no op and no runtime call (Python or code the profiler "
        "does not instrument): no CPU op can be blamed for it; largest " +
        fmt_ms(r.launch_gap_unrecorded_largest.length()) + " at " + at(r.launch_gap_unrecorded_largest.t0));
  }
  // A Kineto trace numbers its events ("Ev Idx"); a file holding fewer than it numbered was sampled or filtered.
  const auto& x = trace.meta().extra;
  auto kept_it = x.find("ev_idx_events"), span_it = x.find("ev_idx_span");
  const bool partial = kept_it != x.end() && span_it != x.end() &&
                       std::atoll(span_it->second.c_str()) > std::atoll(kept_it->second.c_str());
  if (partial) {
    r.notes.push_back("this file holds " + kept_it->second + " of the " + span_it->second +
                      " events its profiler numbered (Kineto's \"Ev Idx\" skips): a sampled or filtered trace; GPU "
                      "work, stream waits and host calls are missing, so every figure is a lower bound");
  }
  if (r.has_gpu && r.other_idle_ns > 0) {
    const double share = static_cast<double>(r.other_idle_ns) / idle;
    std::string b = "GPU idle with no named cause (other): " + fmt_ms(r.other_idle_ns) + ", " + fmt_pct(share) +
                    " of the idle; the named causes explain " + fmt_pct(1.0 - share);
    if (share >= 0.1)
      b += partial ? " (queued work waited with nothing recorded holding it: most likely the events this file lacks)"
                   : " (queued work waited with nothing recorded holding it: same-stream start latency, a dependency "
                     "on another device or host callback, or events missing from the trace)";
    r.notes.push_back(b);
  }
}

}  // namespace tb::prof::detail

namespace tb::prof {

int64_t AnalysisResult::input_copy_ns() const {
  int64_t h2d = 0;
  for (const auto& s : steps) h2d += s.h2d_ns;
  return h2d;
}

}  // namespace tb::prof
