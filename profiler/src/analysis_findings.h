// Findings of analyze() from the computed classes of time (private): each names the knob that addresses it
// and bounds its gain by the share of the window that class really takes.
#pragma once

#include "analysis_intervals.h"
#include "profiler/analysis.h"

namespace tb::prof::detail {

// Evidence for the findings: the largest interval of each class.
struct Evidence {
  Interval stall, gap, sync, runtime, comm;
};

// Appends the GPU/host-time findings (loader stall, launch gap, sync, runtime calls, exposed communication,
// GPU not recorded) and the host findings, then orders them; applies the trust caveat to every bound.
void add_findings(const Trace& trace, const AnalysisOptions& opt, const Evidence& ev, AnalysisResult& r);

// The Tensor Core finding, from the kernel totals (called by the kernel statistics).
void add_tensor_core_finding(const Trace& trace, const AnalysisOptions& opt, int64_t matmul_ns, int64_t matmul_tc_ns,
                             int64_t compute_kernel_ns, AnalysisResult& r);

}  // namespace tb::prof::detail
