// The step lane: every step of a script's run, drawn from its step stream (the launcher's `step` and `outside`
// messages, which the script sends whether or not it is traced), beside the sampled detail of its trace
// chunks. Drawing it costs the script nothing: the parent that reads the messages (run --script --trace, the
// GUI's live view) builds it. A sampled trace records a few steps in full; the lane gives the steps between
// them a box each, so a gap on the timeline has its steps.
//
// In the trace the lane is one CPU row of a pseudo-process (kStepLanePid, negative like Kineto's own rows, so
// no analysis takes it for a process of the job): depth 0 one `names::kLaneStep` range per step (arg: the
// step's index; detail "detailed" when the step ran inside a trace chunk), depth 1 its phases laid end to end
// from the step's start in the order a step runs them (data wait, forward, backward, optimizer; each the
// step's sum of that phase, as the launcher measures it: the rest of the step is the loop's own code), and the
// outside-training intervals (validation, checkpoints) as ranges of their own between the steps. Memory after
// each step (host RSS, device allocated) goes on counter rows of the same pseudo-process.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "profiler/trace.h"

namespace tb::prof {

inline constexpr int64_t kStepLanePid = -7;
inline constexpr int64_t kStepLaneTid = 1;
// The time between steps (validation, checkpoints, an epoch's end) on a row of its own under the steps: on the
// steps' row it broke every zoomed-out run of steps into grey mixed ones.
inline constexpr int64_t kStepLaneOutsideTid = 2;
inline constexpr const char* kStepLaneOutsideTrackName = "between steps";
inline constexpr const char* kStepLaneTrackName = "every step";  // each drawn from the step stream
inline constexpr const char* kStepLaneProcessName = "TuneBench: every step";  // TraceMetadata::process_names
// Below every process's rows (a CPU row's sort index is 0 unless a trace says otherwise): the lane comes first.
inline constexpr int64_t kStepLaneSortIndex = -(int64_t(1) << 20);
// TraceMetadata::extra key: the index of the lane's first measured step (those numbered below it were warm-up;
// the launcher's warm-up is a prefix of the run). A key of its own, not "warmup_steps": that one moves the
// analysis's window, which the lane must leave as it is.
inline constexpr const char* kStepLaneMeasuredFrom = "step_lane_measured_from";

// One step as the step stream tells it. Times are nanoseconds of the monotonic clock (the launcher's t_ns).
struct LaneStep {
  int64_t index = 0;
  int64_t t_ns = 0;     // the step's start
  int64_t wall_ns = 0;  // the whole step, its data wait included
  int64_t data_wait_ns = 0, forward_ns = 0, backward_ns = 0, optim_ns = 0;  // summed phases, 0 when unknown
  bool traced = false;   // ran inside a trace chunk (its detail is on the timeline)
  bool warmup = false;
  bool skipped = false;  // a GradScaler skipped its update
  int64_t host_rss = -1, device_allocated = -1;  // bytes after the step; -1 when not measured
  // A step(closure) call's closure evaluations (LBFGS: fewer as it converges), 0 when not counted: the step's
  // box carries them as its value, and the drift finding compares a step's time per evaluation.
  int64_t evaluations = 0;
};

// Time between steps that is not training (the launcher's `outside` message).
struct LaneOutside {
  int64_t t_ns = 0, wall_ns = 0;
  std::string kind;  // "evaluation", "checkpoint" or "other"
  int64_t after_step = -1;
};

// Adds the lane to `trace` (once: a second call adds a second box per step). Steps and intervals may come in
// any order (finalize() sorts them); a step of wall 0 is a box of length 0, its phases left out. The outside
// intervals' arg is the step they follow (kNoArg before the first). offset_ns moves the monotonic times onto the trace's clock (a script's chunks
// state theirs: ChunkMerger::offset_ns(); 0 for a trace on the monotonic clock, or for the lane alone).
// The caller finalize()s the trace afterwards.
void add_step_lane(Trace& trace, std::span<const LaneStep> steps, std::span<const LaneOutside> outside,
                   int64_t offset_ns);

// Whether a track is the step lane's (its row or one of its counters).
// A rank's lane in a merged group trace sits kPidSpace apart per rank (Trace::move_pids moves a pseudo-process
// down): the same lane.
inline bool is_step_lane(const Track& t) { return t.pid() < 0 && t.pid() % kPidSpace == kStepLanePid; }

}  // namespace tb::prof
