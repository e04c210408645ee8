// Step reconstruction and scope selection for analyze() (private).
#pragma once

#include <string>
#include <vector>

#include "profiler/analysis.h"
#include "profiler/step_lane.h"

namespace tb::prof::detail {

struct Scope {
  int32_t step_track = -1;  // CPU track holding the steps, -1 none
  int64_t pid = -1;         // analysed process (-1: the trace has no CPU tracks; all count)
  int64_t device = -1;      // analysed GPU device (-1: none)
  std::vector<int64_t> devices;  // devices with GPU activity
  std::vector<int64_t> pids;     // processes with CPU events
};

// A CPU thread of the analysed process.
// The step lane (profiler/step_lane.h) is never in scope, even when no process was picked (sc.pid < 0): its
// boxes are the step stream's, not a thread of the job.
inline bool in_scope(const Track& t, const Scope& sc) {
  return t.kind() == TrackKind::CpuThread && !is_step_lane(t) && (sc.pid < 0 || t.pid() == sc.pid);
}

// Picks the step track (the CPU track with the most step ranges), its process and the device that process
// launches to (or `wanted_device`). Notes go to `notes`.
Scope pick_scope(const Trace& trace, int64_t wanted_device, int64_t wanted_pid, std::vector<std::string>& notes);

// The steps of `track`: sorted, adjacent overlaps up to `tolerance_ns` clamped, nested steps folded into the
// outer one, unclosed steps kept; everything it had to do is said in `notes`. Host fields are left 0.
std::vector<StepBreakdown> reconstruct_steps(const Trace& trace, uint32_t track, int64_t tolerance_ns,
                                             std::vector<std::string>& notes);

// Without step ranges: steps inferred from the optimizer's step calls (PyTorch records
// `Optimizer.step#<Class>.step` on its own), each from the end of one call to the end of the next. Returns the
// track used (-1: fewer than 3 calls on any thread of the process, nothing inferred) and says so in `notes`.
int32_t infer_steps(const Trace& trace, int64_t pid, std::vector<StepBreakdown>& steps, std::vector<std::string>& notes);

}  // namespace tb::prof::detail
