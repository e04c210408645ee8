// The findings from the step lane's timings alone (docs/analysis.md, "Findings from step timings"): a sampled
// trace records a few steps in full, but the lane (profiler/step_lane.h) has every step's phases, the time
// between the steps and the memory after each. What they show is said even where no chunk caught it, so a
// 500-step run never ends with "no findings".
#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <string>
#include <vector>

#include "analysis_findings.h"
#include "analysis_passes.h"
#include "profiler/range_names.h"
#include "profiler/step_lane.h"

namespace tb::prof::detail {
namespace {

constexpr const char* kFromStepTimings = "(from step timings) ";
constexpr size_t kMinSteps = 10;         // fewer measured steps say nothing steady
constexpr size_t kDriftMinSteps = 20;    // four quarters of at least five steps
constexpr double kDriftRatio = 1.25;     // the last quarter's median step against the first's
constexpr double kOutsideMinShare = 0.10;  // validation and checkpoints are often meant: only a large share
constexpr double kMiB = double(1 << 20);

struct LaneStepView {
  int64_t index = 0, start = 0, end = 0, data_wait = 0;
  double evaluations = 0;  // a step(closure) call's closure evaluations, 0 when not counted
  Interval longest_wait;
  bool traced = false;
};

struct Sample {
  int64_t t;
  double v;
};

// What the lane holds: its measured steps (warm-up left out) and outside intervals in time order, and its memory.
struct LaneView {
  std::vector<LaneStepView> steps;
  std::vector<std::pair<Interval, std::string>> outside;
  std::vector<Sample> rss, device;
};

int64_t measured_from(const Trace& trace) {
  const auto it = trace.meta().extra.find(kStepLaneMeasuredFrom);
  if (it == trace.meta().extra.end()) return INT64_MIN;
  char* end = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  return end == it->second.c_str() ? INT64_MIN : v;
}

// Whether [a, b] overlaps one of the compiles (in time order).
bool compiled_in(const std::vector<Interval>& compiles, int64_t a, int64_t b) {
  auto it = std::lower_bound(compiles.begin(), compiles.end(), a,
                             [](const Interval& c, int64_t t) { return c.t1 <= t; });
  return it != compiles.end() && it->t0 < b;
}

void read_row(const Trace& trace, const Track& t, LaneView& v) {
  const int64_t from = measured_from(trace);
  std::vector<Interval> compiles = compile_intervals(trace);
  std::sort(compiles.begin(), compiles.end(), [](const Interval& a, const Interval& b) { return a.t1 < b.t1; });
  LaneStepView* cur = nullptr;
  for (const Event& e : t.events()) {
    if (e.kind != EventKind::Range) continue;
    const std::string_view n = trace.name(e.name);
    if (n == names::kLaneStep) {
      cur = nullptr;
      if (e.arg != kNoArg && e.arg < from) continue;  // warm-up
      if (compiled_in(compiles, e.start_ns, e.end_ns)) continue;  // compiled: a one-time cost, not the step's
      v.steps.push_back({e.arg, e.start_ns, e.end_ns, 0, e.value, {},
                         e.detail != kNoName && trace.name(e.detail) == names::kLaneDetailed});
      cur = &v.steps.back();
    } else if (n == names::kLaneDataWait && cur && e.start_ns >= cur->start && e.end_ns <= cur->end) {
      cur->data_wait += e.duration_ns();
      if (e.duration_ns() > cur->longest_wait.length()) cur->longest_wait = {e.start_ns, e.end_ns};
    } else if (n == names::kLaneOutside) {
      v.outside.push_back({{e.start_ns, e.end_ns}, std::string(trace.name(e.detail))});
    }
  }
}

LaneView read_lane(const Trace& trace) {
  LaneView v;
  for (const Track& t : trace.tracks()) {
    if (!is_step_lane(t)) continue;
    if (t.kind() == TrackKind::CpuThread) read_row(trace, t, v);
    if (t.kind() != TrackKind::Counter) continue;
    auto* into = t.name() == names::kHostRss ? &v.rss : t.name() == names::kDeviceAllocated ? &v.device : nullptr;
    if (into)
      for (const Event& e : t.events()) into->push_back({e.start_ns, e.value});
  }
  std::sort(v.steps.begin(), v.steps.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
  for (auto* s : {&v.rss, &v.device})
    std::sort(s->begin(), s->end(), [](const Sample& a, const Sample& b) { return a.t < b.t; });
  // Memory after the measured steps only: the warm-up's allocations are no climb.
  const int64_t t0 = v.steps.empty() ? INT64_MAX : v.steps.front().start;
  for (auto* s : {&v.rss, &v.device})
    s->erase(std::remove_if(s->begin(), s->end(), [&](const Sample& x) { return x.t < t0; }), s->end());
  return v;
}

template <class T>
T median(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? T{} : v[v.size() / 2];
}

std::string ms(double ns) { return fmt_ms(ns); }
std::string pct(double s) { return fmt_pct(s); }
std::string times(double x) { return fmt("%.2fx", x); }

Finding plain(FindingKind kind, double share, Interval evidence) {
  Finding f;
  f.kind = kind;
  f.share = share;
  f.max_speedup = share > 0 ? bound(share) : 1;
  f.evidence = evidence;
  return f;
}

// Data wait: the detailed analysis's loader-stall rule (its share of step time against finding_min_share, its
// knobs) over every measured step.
void loader(const Trace& trace, const AnalysisOptions& opt, const LaneView& v, std::vector<Finding>& out) {
  int64_t wait = 0, wall = 0;
  Interval longest;
  for (const LaneStepView& s : v.steps) {
    wait += s.data_wait;
    wall += s.end - s.start;
    if (s.longest_wait.length() > longest.length()) longest = s.longest_wait;
  }
  if (wall <= 0 || wait <= 0 || double(wait) / double(wall) < opt.finding_min_share) return;
  const double share = double(wait) / double(wall);
  Finding f = loader_stall_finding(trace, share, longest);
  f.message = std::string(kFromStepTimings) + "training waited for data " + pct(share) + " of step time over " +
              std::to_string(v.steps.size()) + " steps (" + ms(double(wait)) + input_grade(share, 0, double(wall)) +
              ") -> workers / prefetch / pin_memory; at most " + times(f.max_speedup);
  out.push_back(std::move(f));
}

// Outside training: the intervals from the first measured step on, against the steps' time and theirs.
void outside(const LaneView& v, std::vector<Finding>& out) {
  int64_t wall = 0, away = 0;
  Interval longest;
  std::vector<std::pair<std::string, int64_t>> kinds;
  for (const LaneStepView& s : v.steps) wall += s.end - s.start;
  for (const auto& [x, kind] : v.outside) {
    if (x.t0 < v.steps.front().start) continue;
    away += x.length();
    if (x.length() > longest.length()) longest = x;
    auto k = std::find_if(kinds.begin(), kinds.end(), [&](const auto& p) { return p.first == kind; });
    if (k == kinds.end()) kinds.push_back({kind, x.length()});
    else k->second += x.length();
  }
  const double share = wall + away > 0 ? double(away) / double(wall + away) : 0;
  if (share < kOutsideMinShare) return;
  std::string parts;
  for (const auto& [kind, ns] : kinds) parts += (parts.empty() ? "" : ", ") + kind + " " + ms(double(ns));
  Finding f = plain(FindingKind::OutsideTraining, share, longest);
  f.message = std::string(kFromStepTimings) + pct(share) + " of the run passed outside the training steps (" + parts +
              ") -> evaluate or checkpoint less often, or make it cheaper: no knob of the step helps; the run at most " +
              times(f.max_speedup) + " shorter";
  out.push_back(std::move(f));
}

// A climb: the medians of the four quarters of the samples rise each time, and the last is above the first by
// `min_rise` and `min_share` of it. Medians, not peaks: one spike (a checkpoint's buffer) is no climb.
bool climbs(const std::vector<Sample>& s, double min_rise, double min_share, double& from, double& to) {
  if (s.size() < kMinSteps) return false;
  const size_t q = s.size() / 4;
  double m[4];
  for (size_t k = 0; k < 4; ++k) {
    std::vector<double> part;
    for (size_t i = k * q; i < (k == 3 ? s.size() : (k + 1) * q); ++i) part.push_back(s[i].v);
    m[k] = median(part);
  }
  from = m[0], to = m[3];
  return m[1] > m[0] && m[2] > m[1] && m[3] > m[2] && to - from >= std::max(min_rise, min_share * from);
}

// Memory climbing: device allocated by the detailed memory rule's amounts (16 MiB and 5%); the host's resident
// set by 256 MiB and 20%, as the profiler's own records make it grow a little while a chunk records.
void memory(const LaneView& v, std::vector<Finding>& out) {
  double a = 0, b = 0;
  std::string what;
  auto mib = [](double x) { return std::to_string(static_cast<int64_t>(x / kMiB)) + " MiB"; };
  if (climbs(v.device, 16 * kMiB, 0.05, a, b)) what = "device allocated from " + mib(a) + " to " + mib(b);
  if (climbs(v.rss, 256 * kMiB, 0.20, a, b))
    what += (what.empty() ? "" : ", ") + std::string("host RSS from ") + mib(a) + " to " + mib(b);
  if (what.empty()) return;
  Finding f = plain(FindingKind::MemoryGrowth, 0, {v.steps.front().start, v.steps.back().end});
  f.message = std::string(kFromStepTimings) + "memory climbed steadily over the measured steps (quarter medians: " +
              what + ") -> something is kept across steps: a loss or an output appended to a list without .item() "
              "or .detach(), a cache that grows; it runs out of memory in the end";
  out.push_back(std::move(f));
}

// Drift: the last quarter's median step against the first quarter's, over the untraced steps when there are
// enough (recording stretches a traced step), else every measured one. A step(closure) call's time follows its
// closure's evaluations (LBFGS: 20 early, fewer as it converges, more again in a line search): where they are
// counted, a step's time per evaluation is compared, else a step that evaluated more read as a slowdown.
void drift(const LaneView& v, std::vector<Finding>& out) {
  std::vector<const LaneStepView*> use;
  for (const LaneStepView& s : v.steps)
    if (!s.traced) use.push_back(&s);
  if (use.size() < kDriftMinSteps) {
    use.clear();
    for (const LaneStepView& s : v.steps) use.push_back(&s);
  }
  if (use.size() < kDriftMinSteps) return;
  const size_t q = use.size() / 4;
  const bool per_evaluation = std::all_of(use.begin(), use.end(), [](const LaneStepView* s) { return s->evaluations > 0; });
  auto time_of = [&](const LaneStepView* s) {
    return per_evaluation ? int64_t(double(s->end - s->start) / s->evaluations) : s->end - s->start;
  };
  std::vector<int64_t> first, last;
  for (size_t i = 0; i < q; ++i) first.push_back(time_of(use[i]));
  for (size_t i = use.size() - q; i < use.size(); ++i) last.push_back(time_of(use[i]));
  const double m1 = double(median(first)), m4 = double(median(last));
  if (m1 <= 0 || m4 < kDriftRatio * m1) return;
  Finding f = plain(FindingKind::StepTimeDrift, 1.0 - m1 / m4, {use[use.size() - q]->start, use.back()->end});
  const std::string what = per_evaluation ? "median closure evaluation" : "median step";
  f.message = std::string(kFromStepTimings) + "the steps slowed down over the run: the last quarter's " + what + " " +
              ms(m4) + " against the first quarter's " + ms(m1) + " (" + times(m4 / m1) + ", " +
              std::to_string(use.size()) + " steps) -> something grows with the steps (a list or cache kept across "
              "them, a longer sequence), or the machine slowed (throttling, other work); at most " +
              times(f.max_speedup);
  out.push_back(std::move(f));
}

}  // namespace

void add_lane_findings(const Trace& trace, const AnalysisOptions& opt, AnalysisResult& r) {
  LaneView v = read_lane(trace);
  if (v.steps.size() < kMinSteps) return;
  std::vector<Finding> found;
  loader(trace, opt, v, found);
  outside(v, found);
  memory(v, found);
  drift(v, found);
  fit_to_run(trace, found);
  for (Finding& f : found) {
    // The detailed analysis saw it in its traced window: one finding of a kind, the one with the detail.
    const bool seen = std::any_of(r.findings.begin(), r.findings.end(), [&](const Finding& g) { return g.kind == f.kind; });
    if (seen) continue;
    f.id = std::string(to_string(f.kind)) + "_steps";
    r.findings.push_back(std::move(f));
  }
}

}  // namespace tb::prof::detail
