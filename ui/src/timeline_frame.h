// One paint's geometry, shared by the timeline's paint passes (private to ui/src).
#pragma once

#include <QFontMetrics>
#include <QRect>

#include "ui/timeline_widget.h"

namespace tb::ui {

// The whole rectangle, where the rows start, the data area's left edge and width, the label font's metrics,
// and the grid (tick step, the trace's start, the first tick after the view's start).
struct TimelineWidget::Frame {
  QRect r;
  int top, x0, w;
  QFontMetrics fm;
  double avg_char;
  double step = 0, base = 0, first_tick = 0;
};

}  // namespace tb::ui
