// An Auto-tune asked of a live run (serve's "tune" message): what the running session takes from its result.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/session.h"
#include "engine/tuner.h"

namespace tb::engine {

struct LiveTuneOutcome {
  int64_t rev = -1;   // the session's configuration revision after the changes; -1 when nothing changed
  Config changed;     // what was applied
  std::vector<std::string> warnings;  // kept process knobs this process cannot take: how to restart with them
};

// Applies the kept changes in place. A knob that takes effect at process start is a warning instead (the
// allocator is switched live where it can be); a value that is the baseline's is no change the tuner kept.
// The configuration always names the allocator that runs, which the tuner may have pinned for its windows.
LiveTuneOutcome apply_tune_live(Session& session, const TuneResult& result);

}  // namespace tb::engine
