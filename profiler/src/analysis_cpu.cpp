#include "analysis_cpu.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "profiler/range_names.h"

namespace tb::prof {
namespace {

// A minor page fault costs at least ~2 us here (kernel entry, a zeroed 4 KiB page, TLB): a lower bound, so
// the share below never overstates what the allocator costs. Measured on this 2-core VM: ~8000 faults per
// mnist_cnn step made it 125 ms instead of 33 ms, i.e. ~11 us per fault all told.
constexpr double kFaultCostNs = 2000.0;

int meta_int(const Trace& t, const char* key, int fallback) {
  auto it = t.meta().extra.find(key);
  if (it == t.meta().extra.end() || it->second.empty()) return fallback;
  return std::atoi(it->second.c_str());
}

std::string num(double v, const char* f) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

}  // namespace

void add_host_findings(const Trace& trace, const AnalysisOptions& opt, AnalysisResult& r) {
  // --- Allocator-bound steps: the page-fault counter our engine samples once per step.
  // One counter per process: a group trace's ranks are pooled (every sample is one step of one rank).
  const int64_t w0 = r.window.t0, w1 = r.window.t1;
  double faults = 0;
  int samples = 0;
  for (const Track& t : trace.tracks()) {
    if (t.kind() != TrackKind::Counter || t.name() != names::kPageFaults) continue;
    t.for_each_in(w0, w1, [&](const Event& e, uint32_t) {
      faults += e.value;
      ++samples;
    });
  }
  const double per_step = samples > 0 ? faults / samples : 0.0;
  const double step_ns = r.step_median_ns > 0 ? double(r.step_median_ns)
                                              : double(std::max<int64_t>(1, w1 - w0)) / std::max(1, samples);
  const double share = std::min(0.95, per_step * kFaultCostNs / step_ns);
  if (samples > 0 && share >= std::max(0.05, opt.finding_min_share)) {
    Finding f;
    f.kind = FindingKind::AllocatorBound;
    f.id = to_string(f.kind);
    f.knob = "cpu_allocator";
    f.value = trace.meta().extra.count("cpu_allocator") && trace.meta().extra.at("cpu_allocator") != "glibc"
                  ? "tcmalloc"
                  : "glibc_tuned";
    f.also = {f.value == "tcmalloc" ? "glibc_tuned" : "tcmalloc"};
    f.share = share;
    f.max_speedup = 1.0;  // a lower bound on the cost: no upper bound on the gain is claimed
    f.message = num(per_step, "%.0f") + " page faults per step (" + num(per_step * 4096 / 1048576.0, "%.1f") +
                " MiB of fresh pages): the allocator returns memory to the system and maps it again every step; "
                "at least " + num(per_step * kFaultCostNs / 1e6, "%.1f") + " ms of a " + num(step_ns / 1e6, "%.1f") +
                " ms step -> cpu_allocator=" + f.value + " (applies at process start)";
    f.evidence = r.window;
    r.findings.push_back(std::move(f));
  }

  // --- Oversubscription: loader threads and intra-op threads competing for the cores.
  const int cores = meta_int(trace, "cpu_cores", 0);
  const int intra = meta_int(trace, "intra_op_threads", 0);
  const int workers = meta_int(trace, "workers", 0);
  // Only when the intra-op threads are more than the cores the loader leaves (what auto would choose): with
  // more workers than cores, auto already runs one intra-op thread and fewer threads are no remedy.
  if (cores > 0 && intra > 0 && workers > 0 && intra + workers > cores && intra > std::max(1, cores - workers)) {
    Finding f;
    f.kind = FindingKind::Oversubscribed;
    f.id = to_string(f.kind);
    f.knob = "intra_op_threads";
    f.value = "0";  // auto: the cores the loader workers leave
    f.also = {"workers"};
    f.share = 0;
    f.max_speedup = 1.0;
    f.message = std::to_string(intra) + " intra-op threads + " + std::to_string(workers) + " loader threads on " +
                std::to_string(cores) + " cores: they take turns on the cores (on 2 cores, workers=1 ran 0.85x of "
                "workers=0 with 2 intra-op threads and 1.29x with 1) -> intra_op_threads=0 (auto: " +
                std::to_string(std::max(1, cores - workers)) + ")";
    f.evidence = r.window;
    r.findings.push_back(std::move(f));
  }
}

}  // namespace tb::prof
