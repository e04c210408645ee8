// analysis_memory.h.
#include "analysis_memory.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "profiler/range_names.h"
#include "profiler/step_lane.h"

namespace tb::prof::detail {
namespace {

// A memory finding: no share of the time and no bound on a speed-up (memory is not time), the window its evidence.
Finding memory_finding(FindingKind kind, const AnalysisResult& r) {
  Finding f;
  f.kind = kind;
  f.id = to_string(kind);
  f.share = 0;
  f.max_speedup = 1;
  f.evidence = r.window;
  return f;
}

struct Sample {
  int64_t t;
  double v;
};

std::string gib(double bytes) {
  char b[32];
  std::snprintf(b, sizeof b, bytes >= double(1 << 30) ? "%.2f GiB" : "%.0f MiB",
                bytes >= double(1 << 30) ? bytes / double(1 << 30) : bytes / double(1 << 20));
  return b;
}

// The counter track named `name` of process `pid` (< 0: the first with that name), samples by time.
std::vector<Sample> series(const Trace& trace, int64_t pid, const char* name) {
  std::vector<Sample> out;
  for (const Track& t : trace.tracks()) {
    // The step lane's counters are the step stream's (analysis_lane.cpp reads them), never the job's process.
    if (t.kind() != TrackKind::Counter || is_step_lane(t) || (pid >= 0 && t.pid() != pid)) continue;
    for (const Event& e : t.events())
      if (e.kind == EventKind::Counter && trace.name(e.name) == name) out.push_back({e.start_ns, e.value});
    if (!out.empty()) break;
  }
  std::sort(out.begin(), out.end(), [](const Sample& a, const Sample& b) { return a.t < b.t; });
  return out;
}

double max_in(const std::vector<Sample>& s, int64_t a, int64_t b) {
  double m = -1;
  for (const Sample& x : s)
    if (x.t >= a && x.t < b) m = std::max(m, x.v);
  return m;
}

}  // namespace

void analyze_memory(const Trace& trace, int64_t pid, const AnalysisOptions& opt, AnalysisResult& r) {
  (void)opt;
  const auto alloc = series(trace, pid, names::kDeviceAllocated), reserved = series(trace, pid, names::kDeviceReserved),
             peak = series(trace, pid, names::kDevicePeak), rss = series(trace, pid, names::kHostRss),
             host = series(trace, pid, names::kHostAllocated), retries = series(trace, pid, names::kDeviceRetries);
  MemorySummary& m = r.memory;
  m.present = !alloc.empty() || !rss.empty() || !host.empty();
  if (!m.present) return;
  // Over the whole trace: a peak is a peak wherever it falls (the warm-up's too: it has to fit).
  auto top = [](const std::vector<Sample>& s) {
    double x = -1;
    for (const Sample& v : s) x = std::max(x, v.v);
    return static_cast<int64_t>(x);
  };
  m.device_allocated_peak = top(alloc);
  m.device_reserved_peak = top(reserved);
  m.device_step_peak = std::max(top(peak), m.device_allocated_peak);
  m.host_rss_peak = top(rss);
  m.host_allocated_peak = top(host);
  if (!retries.empty()) m.alloc_retries = static_cast<int64_t>(retries.back().v);
  if (auto it = trace.meta().extra.find("device_memory_bytes"); it != trace.meta().extra.end())
    m.device_total = std::atoll(it->second.c_str());
  if (m.device_total > 0 && m.device_step_peak >= 0)
    m.headroom = m.device_total - std::max({m.device_step_peak, m.device_reserved_peak, int64_t(0)});

  // Each step's peak: the samples between its start and the next step's (TuneBench writes them just after the
  // step's range ends, so the last step's come after the window: it takes every sample after its start).
  const std::vector<Sample>& per = !peak.empty() ? peak : !alloc.empty() ? alloc : !host.empty() ? host : rss;
  double best = -1;
  for (size_t i = 0; i < r.steps.size(); ++i) {
    StepBreakdown& s = r.steps[i];
    const int64_t b = i + 1 < r.steps.size() ? r.steps[i + 1].start_ns : INT64_MAX;
    const double v = max_in(per, s.start_ns, b);
    s.memory_peak_bytes = static_cast<int64_t>(v);
    if (v > best) {
      best = v;
      m.peak_step = s.index;
    }
  }

  // Fragmentation: the caching allocator holds much more than the tensors need, or had to free its cache to
  // get memory at all (each retry synchronizes the device).
  if (m.device_reserved_peak > 0 && m.device_allocated_peak > 0) {
    const double slack = double(m.device_reserved_peak - m.device_allocated_peak);
    const bool wasteful = m.device_reserved_peak >= 1.5 * m.device_allocated_peak && slack >= double(int64_t(1) << 30);
    if (wasteful || m.alloc_retries > 0) {
      Finding f = memory_finding(FindingKind::MemoryFragmentation, r);
      f.message = "the CUDA caching allocator reserved " + gib(double(m.device_reserved_peak)) + " for at most " +
                  gib(double(m.device_allocated_peak)) + " of tensors";
      if (m.alloc_retries > 0)
        f.message += "; " + std::to_string(m.alloc_retries) + " cudaMalloc retries (it freed its cache and synchronized "
                     "the device to get memory)";
      f.message += " -> fragmentation: keep shapes steady, avoid torch.cuda.empty_cache() in the loop, try "
                   "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True";
      r.findings.push_back(std::move(f));
    }
  }
  // Growth: the measured steps' peaks in four windows, each higher than the one before, by 5% and 16 MiB in
  // all: something kept across steps (a loss appended to a list without .item(), a growing cache). Only on the
  // device: the host's resident set grows under the profiler itself (a traced script's records, 4-6 MiB a
  // step for a small model that keeps nothing), so there a rise is not the program's.
  std::vector<double> peaks;
  const bool device = !peak.empty() || !alloc.empty();
  for (size_t i = r.warmup_steps; device && i < r.steps.size(); ++i)
    if (r.steps[i].memory_peak_bytes >= 0) peaks.push_back(double(r.steps[i].memory_peak_bytes));
  if (peaks.size() >= 8) {
    const size_t w = peaks.size() / 4;
    std::vector<double> win;
    for (size_t k = 0; k < 4; ++k)
      win.push_back(*std::max_element(peaks.begin() + long(k * w), peaks.begin() + long(k == 3 ? peaks.size() : (k + 1) * w)));
    const bool rising = win[1] > win[0] && win[2] > win[1] && win[3] > win[2];
    const double grew = win[3] - win[0];
    if (rising && grew >= 0.05 * win[0] && grew >= double(16 << 20)) {
      Finding f = memory_finding(FindingKind::MemoryGrowth, r);
      char b[64];
      std::snprintf(b, sizeof b, "%.1f MiB a step", grew / double(1 << 20) / double(peaks.size() - w));
      f.message = "the step's peak memory rose in every quarter of the measured steps, from " + gib(win[0]) + " to " +
                  gib(win[3]) + " (" + b + ") -> something is kept across steps: a loss or an output appended to a "
                  "list without .item() or .detach(), a cache that grows; it runs out of memory in the end";
      r.findings.push_back(std::move(f));
    }
  }
}

}  // namespace tb::prof::detail
