// What a tune did, one line a trial and one a note: a failing tuner test prints it, so a failure read from a
// log (a busy machine's round) says which trials led there.
#pragma once

#include <string>

#include "engine/tuner.h"

namespace tb::engine::test {

inline std::string tune_story(const TuneResult& r, bool reasons = true) {
  std::string story;
  for (const auto& t : r.trials)
    story += t.phase + " " + t.knob + "=" + t.value + ": " + t.outcome + (reasons ? " (" + t.reason + ")" : "") + "\n";
  for (const auto& n : r.notes) story += "note: " + n + "\n";
  return story;
}

// The trial of `knob`=`value` in `phase`, nullptr when the tune made none.
inline const Trial* find_trial(const TuneResult& r, const std::string& phase, const std::string& knob,
                               const std::string& value) {
  for (const auto& t : r.trials)
    if (t.phase == phase && t.knob == knob && t.value == value) return &t;
  return nullptr;
}

}  // namespace tb::engine::test
