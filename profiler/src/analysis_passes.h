// analyze() as its passes (private): one state that the passes fill in order, and the list analyze() runs.
// They are a list rather than one long function so that each reads as one step of docs/analysis.md, and so
// that the analysis bench (bench/bench_analysis_passes.cpp) times each one through the very code analyze()
// runs, while analyze() itself pays for no timing.
#pragma once

#include <cstdint>
#include <span>

#include "analysis_idle.h"
#include "analysis_steps.h"
#include "profiler/analysis.h"

namespace tb::prof::detail {

// What the passes share: the inputs, the result being built and the intermediate sides of the trace.
struct AnalysisState {
  AnalysisState(const Trace& t, const AnalysisOptions& o) : trace(t), opt(o) {}
  const Trace& trace;
  const AnalysisOptions& opt;
  AnalysisResult r;
  Scope sc;
  GpuSide g;
  HostSide h;
  IdlePieces pieces;
  bool attributed = false;  // some GPU work was traced to a step's launches (steps measured by their work)
  int64_t window_len = 0;   // the traced part of the window (r.traced_ns(), at least 0)
};

struct AnalysisPass {
  const char* name;  // short, for the bench's table: "scope", "gpu", "steps", ...
  void (*run)(AnalysisState&);
};

// The passes in the order analyze() runs them; each reads only what the earlier ones filled.
std::span<const AnalysisPass> analysis_passes();

// The host side of the analysed process (ranges by phase, sync calls, waits, the profiler's own time) and, in
// `r`, the launch count and the sync points of the window (analysis_host.cpp).
HostSide collect_host(const Trace& trace, const Scope& sc, const AnalysisOptions& opt, AnalysisResult& r);

// torch.compile's regions as they ran (analysis_regions.cpp): each region's runs over the measured steps, named
// by the compile lane, in `r.compiled_regions` (left empty when none ran).
void add_compiled_regions(const Trace& trace, const Scope& sc, AnalysisResult& r);

}  // namespace tb::prof::detail
