// Findings of analyze() from the computed classes of time (private): each names the knob that addresses it
// and bounds its gain by the share of the window that class really takes.
#pragma once

#include "analysis_intervals.h"
#include "profiler/analysis.h"

namespace tb::prof::detail {

// Evidence for the findings: the largest interval of each class.
struct Evidence {
  Interval stall, gap, sync, runtime, comm, event_wait;
};

// Appends the GPU/host-time findings (loader stall, launch gap, sync, runtime calls, exposed communication,
// GPU not recorded) and the host findings, then orders them; applies the trust caveat to every bound.
void add_findings(const Trace& trace, const AnalysisOptions& opt, const Evidence& ev, AnalysisResult& r);

// Notes on the idle split: cross-stream waits and the launch gaps with no host time recorded (said here so
// every report shows them), how much idle time has no named cause, and a trace that holds only part of the
// events its profiler numbered (Kineto's "Ev Idx": sampled or filtered traces).
void add_idle_notes(const Trace& trace, AnalysisResult& r);

// The Tensor Core finding, from the kernel totals (called by the kernel statistics).
void add_tensor_core_finding(const Trace& trace, const AnalysisOptions& opt, int64_t matmul_ns, int64_t matmul_tc_ns,
                             int64_t compute_kernel_ns, AnalysisResult& r);

}  // namespace tb::prof::detail
