#include "profiler/analysis.h"

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <unordered_map>

#include "analysis_cpu.h"
#include "json_writer.h"
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
  }
  return "?";
}

namespace {

using Intervals = std::vector<Interval>;

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// Sorts and merges overlapping/touching intervals; drops empty ones.
Intervals merge(Intervals v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](const Interval& i) { return i.t1 <= i.t0; }), v.end());
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.t0 < b.t0; });
  Intervals out;
  out.reserve(v.size());
  for (const Interval& i : v) {
    if (!out.empty() && i.t0 <= out.back().t1) {
      out.back().t1 = std::max(out.back().t1, i.t1);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

// Total length of the (merged, sorted) intervals inside [a, b]. O(log n + k).
int64_t measure(const Intervals& merged, int64_t a, int64_t b) {
  if (b <= a || merged.empty()) return 0;
  auto it = std::upper_bound(merged.begin(), merged.end(), a, [](int64_t t, const Interval& i) { return t < i.t1; });
  int64_t sum = 0;
  for (; it != merged.end() && it->t0 < b; ++it) sum += std::min(b, it->t1) - std::max(a, it->t0);
  return sum;
}

// Pieces of the (merged, sorted) intervals inside [a, b].
void clip(const Intervals& merged, int64_t a, int64_t b, Intervals& out) {
  if (b <= a) return;
  auto it = std::upper_bound(merged.begin(), merged.end(), a, [](int64_t t, const Interval& i) { return t < i.t1; });
  for (; it != merged.end() && it->t0 < b; ++it) {
    const int64_t x = std::max(a, it->t0), y = std::min(b, it->t1);
    if (y > x) out.push_back({x, y});
  }
}

// [a, b] minus the (merged, sorted) intervals.
void complement(const Intervals& merged, int64_t a, int64_t b, Intervals& out) {
  int64_t cur = a;
  auto it = std::upper_bound(merged.begin(), merged.end(), a, [](int64_t t, const Interval& i) { return t < i.t1; });
  for (; it != merged.end() && it->t0 < b; ++it) {
    if (it->t0 > cur) out.push_back({cur, it->t0});
    cur = std::max(cur, it->t1);
  }
  if (cur < b) out.push_back({cur, b});
}

bool is_step_name(std::string_view n) { return n == names::kStep || starts_with(n, "ProfilerStep#"); }
bool is_data_wait_name(std::string_view n) {
  return n == names::kDataWait || (starts_with(n, "enumerate(DataLoader)") && ends_with(n, "__next__"));
}
bool is_forward_name(std::string_view n) {
  return n == names::kForward || n == "## forward ##" || starts_with(n, "DistributedDataParallel.forward");
}
bool is_backward_name(std::string_view n) {
  return n == names::kBackward || n == "## backward ##" || starts_with(n, "autograd::engine::evaluate_function");
}
bool is_optimizer_name(std::string_view n) {
  return n == names::kOptimizer || n == "## optimizer ##" || starts_with(n, "Optimizer.step#") ||
         starts_with(n, "Optimizer.zero_grad#");
}

std::string lower(std::string_view s) {
  std::string o(s);
  for (char& c : o) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return o;
}

bool is_matmul_conv_kernel(const std::string& l) {
  // cuDNN/cuBLAS/CUTLASS convolution and GEMM kernels (not cudnn::bn_* or other cuDNN helpers).
  static const char* kPat[] = {"gemm", "conv", "scudnn", "hcudnn", "cutlass", "implicit_", "wgrad", "dgrad",
                               "fprop", "xmma", "winograd", "matmul", "gemv"};
  for (const char* p : kPat)
    if (l.find(p) != std::string::npos) return true;
  return false;
}

bool is_tensor_core_kernel(const std::string& l) {
  static const char* kPat[] = {"tensorop", "hmma", "xmma", "wgmma", "884", "1688", "16816", "16832", "_fp16_",
                               "_bf16_", "_f16_", "tf32", "s161616", "h161616", "imma", "_tc_", "sm90_", "sm100_"};
  for (const char* p : kPat)
    if (l.find(p) != std::string::npos) return true;
  return false;
}

int64_t step_number(std::string_view n, int64_t arg, int64_t ordinal) {
  if (arg != kNoArg) return arg;
  auto pos = n.find('#');
  if (pos != std::string_view::npos) {
    int64_t v = 0;
    bool any = false;
    for (size_t i = pos + 1; i < n.size() && n[i] >= '0' && n[i] <= '9' && v < (INT64_MAX / 10 - 10); ++i) {
      v = v * 10 + (n[i] - '0');
      any = true;
    }
    if (any) return v;
  }
  return ordinal;
}

std::string fmt_ms(int64_t ns) {
  char b[64];
  std::snprintf(b, sizeof b, "%.3f ms", static_cast<double>(ns) / 1e6);
  return b;
}
std::string fmt_pct(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", s * 100.0);
  return b;
}
std::string fmt_x(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2fx", x);
  return b;
}
double bound(double share) { return share >= 0.999999 ? 1e6 : 1.0 / (1.0 - std::max(0.0, share)); }

// A finding that a knob addresses; the share of the window it costs bounds the gain of removing it.
Finding knob_finding(FindingKind kind, const char* knob, std::string value, std::vector<std::string> also,
                     double share) {
  Finding f;
  f.kind = kind;
  f.id = to_string(kind);
  f.knob = knob;
  f.value = std::move(value);
  f.also = std::move(also);
  f.share = share;
  f.max_speedup = bound(share);
  return f;
}

Interval largest(const Intervals& v) {
  Interval best;
  for (const Interval& i : v)
    if (i.length() > best.length()) best = i;
  return best;
}

struct Activity {
  int64_t start, end;
  uint32_t track, event;
};

}  // namespace

AnalysisResult analyze(const Trace& trace, const AnalysisOptions& opt) {
  AnalysisResult r;
  r.min_gap_ns = opt.min_gap_ns;
  const auto& tracks = trace.tracks();

  // --- GPU activity, kernel stats.
  std::vector<Activity> acts;
  Intervals htod;
  struct KAgg {
    uint64_t count = 0;
    int64_t total = 0, mn = INT64_MAX, mx = 0;
  };
  std::unordered_map<NameId, KAgg> kagg;
  bool any_runtime = false, any_driver = false;
  for (uint32_t ti = 0; ti < tracks.size(); ++ti) {
    const Track& t = tracks[ti];
    if (t.kind() == TrackKind::GpuStream) {
      const auto& ev = t.events();
      for (uint32_t i = 0; i < ev.size(); ++i) {
        const Event& e = ev[i];
        if (!is_gpu_activity(e.kind)) continue;
        acts.push_back({e.start_ns, e.end_ns, ti, i});
        if (e.kind == EventKind::Kernel) {
          ++r.kernel_count;
          KAgg& k = kagg[e.name];
          ++k.count;
          const int64_t d = e.duration_ns();
          k.total += d;
          k.mn = std::min(k.mn, d);
          k.mx = std::max(k.mx, d);
        } else if (e.kind == EventKind::Memcpy) {
          ++r.memcpy_count;
          if (e.memcpy_kind() == MemcpyKind::HtoD) htod.push_back({e.start_ns, e.end_ns});
        } else {
          ++r.memset_count;
        }
      }
    } else if (t.kind() == TrackKind::CpuThread) {
      for (const Event& e : t.events()) {
        if (e.kind == EventKind::Runtime) any_runtime = true;
        if (e.kind == EventKind::Driver) any_driver = true;
        if (any_runtime) break;
      }
    }
  }
  r.has_gpu = !acts.empty();
  std::sort(acts.begin(), acts.end(), [](const Activity& a, const Activity& b) { return a.start < b.start; });
  // Busy union; for each busy interval, the earliest launch among the activities that start it.
  Intervals busy;
  std::vector<int64_t> busy_launch;  // INT64_MIN: unknown launch
  for (size_t i = 0; i < acts.size();) {
    const int64_t s = acts[i].start;
    int64_t launch = INT64_MAX;
    bool known = false;
    size_t j = i;
    for (; j < acts.size() && acts[j].start == s; ++j) {
      if (const Flow* f = trace.flow_to(acts[j].track, acts[j].event)) {
        launch = std::min(launch, tracks[f->src_track].events()[f->src_event].start_ns);
        known = true;
      }
    }
    int64_t e = acts[i].end;
    for (size_t k = i; k < j; ++k) e = std::max(e, acts[k].end);
    if (!busy.empty() && s <= busy.back().t1) {
      busy.back().t1 = std::max(busy.back().t1, e);
    } else {
      busy.push_back({s, e});
      busy_launch.push_back(known ? launch : INT64_MIN);
    }
    i = j;
  }
  htod = merge(std::move(htod));

  // --- Steps and the training thread.
  int32_t step_track = -1;
  size_t best_steps = 0;
  for (uint32_t ti = 0; ti < tracks.size(); ++ti) {
    if (tracks[ti].kind() != TrackKind::CpuThread) continue;
    size_t n = 0;
    for (const Event& e : tracks[ti].events())
      if (e.kind == EventKind::Range && is_step_name(trace.name(e.name))) ++n;
    if (n > best_steps) {
      best_steps = n;
      step_track = static_cast<int32_t>(ti);
    }
  }
  if (step_track >= 0) {
    int64_t last_end = INT64_MIN;
    int64_t ordinal = 0;
    for (const Event& e : tracks[step_track].events()) {
      if (e.kind != EventKind::Range) continue;
      const std::string_view n = trace.name(e.name);
      if (!is_step_name(n) || e.start_ns < last_end) continue;  // nested/overlapping step: keep the outer one
      StepBreakdown s;
      s.index = step_number(n, e.arg, ordinal++);
      s.start_ns = e.start_ns;
      s.end_ns = e.end_ns;
      r.steps.push_back(s);
      last_end = e.end_ns;
    }
    r.training_track = step_track;
  } else {
    // No steps: the thread with the most data-wait time, else the one with the most launches.
    int64_t best_wait = 0;
    size_t best_launch = 0;
    int32_t by_launch = -1;
    for (uint32_t ti = 0; ti < tracks.size(); ++ti) {
      if (tracks[ti].kind() != TrackKind::CpuThread) continue;
      int64_t wait = 0;
      size_t launches = 0;
      for (const Event& e : tracks[ti].events()) {
        if (e.kind == EventKind::Range && is_data_wait_name(trace.name(e.name))) wait += e.duration_ns();
        if ((e.kind == EventKind::Runtime || e.kind == EventKind::Driver) && e.correlation) ++launches;
      }
      if (wait > best_wait) {
        best_wait = wait;
        r.training_track = static_cast<int32_t>(ti);
      }
      if (launches > best_launch) {
        best_launch = launches;
        by_launch = static_cast<int32_t>(ti);
      }
    }
    if (r.training_track < 0) r.training_track = by_launch;
  }

  // --- Window.
  if (!r.steps.empty()) {
    r.window = {r.steps.front().start_ns, r.steps.back().end_ns};
    for (const auto& s : r.steps) r.window.t1 = std::max(r.window.t1, s.end_ns);
    r.window_from_steps = true;
  } else if (!busy.empty()) {
    r.window = {busy.front().t0, busy.back().t1};
  } else if (r.training_track >= 0 && !tracks[r.training_track].empty()) {
    const Track& t = tracks[r.training_track];
    int64_t end = t.events().front().end_ns;
    for (const Event& e : t.events()) end = std::max(end, e.end_ns);  // no reliance on blocks
    r.window = {t.events().front().start_ns, end};
    r.notes.push_back("no steps and no GPU activity: the window is the training thread's recorded span");
  } else {
    r.window = {trace.start_ns(), trace.end_ns()};
  }
  const int64_t W0 = r.window.t0, W1 = r.window.t1;
  const int64_t window_len = std::max<int64_t>(0, W1 - W0);

  // --- Host ranges of interest.
  Intervals data_wait, h2d_host, fwd, bwd, optim;
  if (r.training_track >= 0) {
    for (const Event& e : tracks[r.training_track].events()) {
      if (e.kind != EventKind::Range) continue;
      const std::string_view n = trace.name(e.name);
      if (is_data_wait_name(n)) data_wait.push_back({e.start_ns, e.end_ns});
      else if (n == names::kH2D) h2d_host.push_back({e.start_ns, e.end_ns});
    }
  }
  for (const Track& t : tracks) {
    if (t.kind() != TrackKind::CpuThread) continue;
    for (const Event& e : t.events()) {
      if (e.kind != EventKind::Range) continue;
      const std::string_view n = trace.name(e.name);
      if (is_forward_name(n)) fwd.push_back({e.start_ns, e.end_ns});
      else if (is_backward_name(n)) bwd.push_back({e.start_ns, e.end_ns});
      else if (is_optimizer_name(n)) optim.push_back({e.start_ns, e.end_ns});
    }
  }
  data_wait = merge(std::move(data_wait));
  h2d_host = merge(std::move(h2d_host));
  fwd = merge(std::move(fwd));
  bwd = merge(std::move(bwd));
  optim = merge(std::move(optim));

  // --- Idle classification.
  Intervals stall_pieces, gap_pieces, other_pieces;
  if (window_len > 0) {
    if (r.has_gpu) {
      r.gpu_busy_ns = measure(busy, W0, W1);
      // Walk the idle intervals: gaps between busy intervals, clipped to the window.
      auto it = std::upper_bound(busy.begin(), busy.end(), W0, [](int64_t t, const Interval& i) { return t < i.t1; });
      int64_t cur = W0;
      auto handle = [&](int64_t a, int64_t b, int64_t next_launch, bool has_next) {
        if (b <= a) return;
        ++r.idle_interval_count;
        const int64_t stall = measure(data_wait, a, b);
        if (stall > 0) {
          ++r.loader_stall_count;
          r.loader_stall_ns += stall;
          clip(data_wait, a, b, stall_pieces);
        }
        const int64_t rest = (b - a) - stall;
        if (rest <= 0) return;
        Intervals rest_pieces;
        complement(data_wait, a, b, rest_pieces);
        const bool host_late = has_next && next_launch != INT64_MIN && next_launch > a;
        if (rest >= opt.min_gap_ns && host_late) {
          ++r.launch_gap_count;
          r.launch_gap_ns += rest;
          gap_pieces.insert(gap_pieces.end(), rest_pieces.begin(), rest_pieces.end());
        } else {
          r.other_idle_ns += rest;
          other_pieces.insert(other_pieces.end(), rest_pieces.begin(), rest_pieces.end());
        }
      };
      for (; it != busy.end() && it->t0 < W1; ++it) {
        if (it->t0 > cur) handle(cur, it->t0, busy_launch[it - busy.begin()], true);
        cur = std::max(cur, it->t1);
      }
      if (cur < W1) handle(cur, W1, INT64_MIN, false);
      r.gpu_idle_ns = window_len - r.gpu_busy_ns;
    } else {
      // CPU-only: the loader stall is the training thread's data-wait time inside the window.
      r.gpu_idle_ns = window_len;
      clip(data_wait, W0, W1, stall_pieces);
      for (const Interval& i : stall_pieces) r.loader_stall_ns += i.length();
      r.loader_stall_count = static_cast<uint32_t>(stall_pieces.size());
      r.other_idle_ns = window_len - r.loader_stall_ns;
      complement(data_wait, W0, W1, other_pieces);
      r.notes.push_back("no GPU activity in this trace: CPU-only analysis (loader stall = data-wait time)");
    }
  }
  // Pieces are produced in time order per idle interval and intervals in order: already sorted.

  // --- Sync points.
  {
    const bool use_runtime = any_runtime;
    const bool use_driver = !any_runtime && any_driver;
    for (uint32_t ti = 0; ti < tracks.size(); ++ti) {
      const Track& t = tracks[ti];
      if (t.kind() != TrackKind::CpuThread) continue;
      const auto& ev = t.events();
      for (uint32_t i = 0; i < ev.size(); ++i) {
        const Event& e = ev[i];
        bool is_sync = false;
        if (use_runtime || use_driver) {
          if ((use_runtime && e.kind == EventKind::Runtime) || (use_driver && e.kind == EventKind::Driver)) {
            is_sync = (e.flags & kFlagBlockingSync) || is_blocking_sync_api(trace.name(e.name));
          }
        } else {
          is_sync = e.kind == EventKind::Range && trace.name(e.name) == names::kSync;
        }
        if (!is_sync) continue;
        const int64_t a = std::max(e.start_ns, W0), b = std::min(e.end_ns, W1);
        if (b < a || (b == a && !(e.start_ns >= W0 && e.start_ns <= W1))) continue;
        ++r.sync_count;
        r.sync_ns += b - a;
        if (r.sync_points.size() < opt.max_intervals)
          r.sync_points.push_back({ti, i, {e.start_ns, e.end_ns}, std::string(trace.name(e.name))});
      }
    }
    std::sort(r.sync_points.begin(), r.sync_points.end(),
              [](const SyncPoint& a, const SyncPoint& b) { return a.interval.t0 < b.interval.t0; });
  }

  // --- Per-step breakdown.
  if (!r.steps.empty()) {
    std::vector<int64_t> kernel_starts;
    for (const Activity& a : acts)
      if (tracks[a.track].events()[a.event].kind == EventKind::Kernel) kernel_starts.push_back(a.start);
    std::vector<Interval> sync_iv;
    for (const SyncPoint& s : r.sync_points) sync_iv.push_back(s.interval);
    for (StepBreakdown& s : r.steps) {
      const int64_t a = s.start_ns, b = s.end_ns;
      s.data_wait_ns = measure(data_wait, a, b);
      s.h2d_ns = !h2d_host.empty() ? measure(h2d_host, a, b) : measure(htod, a, b);
      s.forward_ns = measure(fwd, a, b);
      s.backward_ns = measure(bwd, a, b);
      s.optimizer_ns = measure(optim, a, b);
      if (r.has_gpu) {
        s.gpu_busy_ns = measure(busy, a, b);
        s.gpu_idle_ns = (b - a) - s.gpu_busy_ns;
        s.loader_stall_ns = measure(stall_pieces, a, b);
        s.launch_gap_ns = measure(gap_pieces, a, b);
        s.other_idle_ns = s.gpu_idle_ns - s.loader_stall_ns - s.launch_gap_ns;
      } else {
        s.gpu_idle_ns = b - a;
        s.loader_stall_ns = s.data_wait_ns;
        s.other_idle_ns = s.gpu_idle_ns - s.loader_stall_ns;
      }
      for (const Interval& iv : sync_iv) {
        if (iv.t0 >= a && iv.t0 < b) {
          ++s.sync_count;
          s.sync_ns += std::min(iv.t1, b) - iv.t0;
        }
      }
      s.kernel_count = static_cast<uint32_t>(std::lower_bound(kernel_starts.begin(), kernel_starts.end(), b) -
                                             std::lower_bound(kernel_starts.begin(), kernel_starts.end(), a));
    }
    std::vector<int64_t> d;
    for (const auto& s : r.steps) d.push_back(s.duration_ns());
    std::sort(d.begin(), d.end());
    r.step_median_ns = d.size() % 2 ? d[d.size() / 2] : (d[d.size() / 2 - 1] + d[d.size() / 2]) / 2;
  }

  // --- Top kernels and Tensor Core use.
  {
    std::vector<KernelStat> ks;
    ks.reserve(kagg.size());
    int64_t total_busy_kernels = 0;
    int64_t mm_total = 0, mm_tc = 0;
    for (const auto& [name, k] : kagg) {
      KernelStat s;
      s.name = std::string(trace.name(name));
      s.count = k.count;
      s.total_ns = k.total;
      s.min_ns = k.mn == INT64_MAX ? 0 : k.mn;
      s.max_ns = k.mx;
      const std::string l = lower(s.name);
      s.tensor_core = is_tensor_core_kernel(l);
      if (is_matmul_conv_kernel(l)) {
        mm_total += k.total;
        if (s.tensor_core) mm_tc += k.total;
      }
      total_busy_kernels += k.total;
      ks.push_back(std::move(s));
    }
    const int64_t busy_all = std::max<int64_t>(1, measure(busy, INT64_MIN / 2, INT64_MAX / 2));
    for (auto& s : ks) s.share_of_busy = static_cast<double>(s.total_ns) / static_cast<double>(busy_all);
    std::sort(ks.begin(), ks.end(), [](const KernelStat& a, const KernelStat& b) {
      return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
    });
    if (ks.size() > opt.top_kernels) ks.resize(opt.top_kernels);
    r.top_kernels = std::move(ks);
    r.tensor_core_share = mm_total > 0 ? static_cast<double>(mm_tc) / static_cast<double>(mm_total) : -1.0;

    // Low Tensor Core use: matmul/conv kernels are a large part of GPU time and mostly not on Tensor Cores.
    if (mm_total > 0 && window_len > 0 && r.tensor_core_share < 0.5 && total_busy_kernels > 0) {
      const double mm_share_of_busy = static_cast<double>(mm_total) / static_cast<double>(total_busy_kernels);
      const double share = std::min(1.0, static_cast<double>(mm_total - mm_tc) / static_cast<double>(busy_all) *
                                              (static_cast<double>(r.gpu_busy_ns) / window_len));
      if (mm_share_of_busy >= 0.2 && share >= opt.finding_min_share) {
        Finding f = knob_finding(FindingKind::LowTensorCore, "amp", "fp16", {"tf32", "channels_last"}, share);
        f.message = "matmul/conv kernels take " + fmt_pct(mm_share_of_busy) + " of GPU time, only " +
                    fmt_pct(r.tensor_core_share) + " of it on Tensor Cores -> amp / tf32 / channels_last; at most " +
                    fmt_x(f.max_speedup);
        f.evidence = r.window;
        r.findings.push_back(std::move(f));
      }
    }
  }

  // --- Findings.
  auto push_interval_cap = [&](Intervals& src, Intervals& dst) {
    if (src.size() > opt.max_intervals) src.resize(opt.max_intervals);
    dst = std::move(src);
  };
  const double wl = window_len > 0 ? static_cast<double>(window_len) : 1.0;
  const char* span = r.window_from_steps ? "step time" : "the analysed window";
  if (r.loader_stall_ns > 0) {
    const double share = r.loader_stall_ns / wl;
    if (share >= opt.finding_min_share) {
      // Our traces record the training machine's cores: more loader threads than cores only compete with
      // the step. Traces from elsewhere (Kineto) get the common starting point, 4.
      int workers = 4;
      if (auto it = trace.meta().extra.find("cpu_cores"); it != trace.meta().extra.end()) {
        const int cores = std::atoi(it->second.c_str());
        if (cores > 0) workers = std::clamp(cores, 1, 8);
      }
      Finding f = knob_finding(FindingKind::LoaderStall, "workers", std::to_string(workers),
                               {"prefetch", "pin_memory"}, share);
      f.message = std::string(r.has_gpu ? "GPU waited for the loader " : "training thread waited for data ") +
                  fmt_pct(share) + " of " + span + " (" + fmt_ms(r.loader_stall_ns) + " in " +
                  std::to_string(r.loader_stall_count) + " intervals) -> workers / prefetch / pin_memory; at most " +
                  fmt_x(f.max_speedup);
      f.evidence = largest(stall_pieces);
      r.findings.push_back(std::move(f));
    }
  }
  if (r.launch_gap_ns > 0) {
    const double share = r.launch_gap_ns / wl;
    if (share >= opt.finding_min_share) {
      Finding f = knob_finding(FindingKind::LaunchGap, "cuda_graphs", "on",
                               {"batch_size", "fused_pointwise", "fused_optimizer"}, share);
      f.message = "GPU idle waiting for kernel launches " + fmt_pct(share) + " of " + span + " (" +
                  fmt_ms(r.launch_gap_ns) + " in " + std::to_string(r.launch_gap_count) +
                  " gaps) -> cuda_graphs / bigger batch_size / fused ops; at most " + fmt_x(f.max_speedup);
      f.evidence = largest(gap_pieces);
      r.findings.push_back(std::move(f));
    }
  }
  if (r.sync_count > 0) {
    const double share = std::min(1.0, r.sync_ns / wl);
    if (share >= opt.finding_min_share) {
      Finding f = knob_finding(FindingKind::SyncPoints, "sync_free_logging", "20", {}, share);
      f.message = "host blocked on the GPU in " + std::to_string(r.sync_count) + " sync points, " + fmt_pct(share) +
                  " of " + span + " (" + fmt_ms(r.sync_ns) + ") -> sync_free_logging; at most " +
                  fmt_x(f.max_speedup);
      Interval ev;
      for (const SyncPoint& s : r.sync_points)
        if (s.interval.length() > ev.length()) ev = s.interval;
      f.evidence = ev;
      r.findings.push_back(std::move(f));
    }
  }
  add_host_findings(trace, opt, r);
  std::sort(r.findings.begin(), r.findings.end(), [](const Finding& a, const Finding& b) { return a.share > b.share; });
  const TraceMetadata& m = trace.meta();
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
  if (r.has_gpu && trace.flows().empty())
    r.notes.push_back("no launch->kernel correlation in this trace: launch gaps cannot be attributed (counted as other idle)");

  push_interval_cap(stall_pieces, r.loader_stall_intervals);
  push_interval_cap(gap_pieces, r.launch_gap_intervals);
  return r;
}

std::string to_json(const AnalysisResult& r, const TraceMetadata* meta) {
  JsonWriter w;
  auto us = [](int64_t ns) { return static_cast<double>(ns) / 1000.0; };
  const double wl = r.window.length() > 0 ? static_cast<double>(r.window.length()) : 1.0;
  w.begin_object();
  w.key("version").value(int64_t{1});
  if (meta) {
    w.key("trace").begin_object();
    w.key("source_format").value(meta->source_format);
    w.key("path").value(meta->source_path);
    w.key("device").value(meta->device);
    w.key("collector_state").value(meta->collector_state);
    w.key("collector_reason").value(meta->collector_reason);
    w.key("dropped_records").value(static_cast<int64_t>(meta->dropped_records));
    w.end_object();
  }
  w.key("window").begin_object();
  w.key("start_us").value(us(r.window.t0)).key("end_us").value(us(r.window.t1));
  w.key("duration_us").value(us(r.window.length()));
  w.key("from_steps").value(r.window_from_steps);
  w.end_object();
  w.key("gpu").begin_object();
  w.key("present").value(r.has_gpu);
  w.key("busy_us").value(us(r.gpu_busy_ns)).key("idle_us").value(us(r.gpu_idle_ns));
  w.key("busy_share").value(r.gpu_busy_ns / wl);
  w.key("idle_intervals").value(static_cast<int64_t>(r.idle_interval_count));
  w.key("other_idle_us").value(us(r.other_idle_ns));
  w.end_object();
  auto intervals = [&](const std::vector<Interval>& v) {
    w.begin_array();
    for (const auto& i : v) w.begin_array().value(us(i.t0)).value(us(i.t1)).end_array();
    w.end_array();
  };
  w.key("loader_stall").begin_object();
  w.key("total_us").value(us(r.loader_stall_ns)).key("count").value(static_cast<int64_t>(r.loader_stall_count));
  w.key("share").value(r.loader_stall_ns / wl);
  w.key("intervals_us");
  intervals(r.loader_stall_intervals);
  w.end_object();
  w.key("launch_gap").begin_object();
  w.key("total_us").value(us(r.launch_gap_ns)).key("count").value(static_cast<int64_t>(r.launch_gap_count));
  w.key("min_gap_us").value(us(r.min_gap_ns));
  w.key("share").value(r.launch_gap_ns / wl);
  w.key("intervals_us");
  intervals(r.launch_gap_intervals);
  w.end_object();
  w.key("sync").begin_object();
  w.key("count").value(static_cast<int64_t>(r.sync_count)).key("total_us").value(us(r.sync_ns));
  w.key("share").value(r.sync_ns / wl);
  w.key("points").begin_array();
  for (const auto& s : r.sync_points) {
    w.begin_object().key("name").value(s.name).key("start_us").value(us(s.interval.t0));
    w.key("dur_us").value(us(s.interval.length())).end_object();
  }
  w.end_array();
  w.end_object();
  w.key("steps").begin_object();
  w.key("count").value(static_cast<int64_t>(r.steps.size())).key("median_us").value(us(r.step_median_ns));
  w.key("items").begin_array();
  for (const auto& s : r.steps) {
    w.begin_object();
    w.key("index").value(s.index).key("start_us").value(us(s.start_ns)).key("duration_us").value(us(s.duration_ns()));
    w.key("data_wait_us").value(us(s.data_wait_ns)).key("h2d_us").value(us(s.h2d_ns));
    w.key("forward_us").value(us(s.forward_ns)).key("backward_us").value(us(s.backward_ns));
    w.key("optimizer_us").value(us(s.optimizer_ns)).key("gpu_busy_us").value(us(s.gpu_busy_ns));
    w.key("gpu_idle_us").value(us(s.gpu_idle_ns)).key("loader_stall_us").value(us(s.loader_stall_ns));
    w.key("launch_gap_us").value(us(s.launch_gap_ns)).key("other_idle_us").value(us(s.other_idle_ns));
    w.key("sync_us").value(us(s.sync_ns)).key("sync_count").value(static_cast<int64_t>(s.sync_count));
    w.key("kernel_count").value(static_cast<int64_t>(s.kernel_count));
    w.end_object();
  }
  w.end_array();
  w.end_object();
  w.key("kernels").begin_object();
  w.key("count").value(static_cast<int64_t>(r.kernel_count));
  w.key("memcpy_count").value(static_cast<int64_t>(r.memcpy_count));
  w.key("memset_count").value(static_cast<int64_t>(r.memset_count));
  if (r.tensor_core_share >= 0) w.key("tensor_core_share").value(r.tensor_core_share);
  else w.key("tensor_core_share").null();
  w.key("top").begin_array();
  for (const auto& k : r.top_kernels) {
    w.begin_object().key("name").value(k.name).key("count").value(static_cast<int64_t>(k.count));
    w.key("total_us").value(us(k.total_ns)).key("min_us").value(us(k.min_ns)).key("max_us").value(us(k.max_ns));
    w.key("share_of_busy").value(k.share_of_busy).key("tensor_core").value(k.tensor_core).end_object();
  }
  w.end_array();
  w.end_object();
  w.key("findings").begin_array();
  for (const auto& f : r.findings) {
    w.begin_object();
    w.key("kind").value(f.id).key("message").value(f.message).key("knob").value(f.knob).key("value").value(f.value);
    w.key("also").begin_array();
    for (const auto& a : f.also) w.value(a);
    w.end_array();
    w.key("share").value(f.share).key("max_speedup").value(f.max_speedup);
    w.key("evidence_us").begin_array().value(us(f.evidence.t0)).value(us(f.evidence.t1)).end_array();
    w.end_object();
  }
  w.end_array();
  w.key("notes").begin_array();
  for (const auto& n : r.notes) w.value(n);
  w.end_array();
  w.end_object();
  return w.take();
}

}  // namespace tb::prof
