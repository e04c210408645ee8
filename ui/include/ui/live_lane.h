// A live script's step lane from what its run sent (RunRecord's steps and outside intervals): every step, not
// only those of the trace chunks on screen, so the timeline has a box for each (profiler/step_lane.h).
#pragma once

#include <memory>

#include "ui/run_controller.h"
#include "ui/trace_loader.h"

namespace tb::ui {

// The newest steps a live timeline draws: past this the oldest fall off (a box per step stays cheap to draw and
// to convert; a day's run of 5 ms steps would not).
inline constexpr size_t kLiveLaneSteps = 20000;

// The steps after `after_step` (-1: from the first) and the outside intervals among them, at most
// kLiveLaneSteps of the newest. Null when there is none.
std::shared_ptr<const StepLaneInput> liveLane(const RunRecord& record, qint64 after_step);

}  // namespace tb::ui
