// analyze() as named passes run in order over one state (analysis_passes.h): the scope, the GPU side, the steps
// and window, the host side, the classes of time, the statistics, memory, the findings and the notes.
#include "profiler/analysis.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "analysis_findings.h"
#include "analysis_graphs.h"
#include "analysis_idle.h"
#include "analysis_memory.h"
#include "analysis_intervals.h"
#include "analysis_names.h"
#include "analysis_passes.h"
#include "analysis_stats.h"
#include "analysis_steps.h"

namespace tb::prof {

const char* to_string(FindingKind k) {
  switch (k) {
    case FindingKind::LoaderStall: return "loader_stall";
    case FindingKind::LaunchGap: return "launch_gap";
    case FindingKind::SyncPoints: return "sync_points";
    case FindingKind::LowTensorCore: return "low_tensor_core";
    case FindingKind::CollectorOff: return "collector_off";
    case FindingKind::DroppedRecords: return "dropped_records";
    case FindingKind::AllocatorBound: return "allocator_bound";
    case FindingKind::Oversubscribed: return "oversubscribed";
    case FindingKind::ExposedComm: return "exposed_communication";
    case FindingKind::GpuNotRecorded: return "gpu_not_recorded";
    case FindingKind::RuntimeCalls: return "runtime_calls";
    case FindingKind::EventWait: return "event_wait";
    case FindingKind::Straggler: return "straggler";
    case FindingKind::MemoryFragmentation: return "memory_fragmentation";
    case FindingKind::MemoryGrowth: return "memory_growth";
    case FindingKind::OutsideTraining: return "outside_training";
    case FindingKind::StepTimeDrift: return "step_time_drift";
    case FindingKind::CompileTime: return "compile_time";
    case FindingKind::Recompiles: return "recompiles";
    case FindingKind::GraphBreak: return "graph_break";
    case FindingKind::GraphRecapture: return "cuda_graph_recapture";
  }
  return "?";
}

namespace {

using iv::Intervals;
namespace nc = name_class;
using detail::Activity;
using detail::ActClass;
using detail::GpuSide;
using detail::HostSide;
using detail::IdlePieces;
using detail::in_scope;
using detail::kernel_statistics;
using detail::launch_outliers;
using detail::op_statistics;

// Step of the launch at time t: the last step starting at or before t whose end is after t; -1 none.
int step_of(const std::vector<StepBreakdown>& steps, int64_t t) {
  auto it = std::upper_bound(steps.begin(), steps.end(), t,
                             [](int64_t x, const StepBreakdown& s) { return x < s.start_ns; });
  if (it == steps.begin()) return -1;
  --it;
  return t < it->end_ns ? static_cast<int>(it - steps.begin()) : -1;
}

// GPU spans of the steps: the work each step launched (correlation ids), from the end of the previous
// step's work to the end of its own. Returns false when no work could be attributed (spans = the steps).
bool attribute_gpu_work(const Trace& trace, const GpuSide& g, int64_t pid, std::vector<StepBreakdown>& steps) {
  std::vector<int64_t> last_end(steps.size(), INT64_MIN);
  std::vector<uint32_t> kernels(steps.size(), 0);
  bool any = false;
  for (const Activity& a : g.acts) {
    const Flow* f = trace.flow_to(a.track, a.event);
    if (!f || (pid >= 0 && trace.track(f->src_track).pid() != pid)) continue;
    const int si = step_of(steps, trace.track(f->src_track).events()[f->src_event].start_ns);
    if (si < 0) continue;
    any = true;
    last_end[si] = std::max(last_end[si], a.end);
    if (trace.track(a.track).events()[a.event].kind == EventKind::Kernel) ++kernels[si];
  }
  int64_t prev = steps.empty() ? 0 : steps.front().start_ns;
  for (size_t i = 0; i < steps.size(); ++i) {
    StepBreakdown& s = steps[i];
    if (!any) {
      s.gpu_start_ns = s.start_ns;
      s.gpu_end_ns = s.end_ns;
      continue;
    }
    s.gpu_start_ns = prev;
    s.gpu_end_ns = std::max(prev, last_end[i] != INT64_MIN ? last_end[i] : s.end_ns);
    if (i + 1 == steps.size()) s.gpu_end_ns = std::max(s.gpu_end_ns, s.end_ns);  // the last one reaches the window's end
    s.kernel_count = kernels[i];
    prev = s.gpu_end_ns;
  }
  return any;
}

void per_step(const GpuSide& g, const HostSide& h, const IdlePieces& p, AnalysisResult& r) {
  std::vector<int64_t> kernel_starts;
  for (const Activity& a : g.acts)
    if (a.cls != ActClass::Memory) kernel_starts.push_back(a.start);
  const bool by_time = std::all_of(r.steps.begin(), r.steps.end(), [](const StepBreakdown& s) {
    return s.gpu_start_ns == s.start_ns && s.gpu_end_ns == s.end_ns;
  });
  for (StepBreakdown& s : r.steps) {
    const int64_t a = s.start_ns, b = s.end_ns;
    s.data_wait_ns = iv::measure(h.data_wait, a, b);
    s.h2d_ns = !h.h2d.empty() ? iv::measure(h.h2d, a, b) : iv::measure(g.htod, a, b);
    s.forward_ns = iv::measure(h.fwd, a, b);
    s.backward_ns = iv::measure(h.bwd, a, b);
    s.optimizer_ns = iv::measure(h.optim, a, b);
    for (const SyncPoint& sp : r.sync_points) {
      if (sp.interval.t0 >= a && sp.interval.t0 < b) {
        ++s.sync_count;
        s.sync_ns += std::min(sp.interval.t1, b) - sp.interval.t0;
      }
    }
    if (!r.has_gpu) {
      s.gpu_idle_ns = b - a;
      s.loader_stall_ns = s.data_wait_ns;
      s.profiler_ns = iv::measure(h.profiler, a, b);
      s.comm_ns = iv::measure(h.comm_host, a, b);
      s.comm_exposed_ns = iv::measure(h.comm_wait, a, b);
      s.other_idle_ns = std::max<int64_t>(0, s.gpu_idle_ns - s.loader_stall_ns - s.profiler_ns);
      continue;
    }
    const int64_t x = s.gpu_start_ns, y = s.gpu_end_ns;
    s.gpu_busy_ns = iv::measure(g.busy, x, y);
    s.compute_ns = iv::measure(g.compute, x, y);
    s.comm_ns = iv::measure(g.comm, x, y);
    Intervals comm_pieces;
    iv::clip(g.comm, x, y, comm_pieces);
    s.comm_exposed_ns = iv::total(iv::subtract(comm_pieces, g.compute));
    // The first step after a sampled trace's gap reaches back to the last step's GPU work before it.
    s.gpu_idle_ns = (y - x) - s.gpu_busy_ns - iv::measure(h.untraced, x, y);
    s.loader_stall_ns = iv::measure(p.stall, x, y);
    s.sync_idle_ns = iv::measure(p.sync, x, y);
    s.runtime_idle_ns = iv::measure(p.runtime, x, y);
    s.edge_idle_ns = iv::measure(p.edge, x, y);
    s.launch_gap_ns = iv::measure(p.gap, x, y);
    s.launch_overhead_ns = iv::measure(p.overhead, x, y);
    s.event_wait_ns = iv::measure(p.event_wait, x, y);
    s.other_idle_ns = iv::measure(p.other, x, y);
    s.profiler_ns = iv::measure(p.profiler, x, y);
    if (by_time)
      s.kernel_count = static_cast<uint32_t>(std::lower_bound(kernel_starts.begin(), kernel_starts.end(), y) -
                                             std::lower_bound(kernel_starts.begin(), kernel_starts.end(), x));
  }
  std::vector<int64_t> d;  // the median step of the measured ones (the warm-up left the window)
  for (size_t i = r.warmup_steps; i < r.steps.size(); ++i) d.push_back(r.steps[i].duration_ns());
  std::sort(d.begin(), d.end());
  if (!d.empty()) r.step_median_ns = d.size() % 2 ? d[d.size() / 2] : (d[d.size() / 2 - 1] + d[d.size() / 2]) / 2;
}

// Our recorder says how many steps were warm-up (the engine's detector decided it while running): the window
// starts at the first measured step, so the findings describe the steady state the throughput was measured on.
// At least one measured step must remain; a trace that starts after the warm-up (a live run's later chunk)
// numbers no step below the mark and keeps its whole window.
void exclude_warmup(const Trace& trace, AnalysisResult& r) {
  const auto it = trace.meta().extra.find("warmup_steps");
  if (it == trace.meta().extra.end()) return;
  char* end = nullptr;
  const long long n = std::strtoll(it->second.c_str(), &end, 10);
  if (end == it->second.c_str() || n <= 0) return;
  size_t k = 0;
  while (k < r.steps.size() && r.steps[k].index < n) ++k;
  if (k == 0 || k >= r.steps.size()) return;
  r.warmup_steps = k;
  r.warmup_ns = r.steps[k].start_ns - r.steps.front().start_ns;
  r.window.t0 = r.steps[k].start_ns;
  char buf[200];
  std::snprintf(buf, sizeof buf, "the first %zu step(s) were warm-up (%.3f ms): left out of the window, the totals and the "
                "findings (one-time costs such as cuDNN's algorithm search); the steps table still lists them", k, r.warmup_ns / 1e6);
  r.notes.push_back(buf);
}

// Without steps: the thread with the most data-wait time, else the one with the most launches.
int32_t training_thread_without_steps(const Trace& trace, const detail::Scope& sc) {
  int64_t best_wait = 0;
  size_t best_launch = 0;
  int32_t by_wait = -1, by_launch = -1;
  const auto& tracks = trace.tracks();
  for (uint32_t ti = 0; ti < tracks.size(); ++ti) {
    if (!in_scope(tracks[ti], sc)) continue;
    int64_t wait = 0;
    size_t launches = 0;
    for (const Event& e : tracks[ti].events()) {
      if (e.kind == EventKind::Range && nc::is_data_wait(trace.name(e.name))) wait += e.duration_ns();
      if ((e.kind == EventKind::Runtime || e.kind == EventKind::Driver) && e.correlation) ++launches;
    }
    if (wait > best_wait) best_wait = wait, by_wait = static_cast<int32_t>(ti);
    if (launches > best_launch) best_launch = launches, by_launch = static_cast<int32_t>(ti);
  }
  return by_wait >= 0 ? by_wait : by_launch;
}

using State = detail::AnalysisState;

// The process and device analysed (a merged trace holds several ranks).
void pass_scope(State& s) {
  AnalysisResult& r = s.r;
  r.min_gap_ns = s.opt.min_gap_ns;
  s.sc = detail::pick_scope(s.trace, s.opt.device, s.opt.pid, r.notes);
  r.device = s.sc.device;
  r.pid = s.sc.pid;
  r.devices = s.sc.devices;
}

void pass_gpu(State& s) {
  s.g = detail::collect_gpu(s.trace, s.sc, s.r);
  s.r.has_gpu = !s.g.acts.empty();
}

// The steps and the training thread: the step ranges, else steps inferred from the optimizer's calls, else the
// thread that waits for data or launches most.
void pass_steps(State& s) {
  AnalysisResult& r = s.r;
  if (s.sc.step_track >= 0) {
    r.steps = detail::reconstruct_steps(s.trace, static_cast<uint32_t>(s.sc.step_track), s.opt.step_overlap_tolerance_ns,
                                        r.notes);
    r.training_track = s.sc.step_track;
  } else if (const int32_t t = detail::infer_steps(s.trace, s.sc.pid, r.steps, r.notes); t >= 0) {
    r.training_track = t;
    r.steps_inferred = true;
  } else {
    r.training_track = training_thread_without_steps(s.trace, s.sc);
  }
}

// The window: the steps with the GPU work they launched (the warm-up left out), else the GPU's busy span, else
// the training thread's span, else the whole trace.
void pass_window(State& s) {
  const Trace& trace = s.trace;
  AnalysisResult& r = s.r;
  if (!r.steps.empty()) {
    s.attributed = r.has_gpu && attribute_gpu_work(trace, s.g, s.sc.pid, r.steps);
    if (!s.attributed)
      for (StepBreakdown& st : r.steps) st.gpu_start_ns = st.start_ns, st.gpu_end_ns = st.end_ns;
    r.window = {r.steps.front().start_ns, r.steps.back().end_ns};
    for (const auto& st : r.steps) r.window.t1 = std::max({r.window.t1, st.end_ns, st.gpu_end_ns});
    r.window_from_steps = true;
    exclude_warmup(trace, r);
  } else if (!s.g.busy.empty()) {
    r.window = {s.g.busy.front().t0, s.g.busy.back().t1};
  } else if (r.training_track >= 0 && !trace.track(r.training_track).empty()) {
    const Track& t = trace.track(r.training_track);
    int64_t end = t.events().front().end_ns;
    for (const Event& e : t.events()) end = std::max(end, e.end_ns);
    r.window = {t.events().front().start_ns, end};
    r.notes.push_back("no steps and no GPU activity: the window is the training thread's recorded span");
  } else {
    r.window = {trace.start_ns(), trace.end_ns()};
  }
  r.trusted = r.steps.size() - r.warmup_steps >= s.opt.min_trusted_steps;
}

void pass_host(State& s) { s.h = detail::collect_host(s.trace, s.sc, s.opt, s.r); }

// What the window holds besides training: a sampled trace's untraced gaps (out of every share below) and the
// ranges outside training (validation, checkpoints), each given to the step it follows.
void pass_outside(State& s) {
  AnalysisResult& r = s.r;
  const int64_t W0 = r.window.t0, W1 = r.window.t1;
  r.untraced_ns = iv::measure(s.h.untraced, W0, W1);
  for (const Interval& x : s.h.untraced) r.untraced_count += x.t1 > W0 && x.t0 < W1;
  s.window_len = std::max<int64_t>(0, r.traced_ns());
  if (r.untraced_ns > 0) {
    char b[200];
    std::snprintf(b, sizeof b,
                  "sampled trace: %.3f ms between %u pairs of chunks ran untraced and is left out of the window "
                  "(%.1f%% of the time from the first step to the last was recorded)",
                  static_cast<double>(r.untraced_ns) * 1e-6, r.untraced_count,
                  100.0 * static_cast<double>(s.window_len) / static_cast<double>(std::max<int64_t>(1, W1 - W0)));
    r.notes.push_back(b);
  }
  if (r.training_track < 0) return;
  for (const Event& e : s.trace.track(r.training_track).events()) {
    if (e.kind != EventKind::Range || !name_class::is_outside_training(s.trace.name(e.name))) continue;
    const int64_t in = std::min(e.end_ns, W1) - std::max(e.start_ns, W0);
    if (in <= 0) continue;
    r.outside_training_ns += in;
    ++r.outside_training_count;
    // The step it follows: the last one that started before it.
    auto after = std::upper_bound(r.steps.begin(), r.steps.end(), e.start_ns,
                                  [](int64_t t, const StepBreakdown& st) { return t < st.start_ns; });
    if (after != r.steps.begin()) std::prev(after)->outside_after_ns += in;
    if (r.outside_training_intervals.size() < s.opt.max_intervals)
      r.outside_training_intervals.push_back({std::max(e.start_ns, W0), std::min(e.end_ns, W1)});
  }
  if (r.outside_training_ns > 0) {
    char b[160];
    std::snprintf(b, sizeof b,
                  "%.3f ms of the window is outside training (validation, checkpoints, logging: %u ranges): no "
                  "step holds it",
                  static_cast<double>(r.outside_training_ns) * 1e-6, r.outside_training_count);
    r.notes.push_back(b);
  }
}

// GPU time by class and idle by cause; without GPU work, the CPU-only split of the training thread's time.
void pass_idle(State& s) {
  AnalysisResult& r = s.r;
  const GpuSide& g = s.g;
  const HostSide& h = s.h;
  IdlePieces& pieces = s.pieces;
  const int64_t W0 = r.window.t0, W1 = r.window.t1, window_len = s.window_len;
  if (window_len > 0 && r.has_gpu) {
    r.gpu_busy_ns = iv::measure(g.busy, W0, W1);
    r.compute_ns = iv::measure(g.compute, W0, W1);
    r.comm_ns = iv::measure(g.comm, W0, W1);
    Intervals comm_pieces;
    iv::clip(g.comm, W0, W1, comm_pieces);
    const Intervals exposed = iv::subtract(comm_pieces, g.compute);
    r.comm_exposed_ns = iv::total(exposed);
    r.comm_overlap = r.comm_ns > 0 ? 1.0 - static_cast<double>(r.comm_exposed_ns) / static_cast<double>(r.comm_ns) : -1;
    Intervals kernels = g.compute;
    kernels.insert(kernels.end(), g.comm.begin(), g.comm.end());
    kernels = iv::merge(std::move(kernels));
    Intervals mem_pieces;
    iv::clip(g.memory, W0, W1, mem_pieces);
    r.memory_exposed_ns = iv::total(iv::subtract(mem_pieces, kernels));
    pieces = detail::classify_idle(s.trace, g, h, s.opt, r);
    r.gpu_idle_ns = window_len - r.gpu_busy_ns;
  } else if (window_len > 0) {
    // CPU-only: the loader stall is the training thread's data-wait time inside the window.
    r.gpu_idle_ns = window_len;
    iv::clip(h.data_wait, W0, W1, pieces.stall);
    r.loader_stall_ns = iv::total(pieces.stall);
    r.loader_stall_count = static_cast<uint32_t>(pieces.stall.size());
    iv::clip(h.profiler, W0, W1, pieces.profiler);
    r.profiler_ns = iv::total(pieces.profiler);
    r.profiler_count = static_cast<uint32_t>(pieces.profiler.size());
    r.other_idle_ns = std::max<int64_t>(0, window_len - r.loader_stall_ns - r.profiler_ns);
    // Host collectives (Gloo): exposed = the training thread's recorded wait for them after backward.
    r.comm_ns = iv::measure(h.comm_host, W0, W1);
    r.comm_exposed_ns = iv::measure(h.comm_wait, W0, W1);
    r.comm_overlap =
        r.comm_ns > 0 ? std::max(0.0, 1.0 - static_cast<double>(r.comm_exposed_ns) / static_cast<double>(r.comm_ns)) : -1;
    if (r.launches == 0)
      r.notes.push_back("no GPU activity in this trace: CPU-only analysis (loader stall = data-wait time)");
  }
}

// Each step's classes, and the profiler's own time with its longest interval against the median step.
void pass_per_step(State& s) {
  AnalysisResult& r = s.r;
  for (const Interval& x : s.pieces.profiler) {
    if (r.profiler_intervals.size() < s.opt.max_intervals) r.profiler_intervals.push_back(x);
    r.profiler_longest_ns = std::max(r.profiler_longest_ns, x.length());
  }
  if (!r.steps.empty()) per_step(s.g, s.h, s.pieces, r);
  if (r.profiler_ns > 0) {
    char b[360];
    int n = std::snprintf(b, sizeof b,
                          "profiler (TuneBench): %.3f ms of the window in %u intervals is the profiler's own time (trace "
                          "chunk boundaries, recording work), not the program's: no cause, no finding, and left out of "
                          "every finding's bound; the longest is %.3f ms",
                          static_cast<double>(r.profiler_ns) * 1e-6, r.profiler_count,
                          static_cast<double>(r.profiler_longest_ns) * 1e-6);
    if (r.step_median_ns > 0 && n > 0 && static_cast<size_t>(n) < sizeof b)
      std::snprintf(b + n, sizeof b - n, ", %.2f median steps",
                    static_cast<double>(r.profiler_longest_ns) / static_cast<double>(r.step_median_ns));
    r.notes.push_back(b);
  }
}

// The top kernels and ops and the slow or late launches.
void pass_stats(State& s) {
  kernel_statistics(s.trace, s.g, s.opt, s.r);
  op_statistics(s.trace, s.sc, s.opt, s.r);
  launch_outliers(s.trace, s.g, s.r);
}

// Each compiled region's runs, named by the compile lane (a script's trace; nothing when none ran).
void pass_regions(State& s) { detail::add_compiled_regions(s.trace, s.sc, s.r); }

// Each CUDA graph's replays and nodes, and the captures made in the steps (with their finding).
void pass_cuda_graphs(State& s) { detail::add_cuda_graphs(s.trace, s.sc, s.opt, s.r); }

void pass_memory(State& s) { detail::analyze_memory(s.trace, s.sc.pid, s.opt, s.r); }

// The findings, each with the largest interval of its class as evidence.
void pass_findings(State& s) {
  const AnalysisResult& r = s.r;
  const int64_t W0 = r.window.t0, W1 = r.window.t1;
  detail::Evidence ev;
  ev.stall = iv::largest(s.pieces.stall);
  ev.gap = iv::largest(s.pieces.gap);
  ev.sync = iv::largest(s.pieces.sync);
  ev.runtime = iv::largest(s.pieces.runtime);
  ev.event_wait = iv::largest(s.pieces.event_wait);
  Intervals comm_pieces;
  iv::clip(s.g.comm, W0, W1, comm_pieces);
  ev.comm = iv::largest(iv::subtract(comm_pieces, s.g.compute));
  if (!r.has_gpu) {
    Intervals waits;
    iv::clip(s.h.comm_wait, W0, W1, waits);
    ev.comm = iv::largest(waits);
  }
  detail::add_findings(s.trace, s.opt, ev, s.r);
}

// What the step lane's timings show (a script's every step; a sampled trace records few): after the detailed
// findings, whose kinds it does not repeat.
void pass_lane(State& s) {
  detail::add_lane_findings(s.trace, s.opt, s.r);
  detail::add_compile_findings(s.trace, s.r);
}

// What the trace could not say, and the highlighted intervals capped.
void pass_notes(State& s) {
  const Trace& trace = s.trace;
  AnalysisResult& r = s.r;
  if (r.has_gpu && trace.flows().empty())
    r.notes.push_back("no launch->kernel correlation in this trace: launch gaps cannot be attributed (counted as other idle)");
  if (r.has_gpu && !r.steps.empty() && !s.attributed && !trace.flows().empty())
    r.notes.push_back("no GPU work could be traced to a step's launches: steps are measured by time");
  if (r.steps.empty() && r.has_gpu)
    r.notes.push_back("no step ranges (ProfilerStep#N or ours): the window is first to last GPU activity and no "
                      "gain is bounded");
  detail::add_idle_notes(trace, r);
  auto cap = [&](Intervals& v) {
    if (v.size() > s.opt.max_intervals) v.resize(s.opt.max_intervals);
    return std::move(v);
  };
  r.loader_stall_intervals = cap(s.pieces.stall);
  r.launch_gap_intervals = cap(s.pieces.gap);
}

// The order matters: each pass reads what the ones before it filled (the window needs the steps and the GPU
// side, the idle split the host side, the findings every class).
constexpr detail::AnalysisPass kPasses[] = {
    {"scope", pass_scope},     {"gpu", pass_gpu},           {"steps", pass_steps},     {"window", pass_window},
    {"host", pass_host},       {"outside", pass_outside},   {"idle", pass_idle},       {"per_step", pass_per_step},
    {"stats", pass_stats},     {"regions", pass_regions},   {"cuda_graphs", pass_cuda_graphs},
    {"memory", pass_memory},   {"findings", pass_findings}, {"lane", pass_lane},       {"notes", pass_notes}};

}  // namespace

namespace detail {

std::span<const AnalysisPass> analysis_passes() { return kPasses; }

}  // namespace detail

AnalysisResult analyze(const Trace& trace, const AnalysisOptions& opt) {
  detail::AnalysisState s(trace, opt);
  for (const detail::AnalysisPass& p : detail::analysis_passes()) p.run(s);
  return std::move(s.r);
}

}  // namespace tb::prof
