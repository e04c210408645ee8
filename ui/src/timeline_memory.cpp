// The timeline's memory strip (TimelineWidget::paintMemory): under the rows, the device's allocated and
// reserved bytes and the host's resident set as lines on one scale, the highest allocation marked with its
// value, so a user sees memory beside time (what a step holds, where the peak is, whether it grows).
#include <QPainter>
#include <QPainterPath>
#include <algorithm>

#include "timeline_format.h"
#include "timeline_frame.h"

namespace tb::ui {
namespace {

QColor colorOf(const std::string& name) {
  if (name == "memory: device allocated") return QColor(0x4f, 0xc3, 0xf7);
  if (name == "memory: device reserved") return QColor(0x81, 0x8c, 0xf8);
  if (name == "memory: device peak") return QColor(0xff, 0xd5, 0x4f);
  return QColor(0xa5, 0xd6, 0xa7);  // host
}

QString bytes(double b) {
  return b >= double(1 << 30) ? QStringLiteral("%1 GiB").arg(b / double(1 << 30), 0, 'f', 2)
                              : QStringLiteral("%1 MiB").arg(b / double(1 << 20), 0, 'f', 0);
}

}  // namespace

void TimelineWidget::paintMemory(QPainter& p, const Frame& f) const {
  if (!data_ || data_->memory.empty()) return;
  const int y0 = f.top + int(rows_.size()) * kRowHeight - scroll_y_, h = kMemoryHeight;
  if (y0 > f.r.height() || y0 + h < f.top) return;
  p.save();
  p.setClipRect(QRect(0, f.top, f.r.width(), f.r.height() - f.top).intersected(QRect(f.x0, y0, f.w, h)));
  p.fillRect(QRect(f.x0, y0, f.w, h), QColor(0x17, 0x1a, 0x21));
  // Device figures when the trace has them (the host's RSS is a different scale), else the host's.
  bool device = false;
  for (const auto& s : data_->memory) device |= s.name.rfind("memory: device", 0) == 0;
  double top = 1;
  for (const auto& s : data_->memory)
    if ((s.name.rfind("memory: device", 0) == 0) == device)
      for (double v : s.v) top = std::max(top, v);
  const double scale = (h - 14) / top;
  p.setRenderHint(QPainter::Antialiasing, true);
  int64_t peak_t = 0;
  double peak_v = -1;
  for (const auto& s : data_->memory) {
    if ((s.name.rfind("memory: device", 0) == 0) != device || s.t.empty()) continue;
    if (s.name == "memory: device allocated" || (!device && peak_v < 0))
      for (size_t i = 0; i < s.v.size(); ++i)
        if (s.v[i] > peak_v) peak_v = s.v[i], peak_t = s.t[i];
    // A step line: a counter holds its value until the next sample. At most one point a pixel (the highest).
    QPainterPath path;
    bool started = false;
    double last_x = -1e9, last_y = 0;
    auto it = std::lower_bound(s.t.begin(), s.t.end(), int64_t(mapper_.start()));
    size_t i = it == s.t.begin() ? 0 : size_t(it - s.t.begin()) - 1;
    for (; i < s.t.size(); ++i) {
      const double x = f.x0 + std::clamp(mapper_.toPx(double(s.t[i])), -1.0, double(f.w) + 1);
      const double y = y0 + h - 2 - s.v[i] * scale;
      if (!started) {
        path.moveTo(x, y);
        started = true;
      } else if (x - last_x < 1 && y >= last_y) {
        continue;
      } else {
        path.lineTo(x, last_y);
        path.lineTo(x, y);
      }
      last_x = x;
      last_y = y;
      if (double(s.t[i]) > mapper_.end()) break;
    }
    path.lineTo(f.x0 + f.w, last_y);
    p.setPen(QPen(colorOf(s.name), 1.5));
    p.drawPath(path);
  }
  p.setRenderHint(QPainter::Antialiasing, false);
  if (peak_v >= 0 && double(peak_t) >= mapper_.start() && double(peak_t) <= mapper_.end()) {
    const double x = f.x0 + mapper_.toPx(double(peak_t)), y = y0 + h - 2 - peak_v * scale;
    p.setPen(QColor(0xff, 0xd5, 0x4f));
    p.drawLine(QPointF(x, y - 4), QPointF(x, y + 4));
    p.drawText(QPointF(std::min(x + 4, double(f.x0 + f.w - 90)), std::max(double(y0 + 11), y - 2)),
               tr("peak %1").arg(bytes(peak_v)));
  }
  p.restore();
  // Its name and the peaks in the gutter (painted after the gutter's own rows, which end above the strip).
  p.save();
  p.setClipRect(QRect(0, f.top, f.r.width(), f.r.height() - f.top).intersected(QRect(0, y0, f.r.width(), h)));
  p.setPen(QColor(0x3a, 0x42, 0x50));
  p.drawLine(0, y0, f.r.width(), y0);
  QString legend = device ? tr("memory (device)") : tr("memory (host)");
  p.setPen(QColor(0xd8, 0xde, 0xe9));
  p.drawText(QRect(8, y0, f.x0 - 12, kRowHeight), Qt::AlignVCenter | Qt::AlignLeft, legend);
  int ly = y0 + kRowHeight;
  for (const auto& s : data_->memory) {
    if ((s.name.rfind("memory: device", 0) == 0) != device || s.v.empty()) continue;
    if (ly + kRowHeight > y0 + h) break;
    p.setPen(colorOf(s.name));
    p.drawText(QRect(14, ly, f.x0 - 16, kRowHeight), Qt::AlignVCenter | Qt::AlignLeft,
               QString::fromStdString(s.name.substr(8)) + " " + bytes(*std::max_element(s.v.begin(), s.v.end())));
    ly += kRowHeight - 4;
  }
  p.restore();
}

}  // namespace tb::ui
