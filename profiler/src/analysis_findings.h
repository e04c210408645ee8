// Findings of analyze() from the computed classes of time (private): each names the knob that addresses it
// and bounds its gain by the share of the window that class really takes.
#pragma once

#include <string>
#include <vector>

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

// The findings' figures as their messages write them: printf's `f` of one value, nanoseconds as "12.345 ms", a
// share as "12.3%".
std::string fmt(const char* f, double v);
std::string fmt_ms(double ns);
std::string fmt_pct(double s);

// XProf's input-pipeline grades of a data-wait share, with the host-to-device copies' share beside it: the
// clause the loader-stall findings (the trace's and the step lane's) put after their figures.
std::string input_grade(double wait_share, int64_t h2d_ns, double window_ns);
// Amdahl's bound on the speed-up from removing a share of the time: 1 / (1 - share).
double bound(double share);
// The loader-stall finding (its knob, the workers for this machine, and the other knobs) for `share` of the
// step time; the caller writes its message.
Finding loader_stall_finding(const Trace& trace, double share, Interval evidence);
// Fits the findings' knobs to the run the trace came from (an engine's, a script's or none): the engine's knobs
// for an engine run, the launcher's for a script, words for a trace from elsewhere.
void fit_to_run(const Trace& trace, std::vector<Finding>& findings);

// The findings from the step lane's timings (analysis_lane.cpp): a loader stall, time outside training, memory
// climbing, step-time drift, each id ending "_steps"; none of a kind the detailed analysis already found, none
// from a lane of under 10 measured steps.
// Steps that compiled (a compile of the compile lane inside them) are left out of those: a one-time cost.
void add_lane_findings(const Trace& trace, const AnalysisOptions& opt, AnalysisResult& r);

// The findings from the compile lane (analysis_compile.cpp): torch.compile's share of the run, frames compiled
// again and again with the guard that failed, graph breaks with the user's file:line, failed compiles.
void add_compile_findings(const Trace& trace, AnalysisResult& r);
// The compile lane's compiles (its depth-0 ranges), in time order.
std::vector<Interval> compile_intervals(const Trace& trace);

// Notes on the idle split: cross-stream waits and the launch gaps with no host time recorded (said here so
// every report shows them), how much idle time has no named cause, and a trace that holds only part of the
// events its profiler numbered (Kineto's "Ev Idx": sampled or filtered traces).
void add_idle_notes(const Trace& trace, AnalysisResult& r);

// The Tensor Core finding, from the kernel totals (called by the kernel statistics).
void add_tensor_core_finding(const Trace& trace, const AnalysisOptions& opt, int64_t matmul_ns, int64_t matmul_tc_ns,
                             int64_t compute_kernel_ns, AnalysisResult& r);

}  // namespace tb::prof::detail
