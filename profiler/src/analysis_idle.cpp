#include "analysis_idle.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "analysis_graphs.h"
#include "analysis_names.h"

namespace tb::prof::detail {
namespace {

using iv::Intervals;
namespace nc = name_class;

// A sync call that ended at most this long before the GPU went idle still counts as the cause: the host
// returns from the wait a few microseconds after the GPU's last work ends.
constexpr int64_t kSyncReleaseNs = 5000;

const Event* launch_of(const Trace& trace, const Activity& a) {
  const Flow* f = trace.flow_to(a.track, a.event);
  return f ? &trace.track(f->src_track).events()[f->src_event] : nullptr;
}

// The last wait record with lo <= t < hi, or nullptr.
const WaitRecord* last_wait_in(const std::vector<WaitRecord>& v, int64_t lo, int64_t hi) {
  auto it = std::lower_bound(v.begin(), v.end(), hi, [](const WaitRecord& w, int64_t t) { return w.t < t; });
  if (it == v.begin()) return nullptr;
  --it;
  return it->t >= lo ? &*it : nullptr;
}

}  // namespace

GpuSide collect_gpu(const Trace& trace, const Scope& sc, AnalysisResult& r) {
  GpuSide g;
  const auto& tracks = trace.tracks();
  g.stream_waits.resize(tracks.size());
  // Kernel names repeat thousands of times: classify each name once, not each kernel.
  std::unordered_map<NameId, bool> is_comm;
  size_t n = 0;
  for (const Track& t : tracks)
    if (t.kind() == TrackKind::GpuStream && t.pid() == sc.device) n += t.events().size();
  g.acts.reserve(n);
  for (uint32_t ti = 0; ti < tracks.size(); ++ti) {
    const Track& t = tracks[ti];
    if (t.kind() != TrackKind::GpuStream || t.pid() != sc.device) continue;
    const auto& ev = t.events();
    for (uint32_t i = 0; i < ev.size(); ++i) {
      const Event& e = ev[i];
      if (e.kind == EventKind::Sync) {
        if (trace.name(e.name) == "Stream Wait Event") g.stream_waits[ti].push_back({e.start_ns, ti, i});
        continue;
      }
      if (!is_gpu_activity(e.kind)) continue;
      ActClass c = ActClass::Memory;
      if (e.kind == EventKind::Kernel) {
        ++r.kernel_count;
        auto [it, fresh] = is_comm.try_emplace(e.name, false);
        if (fresh) it->second = nc::is_communication_kernel(trace.name(e.name));
        c = it->second ? ActClass::Comm : ActClass::Compute;
      } else if (e.kind == EventKind::Memcpy) {
        ++r.memcpy_count;
        if (e.memcpy_kind() == MemcpyKind::HtoD) g.htod.push_back({e.start_ns, e.end_ns});
      } else {
        ++r.memset_count;
      }
      g.acts.push_back({e.start_ns, e.end_ns, ti, i, c});
      (c == ActClass::Compute ? g.compute : c == ActClass::Comm ? g.comm : g.memory).push_back({e.start_ns, e.end_ns});
    }
  }
  // Stable: a stream's own events stay in their order when two start together.
  std::stable_sort(g.acts.begin(), g.acts.end(), [](const Activity& a, const Activity& b) { return a.start < b.start; });
  {
    std::vector<uint32_t> last(tracks.size(), kNone);
    for (uint32_t i = 0; i < g.acts.size(); ++i) {
      g.acts[i].prev = last[g.acts[i].track];
      last[g.acts[i].track] = i;
    }
  }
  // A CUDA graph's work is queued by one launch call for the whole replay: once the replay's first piece has
  // started, the rest was queued with it, whenever the launch call returns. Each piece is not a launch of its
  // own, and a gap between two of them is not the host being late.
  std::unordered_map<uint64_t, int64_t> replay_start;  // a graph launch's correlation -> its first work's start
  const std::vector<uint8_t> graph_launch = graph_launch_names(trace);
  auto queued_at = [&](const Activity& a, const Event& l) {
    const Event& w = tracks[a.track].events()[a.event];
    if (!w.graph && !is_graph_launch(graph_launch, l.name)) return l.end_ns;
    auto [r0, first] = replay_start.try_emplace(w.correlation, a.start);
    return first ? l.end_ns : std::min(l.end_ns, r0->second);
  };
  for (size_t i = 0; i < g.acts.size();) {
    const int64_t s = g.acts[i].start;
    int64_t ready = INT64_MAX, e = g.acts[i].end;
    uint32_t open = static_cast<uint32_t>(i), last = g.acts[i].track;
    size_t j = i;
    for (; j < g.acts.size() && g.acts[j].start == s; ++j) {
      if (g.acts[j].end > e) e = g.acts[j].end, last = g.acts[j].track;
      if (const Event* l = launch_of(trace, g.acts[j])) {
        if (const int64_t q = queued_at(g.acts[j], *l); q < ready) {
          ready = q;
          open = static_cast<uint32_t>(j);
        }
      }
    }
    if (!g.busy.empty() && s <= g.busy.back().t1) {
      if (e > g.busy.back().t1) g.busy.back().t1 = e, g.busy_last_track.back() = last;
    } else {
      g.busy.push_back({s, e});
      g.busy_open.push_back(open);
      g.busy_ready.push_back(ready == INT64_MAX ? INT64_MIN : ready);
      g.busy_last_track.push_back(last);
    }
    i = j;
  }
  g.compute = iv::merge(std::move(g.compute));
  g.comm = iv::merge(std::move(g.comm));
  g.memory = iv::merge(std::move(g.memory));
  g.htod = iv::merge(std::move(g.htod));
  return g;
}

namespace {

// What the launching thread recorded, as a merged union: every op, range and runtime call except the steps
// and profiler-wide spans, which contain everything and say nothing about what the host was doing.
const Intervals& recorded_on(const Trace& trace, uint32_t track, std::unordered_map<uint32_t, Intervals>& cache) {
  auto [it, fresh] = cache.try_emplace(track);
  if (!fresh) return it->second;
  Intervals v;
  std::unordered_map<NameId, bool> skip;
  for (const Event& e : trace.track(track).events()) {
    if (e.end_ns <= e.start_ns) continue;
    if (e.kind != EventKind::Range && e.kind != EventKind::Runtime && e.kind != EventKind::Driver &&
        e.kind != EventKind::Overhead)
      continue;
    auto [s, f] = skip.try_emplace(e.name, false);
    if (f) {
      const std::string_view n = trace.name(e.name);
      s->second = nc::is_step(n) || n.substr(0, 16) == "PyTorch Profiler";
    }
    if (s->second) continue;
    if (!v.empty() && e.start_ns <= v.back().t1) v.back().t1 = std::max(v.back().t1, e.end_ns);
    else v.push_back({e.start_ns, e.end_ns});  // events are sorted by start: one pass merges
  }
  it->second = std::move(v);
  return it->second;
}

}  // namespace

IdlePieces classify_idle(const Trace& trace, const GpuSide& g, const HostSide& h, const AnalysisOptions& opt,
                         AnalysisResult& r) {
  IdlePieces p;
  const int64_t W0 = r.window.t0, W1 = r.window.t1;
  std::unordered_map<uint32_t, Intervals> recorded;
  Intervals rest, left, tmp;
  // [a, b]: an idle interval; k: the busy interval after it (SIZE_MAX: none, the window ends).
  auto handle = [&](int64_t a, int64_t b, size_t k, bool lead_in, bool tail) {
    if (b <= a) return;
    ++r.idle_interval_count;
    left.clear();
    // The next work was queued (its launch call had returned) before the GPU went idle: whatever the host
    // was doing (waiting for data, blocked in a sync draining the queue, inside cudaMalloc), it did not hold
    // this work back. Only a gap whose next work was not queued yet is the host's.
    const bool queued = k != SIZE_MAX && g.busy_ready[k] != INT64_MIN && g.busy_ready[k] <= a;
    if (queued) {
      left.push_back({a, b});
    } else {
      const size_t stall_before = p.stall.size();
      iv::clip(h.data_wait, a, b, p.stall);
      if (p.stall.size() > stall_before) ++r.loader_stall_count;
      rest.clear();
      iv::complement(h.data_wait, a, b, rest);
      if (rest.empty()) return;
      // The host was blocked in a sync when the GPU ran dry: the whole rest is the sync's cost.
      auto s = iv::first_ending_after(h.sync_calls, a - kSyncReleaseNs - 1);
      if (s != h.sync_calls.end() && s->t0 <= a) {
        p.sync.insert(p.sync.end(), rest.begin(), rest.end());
        return;
      }
      for (const Interval& x : rest) iv::clip(h.slow_runtime, x.t0, x.t1, p.runtime);
      for (const Interval& x : rest) iv::complement(h.slow_runtime, x.t0, x.t1, left);
      if (left.empty()) return;
    }
    Intervals* dst = &p.other;
    if (lead_in || tail) {
      dst = &p.edge;
      (lead_in ? r.lead_in_ns : r.tail_ns) += iv::total(left);
    } else if (iv::total(left) < opt.min_gap_ns) {
      dst = &p.overhead;
    } else if (g.busy_ready[k] != INT64_MIN && g.busy_ready[k] > a) {
      // The next work's launch call had not returned when the GPU went idle: the host was late.
      dst = &p.gap;
      ++r.launch_gap_count;
      const Activity& w = g.acts[g.busy_open[k]];
      const Flow* f = trace.flow_to(w.track, w.event);
      const Intervals& rec = recorded_on(trace, f->src_track, recorded);
      tmp.clear();
      for (const Interval& x : left) iv::complement(rec, x.t0, x.t1, tmp);
      if (!tmp.empty()) {
        ++r.launch_gap_unrecorded_count;
        for (const Interval& x : tmp)
          if (x.length() > r.launch_gap_unrecorded_largest.length()) r.launch_gap_unrecorded_largest = x;
        p.gap_unrecorded.insert(p.gap_unrecorded.end(), tmp.begin(), tmp.end());
      }
    } else if (g.busy_ready[k] != INT64_MIN) {
      // Queued before the GPU went idle. A cross-stream wait when its stream was free before (its previous
      // work ended earlier), the work that had just ended ran on another stream, and a wait on its stream is
      // recorded between the launch of that previous work and its own launch.
      const Activity& w = g.acts[g.busy_open[k]];
      const Activity* prev = w.prev != kNone ? &g.acts[w.prev] : nullptr;
      const Flow* f = trace.flow_to(w.track, w.event);
      const int64_t launched = trace.track(f->src_track).events()[f->src_event].start_ns;
      const uint32_t ended = g.busy_last_track[k - 1];  // the stream whose work ended when the GPU went idle
      if ((!prev || prev->end < a) && ended != w.track) {
        const Event* pl = prev ? launch_of(trace, *prev) : nullptr;
        const int64_t lo = pl ? pl->start_ns : INT64_MIN;
        const WaitRecord* wr = last_wait_in(g.stream_waits[w.track], lo, launched);
        if (!wr && f->src_track < h.wait_calls.size()) wr = last_wait_in(h.wait_calls[f->src_track], lo, launched);
        if (wr) {
          dst = &p.event_wait;
          ++r.event_wait_count;
          if (r.event_waits.size() < opt.max_intervals) {
            const Event& we = trace.track(wr->track).events()[wr->event];
            EventWait ew;
            ew.idle = {left.front().t0, left.back().t1};
            ew.stream = trace.track(w.track).tid();
            ew.after_stream = trace.track(ended).tid();
            ew.wait_ns = we.start_ns;
            ew.wait = std::string(trace.name(we.name));
            if (we.kind == EventKind::Sync && we.arg != kNoArg) ew.event_record = we.arg;
            ew.work = std::string(trace.name(trace.track(w.track).events()[w.event].name));
            ew.track = wr->track;
            ew.event = wr->event;
            r.event_waits.push_back(std::move(ew));
          }
        }
      }
    }
    dst->insert(dst->end(), left.begin(), left.end());
  };
  // The profiler's own time comes out first, whatever else held the GPU: a trace chunk written on the training
  // thread after a loss.item() read as 5.3 s of "idle after a host sync" on an H100. The rest of the interval
  // is classified as before, piece by piece.
  Intervals own, outside, traced;
  auto by_profiler = [&](int64_t a, int64_t b, size_t k, bool lead_in, bool tail) {
    if (b <= a) return;
    own.clear();
    iv::clip(h.profiler, a, b, own);
    if (own.empty()) return handle(a, b, k, lead_in, tail);
    r.profiler_count += static_cast<uint32_t>(own.size());
    p.profiler.insert(p.profiler.end(), own.begin(), own.end());
    outside.clear();
    iv::complement(h.profiler, a, b, outside);
    const Intervals pieces = outside;  // handle() reuses the scratch vectors
    for (const Interval& x : pieces) handle(x.t0, x.t1, k, lead_in, tail);
  };
  // A sampled trace's untraced steps are no class at all: what lies between two chunks was not recorded.
  auto split = [&](int64_t a, int64_t b, size_t k, bool lead_in, bool tail) {
    if (b <= a) return;
    if (h.untraced.empty()) return by_profiler(a, b, k, lead_in, tail);
    traced.clear();
    iv::complement(h.untraced, a, b, traced);
    const Intervals pieces = traced;
    for (const Interval& x : pieces) by_profiler(x.t0, x.t1, k, lead_in, tail);
  };
  auto it = iv::first_ending_after(g.busy, W0);
  int64_t cur = W0;
  bool first = true;
  for (; it != g.busy.end() && it->t0 < W1; ++it) {
    if (it->t0 > cur) split(cur, it->t0, static_cast<size_t>(it - g.busy.begin()), first, false);
    first = false;
    cur = std::max(cur, it->t1);
  }
  if (cur < W1) split(cur, W1, SIZE_MAX, first, !first);
  r.profiler_ns = iv::total(p.profiler);
  r.loader_stall_ns = iv::total(p.stall);
  r.sync_idle_ns = iv::total(p.sync);
  r.runtime_idle_ns = iv::total(p.runtime);
  r.launch_gap_ns = iv::total(p.gap);
  r.launch_gap_unrecorded_ns = iv::total(p.gap_unrecorded);
  r.launch_overhead_ns = iv::total(p.overhead);
  r.event_wait_ns = iv::total(p.event_wait);
  r.other_idle_ns = iv::total(p.other);
  return p;
}

}  // namespace tb::prof::detail
