// Memory beside time (private to analyze()): peaks, headroom and each step's peak from the trace's memory
// counters, and the two findings memory gives (fragmentation, growth across steps).
#pragma once

#include "profiler/analysis.h"
#include "profiler/trace.h"

namespace tb::prof::detail {

// Fills r.memory and each step's memory_peak_bytes for process `pid` (< 0: any), and adds the findings.
// Call after the steps and the window are known.
void analyze_memory(const Trace& trace, int64_t pid, const AnalysisOptions& opt, AnalysisResult& r);

}  // namespace tb::prof::detail
