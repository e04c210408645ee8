// Bridges the profiler's trace model to the timeline: loads a file with tb::prof::load_trace, runs
// tb::prof::analyze, and converts both into a TimelineData (lanes by depth, categories, analysis bands and
// totals). Meant to run on a worker thread (QtConcurrent); returns errors as values, never throws.
//
// Memory: the profiler's Trace (~106 B/event) is dropped once the timeline (~41 B/event) and the analysis
// are built; only the draw store stays resident. The Chrome-trace export re-reads the source files, which
// costs an import (about 1 s per million events) once per export instead of 2.5x the memory all the time.
#pragma once

#include <QString>
#include <QStringList>
#include <memory>

#include "profiler/analysis.h"
#include "profiler/ranks.h"
#include "profiler/compile_lane.h"
#include "profiler/step_lane.h"
#include "profiler/trace.h"
#include "ui/timeline_model.h"

namespace tb::ui {

// A live script's step lane (profiler/step_lane.h): every step its run sent, drawn beside the sampled chunks.
struct StepLaneInput {
  std::vector<tb::prof::LaneStep> steps;
  std::vector<tb::prof::LaneOutside> outside;
  std::vector<tb::prof::LaneCompile> compiles;  // the compile lane (profiler/compile_lane.h), on the same clock
};

struct LoadedTrace {
  bool ok = false;
  QString error;                                  // one line when !ok
  QStringList sources;                            // the files it came from (re-read by the export)
  tb::prof::TraceMetadata meta;
  size_t source_events = 0;                       // events of the profiler trace (to notice changed files)
  std::shared_ptr<tb::prof::AnalysisResult> analysis;
  std::shared_ptr<tb::prof::RankAnalysis> ranks;  // several processes with steps: the ranks compared
  std::shared_ptr<TimelineData> timeline;
  std::shared_ptr<const StepLaneInput> lane;      // drawn into it (the export draws it again); null: none
  QString lane_note;                              // why a lane it was given is not drawn ("" when it is)
};

LoadedTrace loadTraceFile(const QString& path);
// Loads several chunks (a live run's latest trace files) and merges them into one trace, with a live script's
// step lane when one is given (then `paths` may be empty: the steps before the first chunk).
LoadedTrace loadTraceChunks(const QStringList& paths, std::shared_ptr<const StepLaneInput> lane = nullptr);
// Analyses and converts an already loaded, finalized trace read from `sources`.
LoadedTrace analyzeAndConvert(const tb::prof::Trace& trace, const QStringList& sources);
std::shared_ptr<TimelineData> toTimeline(const tb::prof::Trace& trace, const tb::prof::AnalysisResult* analysis);

// Writes the trace (with findings) as Chrome trace JSON for Perfetto; returns "" or a one-line error
// (also when a source file changed or vanished since it was opened: the export would not match the view).
QString exportChromeTrace(const LoadedTrace& t, const QString& path);

}  // namespace tb::ui
