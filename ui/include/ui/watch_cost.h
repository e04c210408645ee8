// What watching costs the run: TuneBench's own pauses in a live trace (a script's chunk stops, the recorder's
// and collector's work), as the status bar states them beside the run. Kineto's stop of a chunk runs on the
// training thread and cannot be cut into pieces, so a pause longer than a step is named with its cause and its
// size in steps (docs/analysis.md "The profiler's own time").
#pragma once

#include <QString>

#include "profiler/analysis.h"

namespace tb::ui {

struct WatchCost {
  QString text;     // "watching costs 2.6% · a chunk's stop 64 ms = 32 steps"; "" when none
  QString tip;      // how the cost is kept down and what to change
  bool high = false;  // above 3% of the run, or a pause longer than a median step
};

WatchCost watchCost(const tb::prof::AnalysisResult& a);

}  // namespace tb::ui
