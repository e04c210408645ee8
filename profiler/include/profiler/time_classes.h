// The classes of time of an analysed window, as one list in display order. The GUI's time bar, `analyze`'s
// summary, the analysis JSON's `time_classes` and the tuner's snapshot all compose their classes from it, so
// a class added here reaches every one of them (docs/analysis.md defines each class).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "profiler/analysis.h"

namespace tb::prof {

struct TimeClass {
  // Stable snake_case key, named after the AnalysisResult field it reads ("loader_stall", "event_wait"): what a
  // consumer maps its colour or wording by. The same field has the same id in both variants.
  std::string_view id;
  std::string_view label;  // English, as the GUI's bar shows it ("loader stall")
  int64_t ns = 0;
  bool busy = false;  // GPU work (compute, exposed communication, memcpy/memset); else idle or host time
};

// With GPU activity (has_gpu): the busy classes (they sum to gpu_busy_ns), then the idle causes in the order
// of docs/analysis.md, the profiler's own time last. CPU-only: the training thread's time: waiting for data,
// for the all-reduce, outside training, the profiler's, and the rest. Either sums to traced_ns(). Every class
// of the variant is listed, 0 ns included, and no id repeats.
std::vector<TimeClass> time_classes(const AnalysisResult& r);

// One step's GPU side in the same GPU classes and ids: they sum to its gpu_busy_ns + gpu_idle_ns (its GPU
// span less the untraced time in it). For a per-step figure (the tuner's snapshot), not for a CPU-only trace.
std::vector<TimeClass> time_classes(const StepBreakdown& s);

}  // namespace tb::prof
