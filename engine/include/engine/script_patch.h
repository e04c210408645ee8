// The tuned configuration of a user's script as a patch of the script itself: a
// unified diff (`git apply` / `patch -p1` from the directory it names) with one hunk per kept change, each
// with a comment giving the change's measured gain and interval. Applied, the script runs the tuned
// configuration without TuneBench.
//
// Where each change goes comes from the lines the launcher reported (python/tunebench/source.py): the
// DataLoader(...) call, the optimizer's construction, the model's first training forward. What it cannot
// place (no such line, a statement it cannot read) it lists instead of guessing.
#pragma once

#include <string>
#include <vector>

#include "engine/tuner.h"

namespace tb::engine {

struct ScriptPatch {
  std::string diff;                    // "" when no kept change could be placed
  std::vector<std::string> placed;     // what each hunk does, one line each
  std::vector<std::string> unplaced;   // kept changes left out, with why
  // Each file the diff changes, as it reads with the patch applied: its absolute path, its new text (what the
  // patch check runs in the original's place).
  std::vector<std::pair<std::string, std::string>> files;
};

// The patch of a tune of a script (environment.model "script:..."); empty for anything else. Paths in the
// diff are relative to `base_dir` (the directory it is applied in); a file outside it keeps its full path.
// `checked`, when valid, is the patch check's figure (the patched script against the original, each run
// plainly in fresh processes): each change's comment then carries it, the figure a user applying the patch gets.
ScriptPatch script_patch(const TuneResult& r, const std::string& base_dir, const measure::RatioInterval& checked = {});

// A unified diff of one file: `before` and `after` are its lines (no newlines), `path` as the diff names it.
// Hunks carry 3 lines of context; "" when the two are equal.
std::string unified_diff(const std::string& path, const std::vector<std::string>& before,
                         const std::vector<std::string>& after);

}  // namespace tb::engine
