// Host-side findings of analyze() that read what our own traces record about the process (private):
// page faults per step (the allocator) and thread counts against cores (oversubscription).
#pragma once

#include "profiler/analysis.h"

namespace tb::prof {

// Appends findings to `r` (its window and steps are already computed). Traces without the counters or
// metadata (Kineto, Chrome) get none.
void add_host_findings(const Trace& trace, const AnalysisOptions& opt, AnalysisResult& r);

}  // namespace tb::prof
