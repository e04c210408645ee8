// The host side of analyze() (private): the analysed process's ranges by phase, its sync calls and stream
// waits, the profiler's own time, and the launches and sync points of the window.
#include <algorithm>
#include <string_view>

#include "analysis_intervals.h"
#include "analysis_names.h"
#include "analysis_passes.h"
#include "profiler/cupti_collector.h"
#include "profiler/range_names.h"

namespace tb::prof::detail {

namespace nc = name_class;
using iv::Intervals;

HostSide collect_host(const Trace& trace, const Scope& sc, const AnalysisOptions& opt, AnalysisResult& r) {
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

}  // namespace tb::prof::detail
