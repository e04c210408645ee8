// The step lane (profiler/step_lane.h): every step of a script's step stream as boxes on one row of a
// pseudo-process, beside the sampled detail of its trace chunks.
#include "profiler/step_lane.h"

#include <algorithm>
#include <string>
#include <vector>

#include "lane_range.h"
#include "profiler/range_names.h"

namespace tb::prof {
namespace {


// One step's box and its phases, laid end to end from its start in the order a step runs them. The launcher
// measures each phase as a sum over the step, so they are drawn as one piece each; the rest of the step (the
// loop's own code) is what follows them. A sum that would pass the step's end is cut there: the box holds them.
void add_step(Trace& trace, uint32_t row, const LaneStep& s, int64_t offset_ns, const NameId phase_names[4],
              NameId step_name, uint32_t detailed) {
  const int64_t start = s.t_ns + offset_ns;
  const int64_t end = start + std::max<int64_t>(0, s.wall_ns);
  // The step goes in before its phases: the trace's sort is stable, so a phase as long as its step still
  // nests inside it (depth 1) rather than the other way round.
  Event box = detail::lane_range(step_name, start, end, s.index, s.traced ? detailed : kNoName);
  box.value = static_cast<double>(std::max<int64_t>(0, s.evaluations));
  trace.add_event(row, box);
  const int64_t phases[4] = {s.data_wait_ns, s.forward_ns, s.backward_ns, s.optim_ns};
  int64_t at = start;
  for (int k = 0; k < 4; ++k) {
    if (phases[k] <= 0 || at >= end) continue;
    const int64_t to = std::min(end, at + phases[k]);
    trace.add_event(row, detail::lane_range(phase_names[k], at, to));
    at = to;
  }
}

// Memory after each step on the lane's counter rows (at the step's end: the launcher reads it then).
void add_memory(Trace& trace, std::span<const LaneStep> steps, int64_t offset_ns) {
  uint32_t rss = UINT32_MAX, alloc = UINT32_MAX;
  for (const LaneStep& s : steps) {
    const int64_t at = s.t_ns + offset_ns + std::max<int64_t>(0, s.wall_ns);
    auto sample = [&](uint32_t& track, const char* name, int64_t bytes) {
      if (bytes < 0) return;
      if (track == UINT32_MAX) track = trace.counter_track(kStepLanePid, name);
      Event e;
      e.kind = EventKind::Counter;
      e.name = trace.intern(name);
      e.start_ns = e.end_ns = at;
      e.value = static_cast<double>(bytes);
      trace.add_event(track, e);
    };
    sample(rss, names::kHostRss, s.host_rss);
    sample(alloc, names::kDeviceAllocated, s.device_allocated);
  }
}

}  // namespace

void add_step_lane(Trace& trace, std::span<const LaneStep> steps, std::span<const LaneOutside> outside,
                   int64_t offset_ns) {
  if (steps.empty() && outside.empty()) return;
  const uint32_t row = trace.track_for(TrackKind::CpuThread, kStepLanePid, kStepLaneTid, kStepLaneTrackName);
  trace.set_track_name(row, kStepLaneTrackName);
  trace.set_track_sort_index(row, kStepLaneSortIndex);
  trace.meta().process_names[kStepLanePid] = kStepLaneProcessName;
  trace.reserve_events(row, trace.track(row).events().size() + steps.size() * 5 + outside.size());
  const NameId phase_names[4] = {trace.intern(names::kLaneDataWait), trace.intern(names::kLaneForward),
                                 trace.intern(names::kLaneBackward), trace.intern(names::kLaneOptimizer)};
  const NameId step_name = trace.intern(names::kLaneStep);
  const uint32_t detailed = trace.intern(names::kLaneDetailed);
  // Warm-up steps are a prefix of the run (the launcher's detector): the first measured step's index is
  // enough to tell them apart again (the lane's findings leave them out).
  int64_t measured_from = INT64_MIN, last = INT64_MIN;
  for (const LaneStep& s : steps) {
    add_step(trace, row, s, offset_ns, phase_names, step_name, detailed);
    if (!s.warmup && (measured_from == INT64_MIN || s.index < measured_from)) measured_from = s.index;
    last = std::max(last, s.index);
  }
  if (!steps.empty())
    trace.meta().extra[kStepLaneMeasuredFrom] = std::to_string(measured_from == INT64_MIN ? last + 1 : measured_from);
  const NameId outside_name = trace.intern(names::kLaneOutside);
  uint32_t between = UINT32_MAX;
  for (const LaneOutside& o : outside) {
    if (between == UINT32_MAX) {
      between = trace.track_for(TrackKind::CpuThread, kStepLanePid, kStepLaneOutsideTid, kStepLaneOutsideTrackName);
      trace.set_track_name(between, kStepLaneOutsideTrackName);
      trace.set_track_sort_index(between, kStepLaneSortIndex + 1);
    }
    const int64_t start = o.t_ns + offset_ns;
    trace.add_event(between, detail::lane_range(outside_name, start, start + std::max<int64_t>(0, o.wall_ns),
                               o.after_step >= 0 ? o.after_step : kNoArg,
                               trace.intern(o.kind.empty() ? "other" : o.kind)));
  }
  add_memory(trace, steps, offset_ns);
}

}  // namespace tb::prof
