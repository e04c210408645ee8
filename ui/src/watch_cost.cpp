#include "ui/watch_cost.h"

#include <QObject>

namespace tb::ui {

WatchCost watchCost(const tb::prof::AnalysisResult& a) {
  WatchCost w;
  const int64_t run = a.window.length();
  if (a.profiler_ns <= 0 || run <= 0) return w;
  const double share = 100.0 * double(a.profiler_ns) / double(run);
  const double steps = a.step_median_ns > 0 ? double(a.profiler_longest_ns) / double(a.step_median_ns) : 0.0;
  w.text = QObject::tr("watching costs %1%").arg(share, 0, 'f', 1);
  if (steps > 1.0)
    w.text += QObject::tr(" · a chunk's stop %1 ms = %2 steps")
                  .arg(double(a.profiler_longest_ns) / 1e6, 0, 'f', 0)
                  .arg(steps, 0, 'f', steps < 10 ? 1 : 0);
  w.high = share > 3.0 || steps > 1.0;
  w.tip = QObject::tr(
      "TuneBench's own pauses on the training thread, as a share of the run, counted over the chunks on screen%1; "
      "the longest of them against the median step. They are the profiler's stop "
      "of each trace chunk (Kineto hands over the chunk's events there, and the script stands still for it) and "
      "its next start. A script's trace is sampled to keep them under 1% of the run, in chunks sized so that "
      "their stop stays within a step (3 to \"Detail chunks of\" steps); a pause longer than a step is Kineto's stop of "
      "the shortest chunk, which grows with the ops a step holds. Throughput figures leave the traced steps out.")
              .arg(a.untraced_ns > 0 ? QObject::tr(" and the untraced steps between them") : QString());
  return w;
}

}  // namespace tb::ui
