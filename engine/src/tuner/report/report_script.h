// The report's code for a user's script (private to the tuner): the exact edits of the lines the launcher
// found (python/tunebench/source.py): the DataLoader(...) call with the kept loader knobs, the optimizer's
// zero_grad, the threads, the autocast block.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/tuner.h"

namespace tb::engine {

// `code` is one line of Python holding a call, e.g. "loader = DataLoader(ds, batch_size=32, shuffle=True)".
// Returns it with each keyword argument of `args` set: an existing `name=value` is replaced, a missing one
// is added before the call's closing parenthesis. Unchanged when the line has no call.
std::string edit_call(const std::string& code, const std::vector<std::pair<std::string, std::string>>& args);

// True for a tune of a script (environment.model "script:..."); then `py` holds the edits, one per line.
bool script_code_lines(const TuneResult& r, std::vector<std::string>& py);

}  // namespace tb::engine
