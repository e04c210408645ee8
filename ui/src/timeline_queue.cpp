// The timeline's loader-queue strip (TimelineWidget::paintQueue): under the memory strip, the batches the
// workers have delivered that the training loop has not taken ("ready") and those asked of them and not back yet
// ("in flight"), sampled when the loop takes a batch. An empty queue while the loop waits is a loader that
// cannot keep up; a full one while it waits points at the training process.
#include <QPainter>
#include <QPainterPath>
#include <algorithm>

#include "timeline_format.h"
#include "timeline_frame.h"

namespace tb::ui {

void TimelineWidget::paintQueue(QPainter& p, const Frame& f) const {
  if (!data_ || data_->queue.empty()) return;
  const int y0 = f.top + int(rows_.size()) * kRowHeight + memoryStripHeight() - scroll_y_, h = kMemoryHeight;
  if (y0 > f.r.height() || y0 + h < f.top) return;
  double top = 1;
  for (const auto& s : data_->queue)
    for (double v : s.v) top = std::max(top, v);
  const double scale = (h - 6) / top;
  auto color = [](const std::string& name) {
    return name == "loader: batches ready" ? QColor(0x66, 0xbb, 0x6a) : QColor(0xff, 0xb7, 0x4d);
  };
  p.save();
  p.setClipRect(QRect(0, f.top, f.r.width(), f.r.height() - f.top).intersected(QRect(f.x0, y0, f.w, h)));
  p.fillRect(QRect(f.x0, y0, f.w, h), QColor(0x17, 0x1a, 0x21));
  for (const auto& s : data_->queue) {
    // A step line between samples, at most one point a pixel (the live view and a run's trace show chunks;
    // between two of them the line holds the last value sampled).
    QPainterPath path;
    double last_x = -1e9, last_y = 0;
    auto it = std::lower_bound(s.t.begin(), s.t.end(), int64_t(mapper_.start()));
    for (size_t i = it == s.t.begin() ? 0 : size_t(it - s.t.begin()) - 1; i < s.t.size(); ++i) {
      const double x = f.x0 + std::clamp(mapper_.toPx(double(s.t[i])), -1.0, double(f.w) + 1);
      const double y = y0 + h - 2 - s.v[i] * scale;
      if (path.elementCount() == 0) {
        path.moveTo(x, y);
      } else if (x - last_x >= 1 || y != last_y) {
        path.lineTo(x, last_y);
        path.lineTo(x, y);
      }
      last_x = x;
      last_y = y;
      if (double(s.t[i]) > mapper_.end()) break;
    }
    p.setPen(QPen(color(s.name), 1.5));
    p.drawPath(path);
  }
  p.restore();
  p.save();
  p.setClipRect(QRect(0, f.top, f.r.width(), f.r.height() - f.top).intersected(QRect(0, y0, f.r.width(), h)));
  p.setPen(QColor(0x3a, 0x42, 0x50));
  p.drawLine(0, y0, f.r.width(), y0);
  p.setPen(QColor(0xd8, 0xde, 0xe9));
  p.drawText(QRect(8, y0, f.x0 - 12, kRowHeight), Qt::AlignVCenter | Qt::AlignLeft, tr("loader queue (batches)"));
  int ly = y0 + kRowHeight;
  for (const auto& s : data_->queue) {
    if (s.v.empty() || ly + kRowHeight > y0 + h) break;
    p.setPen(color(s.name));
    p.drawText(QRect(14, ly, f.x0 - 16, kRowHeight), Qt::AlignVCenter | Qt::AlignLeft,
               tr("%1, at most %2").arg(QString::fromStdString(s.name.substr(std::string("loader: batches ").size())))
                   .arg(*std::max_element(s.v.begin(), s.v.end()), 0, 'f', 0));
    ly += kRowHeight - 4;
  }
  p.restore();
}

}  // namespace tb::ui
