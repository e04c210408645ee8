#include "tuner/workloads/snapshot_fill.h"

#include <algorithm>
#include <string>

#include "profiler/ranks.h"
#include "profiler/time_classes.h"

namespace tb::engine {
namespace {

// A GPU step's parts (Snapshot::breakdown_ms), in order: the tuner's search reads them by these names.
constexpr const char* kGpuParts[] = {"GPU busy", "loader stall", "launch gaps", "other idle"};
constexpr int kGpuPartCount = 4;

// The part each class of prof::time_classes falls in, -1 none: launch overhead and the window's edges are no
// knob's to remove, and the profiler's own time is a part of its own (kProfilerPart, below).
int gpu_part(const prof::TimeClass& c) {
  if (c.busy) return 0;
  if (c.id == "loader_stall") return 1;
  if (c.id == "launch_gap") return 2;
  // Idle with no loader or launch cause: after syncs, runtime calls, cross-stream waits, unexplained.
  if (c.id == "sync_idle" || c.id == "runtime_idle" || c.id == "event_wait" || c.id == "other_idle") return 3;
  return -1;
}

}  // namespace

void fill_snapshot(Snapshot& s, const prof::AnalysisResult& a) {
  const double n = static_cast<double>(a.steps.size());
  auto mean = [&](int64_t prof::StepBreakdown::*f) {
    double t = 0;
    for (const auto& st : a.steps) t += static_cast<double>(st.*f);
    return t / n / 1e6;
  };
  double dur = 0;
  for (const auto& st : a.steps) dur += static_cast<double>(st.duration_ns());
  dur = dur / n / 1e6;
  if (a.has_gpu) {
    // The steps' GPU classes summed into the parts, then each part's mean per step.
    int64_t parts[kGpuPartCount] = {};
    for (const auto& st : a.steps)
      for (const auto& c : prof::time_classes(st))
        if (const int p = gpu_part(c); p >= 0) parts[p] += c.ns;
    s.breakdown_ms.clear();
    for (int p = 0; p < kGpuPartCount; ++p)
      s.breakdown_ms.push_back({kGpuParts[p], static_cast<double>(parts[p]) / n / 1e6});
    const double busy = s.breakdown_ms[0].second, stall = s.breakdown_ms[1].second, gap = s.breakdown_ms[2].second,
                 other = s.breakdown_ms[3].second;
    const double sync = mean(&prof::StepBreakdown::sync_ns);
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
    const double dw = mean(&prof::StepBreakdown::data_wait_ns);
    const double hd = mean(&prof::StepBreakdown::h2d_ns);
    const double fw = mean(&prof::StepBreakdown::forward_ns);
    const double bw = mean(&prof::StepBreakdown::backward_ns);
    const double op = mean(&prof::StepBreakdown::optimizer_ns);
    const double comm = mean(&prof::StepBreakdown::comm_exposed_ns);
    s.breakdown_ms = {{"data wait", dw}, {"h2d", hd}, {"forward", fw}, {"backward", bw}, {"optimizer", op}};
    if (comm > 0) s.breakdown_ms.push_back({"comm wait", comm});
    s.breakdown_ms.push_back({"other", std::max(0.0, dur - dw - hd - fw - bw - op - comm)});
    s.bottleneck = dw > 0.15 * dur ? "loader" : comm > 0.15 * dur ? "comm" : "compute";
    int64_t worst = 0;
    for (const auto& st : a.steps) worst = std::max(worst, st.data_wait_ns);
    s.worst_stall_ms = worst / 1e6;
    s.worst_stall_kind = "data wait";
  }
  // TuneBench's own time (its pauses between steps included), per step: a part of its own, never the program's.
  if (a.profiler_ns > 0) {
    const double own = static_cast<double>(a.profiler_ns) / n / 1e6;
    auto& last = s.breakdown_ms.back();  // the CPU's "other" holds what of it fell inside the steps
    if (!a.has_gpu && last.first == "other")
      last.second = std::max(0.0, last.second - mean(&prof::StepBreakdown::profiler_ns));
    s.breakdown_ms.push_back({kProfilerPart, own});
  }
  if (s.step_ms <= 0) s.step_ms = dur;
  for (const auto& f : a.findings) {
    if (s.findings.size() >= 3) break;
    // Where the time went, not how it was recorded: a CPU run's "GPU collector off" would take a slot of a
    // stall that matters (the report names the device already).
    if (f.kind == prof::FindingKind::CollectorOff) continue;
    s.findings.push_back(f.message + (f.knob.empty() ? "" : " (try " + f.knob + "=" + f.value + ")"));
  }
  if (s.findings.empty()) s.findings.emplace_back("the analyses found no stall worth a finding");
  for (const auto& f : a.findings)
    if (!f.knob.empty()) s.switches.push_back({f.knob, f.value, f.max_speedup});
}

void fill_group_snapshot(Snapshot& s, const prof::Trace& trace, const std::vector<std::pair<int64_t, std::string>>& ranks) {
  std::vector<prof::AnalysisResult> per_rank;
  std::vector<std::string> labels;
  for (const auto& [pid, label] : ranks) {
    prof::AnalysisOptions o;
    o.pid = pid;
    per_rank.push_back(prof::analyze(trace, o));
    labels.push_back(label);
  }
  if (per_rank.empty() || per_rank[0].steps.empty()) {
    s.findings.emplace_back("the group's trace has no steps of rank 0");
    return;
  }
  fill_snapshot(s, per_rank[0]);
  s.ranks = int(per_rank.size());
  // The straggler first: every other rank's wait is its doing.
  const prof::RankAnalysis ra = prof::analyze_ranks(per_rank, labels);
  for (const auto& f : ra.findings) {
    s.findings.insert(s.findings.begin(), f.message + (f.knob.empty() ? "" : " (try " + f.knob + "=" + f.value + ")"));
    if (s.findings.size() > 3) s.findings.pop_back();
  }
}

}  // namespace tb::engine
