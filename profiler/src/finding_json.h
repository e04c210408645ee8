// One Finding as JSON (private): the same object in the analysis report and the ranks comparison, so a reader
// of `analyze --json` handles every finding one way.
#pragma once

#include <string>
#include <vector>

#include "json_writer.h"
#include "profiler/analysis.h"

namespace tb::prof {

inline void write_finding(JsonWriter& w, const Finding& f) {
  auto us = [](int64_t ns) { return static_cast<double>(ns) / 1000.0; };
  w.begin_object();
  w.key("kind").value(f.id).key("message").value(f.message).key("knob").value(f.knob).key("value").value(f.value);
  w.key("also").strings(f.also);
  w.key("share").value(f.share);
  if (f.bounded) w.key("max_speedup").value(f.max_speedup);
  else w.key("max_speedup").null();
  w.key("bounded").value(f.bounded);
  w.key("evidence_us").begin_array().value(us(f.evidence.t0)).value(us(f.evidence.t1)).end_array();
  w.end_object();
}

// The findings and notes, the last two fields of the analysis report and of the ranks comparison alike.
inline void write_findings_and_notes(JsonWriter& w, const std::vector<Finding>& findings,
                                     const std::vector<std::string>& notes) {
  w.key("findings").begin_array();
  for (const Finding& f : findings) write_finding(w, f);
  w.end_array();
  w.key("notes").strings(notes);
}

}  // namespace tb::prof
