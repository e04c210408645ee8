// Does the patch a script's tune wrote make the plain script faster? The patched script and the original run
// in fresh processes, alternated (AB, BA, ...), each with no knob set: the patch's own text is the only
// difference, so a change the patch places differently from the knob the tune measured (or a figure of the
// tune's own process that fresh starts do not reproduce) shows here, before the patch is written. The copies
// run as the original files, at their paths (python/tunebench/patched.py); nothing is written into the
// user's tree.
#pragma once

#include <functional>
#include <string>

#include "engine/script_patch.h"
#include "engine/tuner.h"

namespace tb::engine {

struct PatchCheckOptions {
  int steps = 20;                   // measured steps per process
  int min_pairs = 3, max_pairs = 6;  // more pairs while the interval covers 1 and a 5% gain
  double max_s = 0;                 // no further pair past this many seconds (0: max_pairs alone)
  double confidence = 0.95;
  std::function<void(const std::string&)> progress;
};

struct PatchCheck {
  // "faster", "slower", "undecided", "failed"; "" when the workload runs no script (nothing was measured).
  std::string verdict;
  measure::RatioInterval estimate;  // the patched script against the original
  double before = 0, after = 0;     // samples/s: the original, the patched script
  int pairs = 0;
  double seconds = 0;
  std::string failure;  // why it could not be measured ("failed")
  // One line: "the patched script against the original, each run plainly in fresh processes: 1.29x [1.10, 1.51]
  // (3 alternated pairs, 1204.1 -> 1553.8 samples/s): faster".
  std::string text() const;
  bool confirmed() const { return verdict == "faster"; }
};

PatchCheck check_script_patch(Workload& w, const ScriptPatch& p, const PatchCheckOptions& o);

}  // namespace tb::engine
