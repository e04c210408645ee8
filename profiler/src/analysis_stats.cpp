// The statistics of analyze() (private): the top kernels and the tensor-core share, the host ops by self time,
// and the launch outliers. Each reads the trace and the GPU side collected once by analyze().
#include "analysis_stats.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "analysis_findings.h"
#include "analysis_graphs.h"
#include "analysis_names.h"
#include "profiler/range_names.h"

namespace tb::prof::detail {

namespace nc = name_class;

void kernel_statistics(const Trace& trace, const GpuSide& g, const AnalysisOptions& opt, AnalysisResult& r) {
  struct Agg {
    uint64_t count = 0, launched = 0;
    int64_t total = 0, mn = INT64_MAX, mx = 0, launch_sum = 0, delay_sum = 0, delay_max = 0;
    bool comm = false;
  };
  std::unordered_map<NameId, Agg> agg;
  const std::vector<uint8_t> graph_launch = graph_launch_names(trace);
  int64_t all_kernels = 0;
  for (const Activity& a : g.acts) {
    const Event& e = trace.track(a.track).events()[a.event];
    if (e.kind != EventKind::Kernel) continue;
    Agg& k = agg[e.name];
    const int64_t d = e.duration_ns();
    ++k.count;
    k.total += d;
    k.mn = std::min(k.mn, d);
    k.mx = std::max(k.mx, d);
    k.comm = a.cls == ActClass::Comm;
    all_kernels += d;
    if (const Flow* f = trace.flow_to(a.track, a.event)) {
      const Event& l = trace.track(f->src_track).events()[f->src_event];
      // A CUDA graph's kernels have no launch of their own: their replay's launch call is the cuda_graphs pass's.
      if (e.graph || is_graph_launch(graph_launch, l.name)) continue;
      ++k.launched;
      k.launch_sum += l.duration_ns();
      const int64_t delay = std::max<int64_t>(0, e.start_ns - l.start_ns);
      k.delay_sum += delay;
      k.delay_max = std::max(k.delay_max, delay);
    }
  }
  std::vector<KernelStat> ks;
  ks.reserve(agg.size());
  int64_t mm_total = 0, mm_tc = 0, compute_total = 0;
  for (const auto& [name, k] : agg) {
    KernelStat s;
    s.name = std::string(trace.name(name));
    s.count = k.count;
    s.total_ns = k.total;
    s.min_ns = k.mn == INT64_MAX ? 0 : k.mn;
    s.max_ns = k.mx;
    s.communication = k.comm;
    s.tensor_core = !k.comm && nc::is_tensor_core_kernel(s.name);
    s.share_of_kernel_time = all_kernels > 0 ? static_cast<double>(k.total) / static_cast<double>(all_kernels) : 0;
    s.launched = k.launched;
    if (k.launched) {
      s.launch_mean_ns = k.launch_sum / static_cast<int64_t>(k.launched);
      s.delay_mean_ns = k.delay_sum / static_cast<int64_t>(k.launched);
      s.delay_max_ns = k.delay_max;
    }
    if (!k.comm) {
      compute_total += k.total;
      if (nc::is_matmul_conv_kernel(s.name)) {
        mm_total += k.total;
        if (s.tensor_core) mm_tc += k.total;
      }
    }
    ks.push_back(std::move(s));
  }
  std::sort(ks.begin(), ks.end(), [](const KernelStat& a, const KernelStat& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  if (ks.size() > opt.top_kernels) ks.resize(opt.top_kernels);
  r.top_kernels = std::move(ks);
  r.tensor_core_share = mm_total > 0 ? static_cast<double>(mm_tc) / static_cast<double>(mm_total) : -1.0;
  r.matmul_share = compute_total > 0 ? static_cast<double>(mm_total) / static_cast<double>(compute_total) : 0.0;
  detail::add_tensor_core_finding(trace, opt, mm_total, mm_tc, compute_total, r);
}

// Launch outliers: launch calls and launch->start delays far beyond the trace's median. A late start only
// counts when the GPU was idle before the kernel (else the kernel simply queued behind busy work).
void launch_outliers(const Trace& trace, const GpuSide& g, AnalysisResult& r) {
  struct L {
    int64_t launch, call, delay;
    uint32_t track, event;
    uint64_t src;  // the launch call: its track << 32 | its event
    bool graph;    // a CUDA graph's launch: one call for all of the graph's kernels, slow by nature
    bool inner;    // a graph's kernel after its replay's first: queued with the replay, no late start of its own
  };
  std::vector<L> all;
  std::unordered_map<uint64_t, bool> replay_seen;  // a graph launch's correlation id
  const std::vector<uint8_t> graph_launch = graph_launch_names(trace);
  for (const Activity& a : g.acts) {
    const Event& e = trace.track(a.track).events()[a.event];
    if (e.kind != EventKind::Kernel) continue;
    const Flow* f = trace.flow_to(a.track, a.event);
    if (!f) continue;
    const Event& l = trace.track(f->src_track).events()[f->src_event];
    const bool graph = e.graph || is_graph_launch(graph_launch, l.name);
    const bool inner = graph && !replay_seen.try_emplace(e.correlation, true).second;
    all.push_back({l.start_ns, l.duration_ns(), std::max<int64_t>(0, e.start_ns - l.start_ns), a.track, a.event,
                   uint64_t(f->src_track) << 32 | f->src_event, graph, inner});
  }
  if (all.size() < 20) return;  // too few launches for a "typical" one
  auto median = [&](auto key) {
    std::vector<int64_t> v;
    v.reserve(all.size());
    for (const L& x : all) v.push_back(key(x));
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  // A launch call's duration once per call: a CUDA graph's launch starts all of its kernels (on an H100, 1 766
  // of ResNet-50's per step), and counted per kernel its 7-14 ms became the "typical" launch.
  {
    std::vector<std::pair<uint64_t, int64_t>> calls;  // (the launch event, its duration)
    calls.reserve(all.size());
    for (const L& x : all) calls.push_back({x.src, x.call});
    std::sort(calls.begin(), calls.end());
    calls.erase(std::unique(calls.begin(), calls.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
                calls.end());
    std::vector<int64_t> v;
    v.reserve(calls.size());
    for (const auto& c : calls) v.push_back(c.second);
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    r.launch_median_ns = v[v.size() / 2];
  }
  r.delay_median_ns = median([](const L& x) { return x.delay; });
  const int64_t call_cut = std::max<int64_t>(100'000, 10 * r.launch_median_ns);
  const int64_t delay_cut = std::max<int64_t>(1'000'000, 10 * r.delay_median_ns);
  std::vector<LaunchOutlier> calls, delays;
  uint64_t last_slow = ~uint64_t(0);  // a slow call is one outlier, however many kernels it launched
  for (const L& x : all) {
    const Event& k = trace.track(x.track).events()[x.event];
    if (x.call >= call_cut && !x.graph && x.src != last_slow) {
      calls.push_back({std::string(trace.name(k.name)), x.launch, x.call, x.delay, true});
      last_slow = x.src;
    }
    // Late start: the GPU sat idle right before it (the kernel opens a busy interval).
    auto it = std::upper_bound(g.busy.begin(), g.busy.end(), k.start_ns, [](int64_t t, const Interval& b) { return t < b.t0; });
    const bool opens = it != g.busy.begin() && std::prev(it)->t0 == k.start_ns;
    // The wait after the call returned: a slow call's own time is not a late start too.
    if (x.delay - x.call >= delay_cut && opens && !x.inner) delays.push_back({std::string(trace.name(k.name)), x.launch, x.call, x.delay, false});
  }
  for (auto* v : {&calls, &delays}) {
    std::sort(v->begin(), v->end(), [](const LaunchOutlier& a, const LaunchOutlier& b) {
      return a.slow_call ? a.launch_ns > b.launch_ns : a.delay_ns > b.delay_ns;
    });
    if (v->size() > 10) v->resize(10);
    r.launch_outliers.insert(r.launch_outliers.end(), v->begin(), v->end());
  }
}

// Host ops by self time: each track's events are sorted by start with parents first, so a stack of open
// ranges gives every event its direct parent.
void op_statistics(const Trace& trace, const detail::Scope& sc, const AnalysisOptions& opt, AnalysisResult& r) {
  struct Agg {
    uint64_t count = 0;
    int64_t total = 0, self = 0;
    bool runtime = false;
  };
  std::unordered_map<NameId, Agg> agg;
  const int64_t W0 = r.window.t0, W1 = r.window.t1;
  struct Open {
    int64_t end;
    NameId name;
    int64_t dur, children;
    bool counted;
  };
  std::vector<Open> stack;
  auto close = [&](const Open& o) {
    if (!o.counted) return;
    Agg& a = agg[o.name];
    a.self += std::max<int64_t>(0, o.dur - o.children);
  };
  for (const Track& t : trace.tracks()) {
    if (!in_scope(t, sc)) continue;
    stack.clear();
    for (const Event& e : t.events()) {
      const bool rt = e.kind == EventKind::Runtime || e.kind == EventKind::Driver;
      if (e.kind != EventKind::Range && !rt) continue;
      while (!stack.empty() && stack.back().end <= e.start_ns) {
        close(stack.back());
        stack.pop_back();
      }
      if (!stack.empty()) stack.back().children += e.duration_ns();
      const std::string_view n = trace.name(e.name);
      // Steps and profiler-wide spans contain everything: not an op.
      const bool counted = e.start_ns >= W0 && e.start_ns < W1 && !nc::is_step(n) && n.substr(0, 16) != "PyTorch Profiler";
      if (counted) {
        Agg& a = agg[e.name];
        ++a.count;
        a.total += e.duration_ns();
        a.runtime = rt;
      }
      stack.push_back({e.end_ns, e.name, e.duration_ns(), 0, counted});
    }
    while (!stack.empty()) {
      close(stack.back());
      stack.pop_back();
    }
  }
  r.top_ops.reserve(agg.size());
  for (const auto& [name, a] : agg)
    r.top_ops.push_back({std::string(trace.name(name)), a.count, a.total, a.self, a.runtime});
  std::sort(r.top_ops.begin(), r.top_ops.end(), [](const OpStat& a, const OpStat& b) {
    return a.self_ns != b.self_ns ? a.self_ns > b.self_ns : a.name < b.name;
  });
  if (r.top_ops.size() > opt.top_ops) r.top_ops.resize(opt.top_ops);
}

}  // namespace tb::prof::detail
