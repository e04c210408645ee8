// A range event of TuneBench's own lanes (the step lane, the compile lane): built from the step stream, not read
// from a trace, so the lanes make their events one way.
#pragma once

#include <algorithm>
#include <cstdint>

#include "profiler/trace.h"

namespace tb::prof::detail {

inline Event lane_range(NameId name, int64_t a, int64_t b, int64_t arg = kNoArg, uint32_t detail = kNoName) {
  Event e;
  e.kind = EventKind::Range;
  e.name = name;
  e.start_ns = a;
  e.end_ns = std::max(a, b);
  e.arg = arg;
  e.detail = detail;
  return e;
}

}  // namespace tb::prof::detail
