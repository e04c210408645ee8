// What recording a trace cost the program it recorded, in one line, from the trace's own metadata: the
// recorder's measured cost of a record times its records, the CUPTI kinds it collected, or the profiler a
// script's trace came from (docs/analysis.md "What recording cost"). `analyze`'s header and the GUI's status bar
// print it, so a reader knows how much of what the trace shows is the profiler's.
#pragma once

#include <string>

#include "profiler/trace.h"

namespace tb::prof {

struct RecordingCost {
  std::string text;          // "" when the trace says nothing about its recording (a file from elsewhere)
  double estimated_ns = -1;  // the recorder's records x their measured cost; < 0 when not known
  double share = -1;         // of the trace's span; < 0 when not known
};

// `span_ns`: the trace's extent (the share is of it).
RecordingCost recording_cost(const TraceMetadata& meta, int64_t span_ns);
inline RecordingCost recording_cost(const Trace& trace) {
  return recording_cost(trace.meta(), trace.end_ns() - trace.start_ns());
}

}  // namespace tb::prof
