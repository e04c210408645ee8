#include "profiler/analysis.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "analysis_findings.h"
#include "analysis_idle.h"
#include "analysis_memory.h"
#include "analysis_intervals.h"
#include "analysis_names.h"
#include "analysis_stats.h"
#include "analysis_steps.h"
#include "profiler/cupti_collector.h"
#include "profiler/range_names.h"

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

HostSide collect_host(const Trace& trace, const detail::Scope& sc, const AnalysisOptions& opt, AnalysisResult& r) {
  HostSide h;
  const auto& tracks = trace.tracks();
  h.wait_calls.resize(tracks.size());
  if (r.training_track >= 0) {
    for (const Event& e : tracks[r.training_track].events()) {
      if (e.kind != EventKind::Range) continue;
      const std::string_view n = trace.name(e.name);
      if (nc::is_data_wait(n)) h.data_wait.push_back({e.start_ns, e.end_ns});
      else if (n == names::kH2D) h.h2d.push_back({e.start_ns, e.end_ns});
      else if (n == names::kCommWait) h.comm_wait.push_back({e.start_ns, e.end_ns});
    }
  }
  bool any_runtime = false, any_driver = false;
  for (const Track& t : tracks) {
    if (!in_scope(t, sc)) continue;
    for (const Event& e : t.events()) {
      any_runtime |= e.kind == EventKind::Runtime;
      any_driver |= e.kind == EventKind::Driver;
      if (e.kind == EventKind::Overhead && e.end_ns > e.start_ns)
        (nc::is_untraced(trace.name(e.name)) ? h.untraced : h.profiler).push_back({e.start_ns, e.end_ns});
      if (e.kind == EventKind::Range) {
        const std::string_view n = trace.name(e.name);
        if (nc::is_untraced(n)) h.untraced.push_back({e.start_ns, e.end_ns});
        else if (nc::is_profiler_own(n)) h.profiler.push_back({e.start_ns, e.end_ns});
        else if (n == names::kGlooAllReduce) h.comm_host.push_back({e.start_ns, e.end_ns});
        else if (nc::is_forward(n)) h.fwd.push_back({e.start_ns, e.end_ns});
        else if (nc::is_backward(n)) h.bwd.push_back({e.start_ns, e.end_ns});
        else if (nc::is_optimizer(n)) h.optim.push_back({e.start_ns, e.end_ns});
      }
    }
  }
  // Sync points: runtime calls (driver calls only when the trace has no runtime calls, so one wait is not
  // counted twice); our `sync` ranges stand in when the trace has neither.
  const bool use_runtime = any_runtime, use_driver = !any_runtime && any_driver;
  const int64_t W0 = r.window.t0, W1 = r.window.t1;
  for (uint32_t ti = 0; ti < tracks.size(); ++ti) {
    const Track& t = tracks[ti];
    if (!in_scope(t, sc)) continue;
    const auto& ev = t.events();
    // A runtime launch's own driver call carries its correlation id (traces recorded through CUPTI's callback
    // API before the collector left it out): one launch, counted once. It follows the runtime call on its thread.
    uint64_t runtime_launch = 0;
    for (uint32_t i = 0; i < ev.size(); ++i) {
      const Event& e = ev[i];
      const bool api = e.kind == EventKind::Runtime || e.kind == EventKind::Driver;
      const std::string_view n = trace.name(e.name);
      const bool blocking = api && ((e.flags & kFlagBlockingSync) || is_blocking_sync_api(n));
      bool is_sync = false;
      if (use_runtime || use_driver) {
        is_sync = blocking && ((use_runtime && e.kind == EventKind::Runtime) || (use_driver && e.kind == EventKind::Driver));
      } else {
        is_sync = e.kind == EventKind::Range && n == names::kSync;
      }
      if (api && !blocking) {
        if (nc::is_kernel_launch_api(n)) {
          if (e.kind == EventKind::Runtime) runtime_launch = e.correlation;
          if (!(e.kind == EventKind::Driver && e.correlation && e.correlation == runtime_launch)) ++r.launches;
        }
        else if (n == "cudaStreamWaitEvent" || n == "cuStreamWaitEvent" || n == "cudaStreamWaitEvent_ptsz" ||
                 n == "cuStreamWaitEvent_ptsz")
          h.wait_calls[ti].push_back({e.start_ns, ti, i});
        if (nc::is_slow_runtime(n, e.duration_ns())) h.slow_runtime.push_back({e.start_ns, e.end_ns});
      }
      if (!is_sync) continue;
      h.sync_calls.push_back({e.start_ns, e.end_ns});
      const int64_t a = std::max(e.start_ns, W0), b = std::min(e.end_ns, W1);
      if (b < a || (b == a && !(e.start_ns >= W0 && e.start_ns <= W1))) continue;
      ++r.sync_count;
      r.sync_ns += b - a;
      if (r.sync_points.size() < opt.max_intervals) r.sync_points.push_back({ti, i, {e.start_ns, e.end_ns}, std::string(n)});
    }
  }
  std::sort(r.sync_points.begin(), r.sync_points.end(),
            [](const SyncPoint& a, const SyncPoint& b) { return a.interval.t0 < b.interval.t0; });
  for (Intervals* v : {&h.data_wait, &h.h2d, &h.fwd, &h.bwd, &h.optim, &h.sync_calls, &h.slow_runtime, &h.comm_host,
                       &h.comm_wait, &h.profiler, &h.untraced})
    *v = iv::merge(std::move(*v));
  // A wait for data that TuneBench's own pause sits in (a chunk boundary inside the loader's __next__) is the
  // profiler's for that part.
  h.data_wait = iv::subtract(h.data_wait, h.profiler);
  // An optimizer step that runs a closure (LBFGS's step(closure): up to 20 forward/backward passes) holds the
  // closure's forward and backward: theirs, not its. Counted in both, an LBFGS step's optimizer phase was
  // 94.8 s of a 94.8 s step on top of 32.3 s forward and 59.0 s backward.
  h.optim = iv::subtract(h.optim, iv::merge([&] {
                           Intervals fb = h.fwd;
                           fb.insert(fb.end(), h.bwd.begin(), h.bwd.end());
                           return fb;
                         }()));
  // Exposed communication is waiting while a collective runs: the wait's tail after the last result came
  // back (the Reducer copying it out) is not communication.
  h.comm_wait = iv::subtract(h.comm_wait, iv::subtract(h.comm_wait, h.comm_host));
  return h;
}

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

}  // namespace

AnalysisResult analyze(const Trace& trace, const AnalysisOptions& opt) {
  AnalysisResult r;
  r.min_gap_ns = opt.min_gap_ns;
  const detail::Scope sc = detail::pick_scope(trace, opt.device, opt.pid, r.notes);
  r.device = sc.device;
  r.pid = sc.pid;
  r.devices = sc.devices;

  GpuSide g = detail::collect_gpu(trace, sc, r);
  r.has_gpu = !g.acts.empty();

  // --- Steps, the training thread, the window.
  if (sc.step_track >= 0) {
    r.steps = detail::reconstruct_steps(trace, static_cast<uint32_t>(sc.step_track), opt.step_overlap_tolerance_ns, r.notes);
    r.training_track = sc.step_track;
  } else if (const int32_t t = detail::infer_steps(trace, sc.pid, r.steps, r.notes); t >= 0) {
    r.training_track = t;
    r.steps_inferred = true;
  } else {
    r.training_track = training_thread_without_steps(trace, sc);
  }
  bool attributed = false;
  if (!r.steps.empty()) {
    attributed = r.has_gpu && attribute_gpu_work(trace, g, sc.pid, r.steps);
    if (!attributed)
      for (StepBreakdown& s : r.steps) s.gpu_start_ns = s.start_ns, s.gpu_end_ns = s.end_ns;
    r.window = {r.steps.front().start_ns, r.steps.back().end_ns};
    for (const auto& s : r.steps) r.window.t1 = std::max({r.window.t1, s.end_ns, s.gpu_end_ns});
    r.window_from_steps = true;
    exclude_warmup(trace, r);
  } else if (!g.busy.empty()) {
    r.window = {g.busy.front().t0, g.busy.back().t1};
  } else if (r.training_track >= 0 && !trace.track(r.training_track).empty()) {
    const Track& t = trace.track(r.training_track);
    int64_t end = t.events().front().end_ns;
    for (const Event& e : t.events()) end = std::max(end, e.end_ns);
    r.window = {t.events().front().start_ns, end};
    r.notes.push_back("no steps and no GPU activity: the window is the training thread's recorded span");
  } else {
    r.window = {trace.start_ns(), trace.end_ns()};
  }
  r.trusted = r.steps.size() - r.warmup_steps >= opt.min_trusted_steps;
  const int64_t W0 = r.window.t0, W1 = r.window.t1;

  const HostSide h = collect_host(trace, sc, opt, r);
  // A sampled trace's untraced steps are not in the window: every share below is of the traced time.
  r.untraced_ns = iv::measure(h.untraced, W0, W1);
  for (const Interval& x : h.untraced) r.untraced_count += x.t1 > W0 && x.t0 < W1;
  const int64_t window_len = std::max<int64_t>(0, r.traced_ns());
  if (r.untraced_ns > 0) {
    char b[200];
    std::snprintf(b, sizeof b,
                  "sampled trace: %.3f ms between %u pairs of chunks ran untraced and is left out of the window "
                  "(%.1f%% of the time from the first step to the last was recorded)",
                  static_cast<double>(r.untraced_ns) * 1e-6, r.untraced_count,
                  100.0 * static_cast<double>(window_len) / static_cast<double>(std::max<int64_t>(1, W1 - W0)));
    r.notes.push_back(b);
  }
  if (r.training_track >= 0) {
    for (const Event& e : trace.track(r.training_track).events()) {
      if (e.kind != EventKind::Range || !name_class::is_outside_training(trace.name(e.name))) continue;
      const int64_t in = std::min(e.end_ns, W1) - std::max(e.start_ns, W0);
      if (in <= 0) continue;
      r.outside_training_ns += in;
      ++r.outside_training_count;
      // The step it follows: the last one that started before it.
      auto after = std::upper_bound(r.steps.begin(), r.steps.end(), e.start_ns,
                                    [](int64_t t, const StepBreakdown& s) { return t < s.start_ns; });
      if (after != r.steps.begin()) std::prev(after)->outside_after_ns += in;
      if (r.outside_training_intervals.size() < opt.max_intervals)
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

  // --- GPU time by class, idle by cause.
  IdlePieces pieces;
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
    pieces = detail::classify_idle(trace, g, h, opt, r);
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

  for (const Interval& x : pieces.profiler) {
    if (r.profiler_intervals.size() < opt.max_intervals) r.profiler_intervals.push_back(x);
    r.profiler_longest_ns = std::max(r.profiler_longest_ns, x.length());
  }
  if (!r.steps.empty()) per_step(g, h, pieces, r);
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
  kernel_statistics(trace, g, opt, r);
  op_statistics(trace, sc, opt, r);
  launch_outliers(trace, g, r);

  detail::Evidence ev;
  ev.stall = iv::largest(pieces.stall);
  ev.gap = iv::largest(pieces.gap);
  ev.sync = iv::largest(pieces.sync);
  ev.runtime = iv::largest(pieces.runtime);
  ev.event_wait = iv::largest(pieces.event_wait);
  {
    Intervals comm_pieces;
    iv::clip(g.comm, W0, W1, comm_pieces);
    ev.comm = iv::largest(iv::subtract(comm_pieces, g.compute));
    if (!r.has_gpu) {
      Intervals waits;
      iv::clip(h.comm_wait, W0, W1, waits);
      ev.comm = iv::largest(waits);
    }
  }
  detail::analyze_memory(trace, sc.pid, opt, r);
  detail::add_findings(trace, opt, ev, r);

  if (r.has_gpu && trace.flows().empty())
    r.notes.push_back("no launch->kernel correlation in this trace: launch gaps cannot be attributed (counted as other idle)");
  if (r.has_gpu && !r.steps.empty() && !attributed && !trace.flows().empty())
    r.notes.push_back("no GPU work could be traced to a step's launches: steps are measured by time");
  if (r.steps.empty() && r.has_gpu)
    r.notes.push_back("no step ranges (ProfilerStep#N or ours): the window is first to last GPU activity and no "
                      "gain is bounded");
  detail::add_idle_notes(trace, r);
  auto cap = [&](Intervals& v) {
    if (v.size() > opt.max_intervals) v.resize(opt.max_intervals);
    return std::move(v);
  };
  r.loader_stall_intervals = cap(pieces.stall);
  r.launch_gap_intervals = cap(pieces.gap);
  return r;
}

}  // namespace tb::prof
