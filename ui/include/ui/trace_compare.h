// File → Compare with…: two traces side by side as tunebench-cli diff sees them (profiler/trace_diff.h),
// rendered as HTML tables for a dialog. Loads and analyses both files, so it runs on a worker thread.
#pragma once

#include <QString>

#include "profiler/trace_diff.h"

namespace tb::ui {

struct TraceComparison {
  bool ok = false;
  QString error;  // one line when !ok
  QString html;
};

// A is the reference (the trace on screen), B the other one.
TraceComparison compareTraceFiles(const QString& a, const QString& b);
QString diffHtml(const QString& a_name, const QString& b_name, const tb::prof::TraceDiff& d);

}  // namespace tb::ui
