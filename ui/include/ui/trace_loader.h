// Bridges the profiler's trace model to the timeline: loads a file with tb::prof::load_trace, runs
// tb::prof::analyze, and converts both into a TimelineData (lanes by depth, categories, analysis bands and
// totals). Meant to run on a worker thread (QtConcurrent); returns errors as values, never throws.
#pragma once

#include <QString>
#include <QStringList>
#include <memory>

#include "profiler/analysis.h"
#include "profiler/trace.h"
#include "ui/timeline_model.h"

namespace tb::ui {

struct LoadedTrace {
  bool ok = false;
  QString error;                                  // one line when !ok
  std::shared_ptr<tb::prof::Trace> trace;         // kept for the Chrome-trace export
  std::shared_ptr<tb::prof::AnalysisResult> analysis;
  std::shared_ptr<TimelineData> timeline;
};

LoadedTrace loadTraceFile(const QString& path);
// Loads several chunks (a live run's latest trace files) and merges them into one trace.
LoadedTrace loadTraceChunks(const QStringList& paths);
// Analyses and converts an already loaded, finalized trace.
LoadedTrace analyzeAndConvert(std::shared_ptr<tb::prof::Trace> trace);
std::shared_ptr<TimelineData> toTimeline(const tb::prof::Trace& trace, const tb::prof::AnalysisResult* analysis);

// Writes the trace (with findings) as Chrome trace JSON for Perfetto; returns "" or a one-line error.
QString exportChromeTrace(const LoadedTrace& t, const QString& path);

}  // namespace tb::ui
