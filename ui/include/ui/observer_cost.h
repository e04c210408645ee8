// The window's own cost while it watches a run. On a machine with few cores the window competes with the run
// for the CPU, so a figure it measured is only as good as the window was quiet: the run controller stamps
// each step with this process's CPU time as it arrives, and a segment's or a comparison's trust line names
// the window's share of a core over its measured steps when that share is above kObserverShareThreshold.
#pragma once

#include <QString>
#include <QtGlobal>

namespace tb::ui {

constexpr double kObserverShareThreshold = 0.10;  // CPU seconds per wall second: a tenth of one core

// This process's user + system CPU time and a monotonic clock, in ns.
qint64 processCpuNs();
qint64 monotonicNs();

// CPU seconds per wall second between two stamps; NaN when they do not make an interval.
double cpuShare(qint64 cpu0, qint64 wall0, qint64 cpu1, qint64 wall1);

// "window: 23% of a core while it measured (...)" when `share` is above the threshold; "" otherwise.
QString observerCostText(double share);

}  // namespace tb::ui
