// The timeline's painting (ui/timeline_widget.h), one pass per layer from the bottom up: row backgrounds and
// grid, analysis bands, events, the selected event's flow, markers and the selection range, all clipped to the
// data area; then the ruler and the gutter around it. Passes read the frame's geometry and grid, computed once.
#include "ui/timeline_widget.h"
#include "timeline_format.h"
#include "timeline_frame.h"

#include "profiler/range_names.h"

#include <QLocale>
#include <QPainter>
#include <QPainterPath>
#include <cmath>

namespace tb::ui {

namespace {

const QColor kBg(0x1b, 0x1f, 0x27);
const QColor kBgAlt(0x20, 0x25, 0x2e);
const QColor kGutter(0x24, 0x29, 0x33);
const QColor kRuler(0x2a, 0x30, 0x3b);
const QColor kText(0xd8, 0xde, 0xe9);
const QColor kDimText(0x8a, 0x93, 0xa3);
const QColor kStall(0xff, 0x5c, 0x39);
const QColor kGap(0xb3, 0x88, 0xff);
const QColor kSel(0x4f, 0xa3, 0xff);
// Outside training (validation, checkpoints between epochs): a neutral grey, apart from the faults' colours.
const QColor kOutside(0x90, 0x96, 0xa0);
const QColor kProfiler(0x4d, 0xb6, 0xac);  // TuneBench's own time: teal, unlike any cause of the program's
// Markers (trace-wide instants, config changes): dashed lines over the events, labels on the ruler.
const QColor kMarker(0xf0, 0xc0, 0x40);

uint32_t hash32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352d;
  x ^= x >> 15;
  x *= 0x846ca68b;
  x ^= x >> 16;
  return x;
}

// Colour per category; ranges and kernels vary the shade by name so neighbours stay distinguishable.
QColor colorFor(EventCat c, uint32_t name) {
  const int v = int(hash32(name) % 1000);
  switch (c) {
    case EventCat::Range: return QColor::fromHsl(195 + v % 50, 120, 105 + v % 40);
    case EventCat::Step: return QColor(0x5c, 0x6b, 0xc0);
    case EventCat::StepDetailed: return QColor(0x8c, 0x9e, 0xff);  // brighter: the steps a chunk holds in full
    case EventCat::DataWait: return QColor(0xff, 0x70, 0x43);
    case EventCat::Runtime: return QColor::fromHsl(215, 25, 120 + v % 30);
    case EventCat::Sync: return QColor(0xe5, 0x39, 0x35);
    case EventCat::Kernel: return QColor::fromHsl(95 + v % 55, 150, 110 + v % 35);
    case EventCat::Memcpy: return QColor(0xff, 0xca, 0x28);
    case EventCat::Memset: return QColor(0xce, 0x5c, 0xd8);
    case EventCat::GpuAnnotation: return QColor(0x4a, 0x5a, 0x68);
    default: return QColor(0x78, 0x90, 0x9c);
  }
}


}  // namespace


void TimelineWidget::paintAll(QPainter& p, const QRect& r) {
  p.fillRect(r, kBg);
  QFont small = font();
  small.setPointSizeF(std::max(7.0, small.pointSizeF() * 0.85));
  p.setFont(small);
  const QFontMetrics fm(small);
  // Conservative: most names are narrower than average.
  Frame f{r, rowsTop(), kGutterWidth, r.width() - kGutterWidth, fm, fm.averageCharWidth() * 0.8};
  if (!data_ || data_->tracks.empty()) {
    p.setPen(kDimText);
    p.drawText(r, Qt::AlignCenter,
               tr("No trace yet.\nOpen a trace (Ctrl+O), drop a Kineto / Chrome trace here, or start a run."));
    return;
  }
  // Ticks at 1/2/5 x 10^k ns, about 110 px apart, relative to the trace's start.
  const double target = mapper_.nsPerPx() * 110;
  f.step = std::pow(10.0, std::floor(std::log10(std::max(1.0, target))));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (f.step * m >= target) {
      f.step *= m;
      break;
    }
  f.base = double(data_->t_min);
  f.first_tick = std::ceil((mapper_.start() - f.base) / f.step) * f.step;

  p.setClipRect(QRect(f.x0, f.top, f.w, r.height() - f.top));
  paintRowsAndGrid(p, f);
  paintBands(p, f);
  paintEvents(p, f);
  paintFlow(p, f);
  paintMarkersAndSelection(p, f);
  p.setClipping(false);
  paintRuler(p, f);
  paintGutter(p, f);
  paintMemory(p, f);
  paintQueue(p, f);
}

void TimelineWidget::paintRowsAndGrid(QPainter& p, const Frame& f) const {
  const QRect& r = f.r;
  const int top = f.top, x0 = f.x0, w = f.w;
  // Row backgrounds per track, alternating.
  for (size_t i = 0; i < rows_.size(); ++i) {
    const int y = top + int(i) * kRowHeight - scroll_y_;
    if (y + kRowHeight < top || y > r.height()) continue;
    if (rows_[i].track % 2) p.fillRect(x0, y, w, kRowHeight, kBgAlt);
  }
  // Grid lines under everything else.
  p.setPen(QColor(0x2e, 0x34, 0x3f));
  for (double t = f.first_tick; f.base + t <= mapper_.end(); t += f.step) {
    const double x = x0 + mapper_.toPx(f.base + t);
    p.drawLine(QPointF(x, top), QPointF(x, r.height()));
  }
}

void TimelineWidget::paintBands(QPainter& p, const Frame& f) const {
  const QRect& r = f.r;
  const int top = f.top, x0 = f.x0, w = f.w;
  // Analysis bands: full-height translucent columns. Adjacent sub-pixel bands merge into one.
  auto bandColor = [](BandKind k) {
    QColor c = k == BandKind::LoaderStall ? kStall : k == BandKind::LaunchGap ? kGap : k == BandKind::Sync ? QColor(0xe5, 0x39, 0x35)
               : k == BandKind::OutsideTraining ? kOutside : k == BandKind::Profiler ? kProfiler : kSel;
    c.setAlpha(k == BandKind::LoaderStall ? 70 : k == BandKind::OutsideTraining || k == BandKind::Profiler ? 80 : 55);
    return c;
  };
  for (BandKind kind :
       {BandKind::OutsideTraining, BandKind::Profiler, BandKind::LaunchGap, BandKind::Sync, BandKind::LoaderStall}) {
    double run0 = -1, run1 = -2;
    const QColor c = bandColor(kind);
    for (const Band& b : data_->bands) {
      if (b.kind != kind || b.end < mapper_.start() || b.start > mapper_.end()) continue;
      const double a = std::max(0.0, mapper_.toPx(double(b.start))), e = std::min(double(w), mapper_.toPx(double(b.end)));
      if (a <= run1 + 1) {
        run1 = std::max(run1, e);
        continue;
      }
      if (run1 >= run0) p.fillRect(QRectF(x0 + run0, top, std::max(1.0, run1 - run0), r.height() - top), c);
      run0 = a;
      run1 = e;
    }
    if (run1 >= run0) p.fillRect(QRectF(x0 + run0, top, std::max(1.0, run1 - run0), r.height() - top), c);
  }
}

void TimelineWidget::paintEvents(QPainter& p, const Frame& f) const {
  const QRect& r = f.r;
  const int top = f.top, x0 = f.x0, w = f.w;
  // Events.
  p.setRenderHint(QPainter::Antialiasing, false);
  for (const DrawItem& it : list_.items) {
    const double a = mapper_.toPx(double(it.start)), e = mapper_.toPx(double(it.end));
    if (e < 0 || a > w) continue;
    const int y = top + int(it.row) * kRowHeight - scroll_y_;
    if (y + kRowHeight < top || y > r.height()) continue;
    const double ca = std::max(-1.0, a), ce = std::min(double(w) + 1, e);
    QRectF box(x0 + ca, y + 1, std::max(1.0, ce - ca), kRowHeight - 2);
    QColor c = colorFor(it.cat, it.name);
    if (it.count > 1) {
      // A folded run of sub-3-px events: drawn as a thinner bar with a light top edge, so it never reads as
      // one long event (tracy draws a zig-zag; opaque fills are cheaper than pattern brushes).
      box.adjust(0, 3, 0, -3);
      p.fillRect(box, c.darker(120));
      p.fillRect(QRectF(box.left(), box.top(), box.width(), 1), c.lighter(130));
    } else {
      p.fillRect(box, c);
    }
    if (it.count == 1 && box.width() > 36 && it.name < data_->names.size()) {
      QString text = eventLabel(it.track, it.lane, it.index) + "  " + fmtDuration(double(it.end - it.start));
      // Elide only when the cheap estimate says it might not fit (elidedText is the costly part of a frame).
      if (text.size() * f.avg_char > box.width() - 6) text = f.fm.elidedText(text, Qt::ElideRight, int(box.width()) - 6);
      if (text.size() > 1) {
        p.setPen(c.lightness() > 140 ? QColor(0x10, 0x10, 0x10) : QColor(0xf4, 0xf6, 0xfa));
        p.drawText(box.adjusted(3, 0, -3, 0), Qt::AlignVCenter | Qt::AlignLeft, text);
      }
    }
  }
}

void TimelineWidget::paintFlow(QPainter& p, const Frame& f) const {
  const int top = f.top, x0 = f.x0;
  // Hover and selected outlines, and the launch -> kernel flow of the selected (else hovered) event.
  auto outline = [&](const Hit& h, QColor col) {
    if (!h.ok || !data_) return QRectF();
    const Lane& L = data_->tracks[h.track].lanes[h.lane];
    size_t row = 0;
    for (; row < rows_.size(); ++row)
      if (rows_[row].track == h.track && rows_[row].lane == h.lane) break;
    const double a = mapper_.toPx(double(L.start[h.index])), e = mapper_.toPx(double(L.end[h.index]));
    const int y = top + int(row) * kRowHeight - scroll_y_;
    QRectF box(x0 + a, y, std::max(2.0, e - a), kRowHeight);
    p.setPen(QPen(col, 1.5));
    p.setBrush(Qt::NoBrush);
    p.drawRect(box);
    return box;
  };
  const QRectF hbox = outline(hover_, QColor(255, 255, 255, 200));
  const QRectF sbox = outline(selected_, QColor(0x4f, 0xa3, 0xff));
  const Hit& fh = selected_.ok ? selected_ : hover_;
  if (fh.ok) {
    const Lane& L = data_->tracks[fh.track].lanes[fh.lane];
    const int64_t corr = L.corr[fh.index];
    if (corr != 0) {
      if (const auto* other = findCorr(corr, fh)) {
        Hit oh{true, data_->tracks[0].lanes.empty() ? 0u : 0u, 0, 0, 1};
        oh.track = rows_[other->first].track;
        oh.lane = rows_[other->first].lane;
        oh.index = other->second;
        const QRectF obox = outline(oh, QColor(0xff, 0xd5, 0x4f));
        const QRectF from = selected_.ok ? sbox : hbox;
        // Arrow from the launch (CPU) to the GPU work, whichever side was picked.
        const bool picked_is_src = data_->tracks[fh.track].kind == TrackKind::CpuThread;
        const QRectF& s = picked_is_src ? from : obox;
        const QRectF& d = picked_is_src ? obox : from;
        const QPointF ps(s.left(), s.bottom()), pd(d.left(), d.top());
        p.setRenderHint(QPainter::Antialiasing, true);
        QPainterPath path(ps);
        const double dy = (pd.y() - ps.y()) * 0.5;
        path.cubicTo(ps + QPointF(0, dy), pd - QPointF(0, dy), pd);
        p.setPen(QPen(QColor(0xff, 0xd5, 0x4f), 1.6));
        p.drawPath(path);
        const QPointF dir = pd.y() >= ps.y() ? QPointF(0, -1) : QPointF(0, 1);
        QPolygonF head{pd, pd + dir * 7 + QPointF(-4, 0), pd + dir * 7 + QPointF(4, 0)};
        p.setBrush(QColor(0xff, 0xd5, 0x4f));
        p.drawPolygon(head);
        p.setRenderHint(QPainter::Antialiasing, false);
      }
    }
  }
}

void TimelineWidget::paintMarkersAndSelection(QPainter& p, const Frame& f) const {
  const QRect& r = f.r;
  const int top = f.top, x0 = f.x0;
  // Markers: trace-wide instants and config changes, as dashed full-height lines over the events.
  {
    QPen pen(kMarker, 1, Qt::DashLine);
    p.setPen(pen);
    for (const Marker& m : data_->markers) {
      if (m.t < mapper_.start() || m.t > mapper_.end()) continue;
      const double x = x0 + mapper_.toPx(double(m.t));
      p.drawLine(QPointF(x, top), QPointF(x, r.height()));
    }
  }
  // Selection range.
  if (hasSelection()) {
    const double a = mapper_.toPx(double(sel_t0_)), e = mapper_.toPx(double(sel_t1_));
    QColor c = kSel;
    c.setAlpha(40);
    p.fillRect(QRectF(x0 + a, top, std::max(1.0, e - a), r.height() - top), c);
    p.setPen(QPen(kSel, 1));
    p.drawLine(QPointF(x0 + a, top), QPointF(x0 + a, r.height()));
    p.drawLine(QPointF(x0 + e, top), QPointF(x0 + e, r.height()));
  }
}

void TimelineWidget::paintRuler(QPainter& p, const Frame& f) const {
  const QRect& r = f.r;
  const int top = f.top, x0 = f.x0;
  // Ruler: ticks at 1/2/5 x 10^k ns (grid computed before the events), labelled relative to the trace start.
  p.fillRect(QRect(0, 0, r.width(), top), kRuler);
  p.setPen(kDimText);
  for (double t = f.first_tick; f.base + t <= mapper_.end(); t += f.step) {
    const double x = x0 + mapper_.toPx(f.base + t);
    p.setPen(QColor(0x5a, 0x63, 0x72));
    p.drawLine(QPointF(x, top - 6), QPointF(x, top));
    p.setPen(kDimText);
    p.drawText(QPointF(x + 3, top - 9), fmtDuration(t));
  }
  // Marker labels on the ruler's lower edge; one that would overlap the previous label is left out.
  {
    double last_end = -1e9;
    p.setPen(kMarker);
    for (const Marker& m : data_->markers) {
      if (m.t < mapper_.start() || m.t > mapper_.end()) continue;
      const double x = x0 + mapper_.toPx(double(m.t));
      const std::string& n = m.name < data_->names.size() ? data_->names[m.name] : data_->names[0];
      const QString label = n == tb::prof::names::kConfigChange ? tr("config rev %1").arg(m.arg) : QString::fromStdString(n);
      const double lw = f.fm.horizontalAdvance(label);
      if (x + 3 < last_end) continue;
      p.drawText(QPointF(x + 3, top - 1), label);
      last_end = x + 3 + lw + 6;
    }
  }
  // Selection length on the ruler.
  if (hasSelection()) {
    const double a = x0 + mapper_.toPx(double(sel_t0_));
    p.setPen(kSel);
    p.drawText(QPointF(std::max(double(x0 + 2), a + 3), 12), tr("selection %1").arg(fmtDuration(double(sel_t1_ - sel_t0_))));
  }
}

void TimelineWidget::paintGutter(QPainter& p, const Frame& f) const {
  const QRect& r = f.r;
  const int top = f.top, x0 = f.x0;
  // Gutter: track names.
  p.fillRect(QRect(0, top, x0, r.height() - top), kGutter);
  p.fillRect(QRect(0, 0, x0, top), kRuler.darker(110));
  p.setPen(kText);
  p.drawText(QRect(8, 0, x0 - 8, top), Qt::AlignVCenter | Qt::AlignLeft,
             tr("%1 events").arg(QLocale().toString(qulonglong(data_->eventCount()))));
  p.setClipRect(QRect(0, top, r.width(), r.height() - top));
  for (size_t i = 0; i < rows_.size(); ++i) {
    if (rows_[i].group) {  // a group's header row: its name across the gutter, a rule across the data
      const int y = top + int(i) * kRowHeight - scroll_y_;
      if (y > r.height()) break;
      p.fillRect(QRect(0, y, r.width(), kRowHeight), kRuler.darker(115));
      p.setPen(QColor(0x8b, 0xd4, 0x6a));
      QFont bold = p.font();
      bold.setBold(true);
      p.setFont(bold);
      const QString name = QString::fromStdString(rowGroupOf(data_->tracks[rows_[i].track]));
      p.drawText(QRect(8, y, x0 - 12, kRowHeight), Qt::AlignVCenter | Qt::AlignLeft, name);
      bold.setBold(false);
      p.setFont(bold);
      continue;
    }
    if (!rows_[i].header) continue;
    const int y = top + int(i) * kRowHeight - scroll_y_;
    if (y > r.height()) break;
    const Track& tr = data_->tracks[rows_[i].track];
    p.setPen(QColor(0x3a, 0x42, 0x50));
    p.drawLine(0, y, r.width(), y);
    const QColor kindColor = tr.kind == TrackKind::GpuStream ? QColor(0x8b, 0xd4, 0x6a) : QColor(0x6c, 0xb6, 0xff);
    p.fillRect(QRect(0, y + 1, 3, int(std::max<size_t>(1, tr.lanes.size())) * kRowHeight - 1), kindColor);
    p.setPen(kText);
    p.drawText(QRect(8, y, x0 - 12, kRowHeight), Qt::AlignVCenter | Qt::AlignLeft,
               f.fm.elidedText(QString::fromStdString(tr.name), Qt::ElideMiddle, x0 - 14));
  }
  p.setClipping(false);
  // Totals of the analysis bands, in the gutter's foot: outside the data, never over an event. One line per
  // class that has any.
  std::vector<std::pair<QString, QColor>> foot;
  if (data_->stall_count || data_->gap_count || data_->stall_total_ns || data_->gap_total_ns) {
    foot.push_back({tr("■ loader stall %1 (%2)").arg(fmtDuration(double(data_->stall_total_ns))).arg(data_->stall_count), kStall});
    foot.push_back({tr("■ launch gaps %1 (%2)").arg(fmtDuration(double(data_->gap_total_ns))).arg(data_->gap_count), kGap.lighter(115)});
  }
  if (data_->outside_count)
    foot.push_back({tr("■ outside training %1 (%2)").arg(fmtDuration(double(data_->outside_total_ns))).arg(data_->outside_count),
                    kOutside.lighter(130)});
  if (data_->profiler_count)
    foot.push_back({tr("■ profiler (TuneBench) %1 (%2)").arg(fmtDuration(double(data_->profiler_total_ns))).arg(data_->profiler_count),
                    kProfiler.lighter(120)});
  if (!foot.empty()) {
    const int n = int(foot.size());
    const QRect box(0, r.height() - f.fm.height() * n - 10, x0, f.fm.height() * n + 10);
    p.fillRect(box, kGutter.darker(115));
    for (int k = 0; k < n; ++k) {
      p.setPen(foot[size_t(k)].second);
      p.drawText(box.adjusted(8, 4 + k * f.fm.height(), -4, 0), Qt::AlignTop | Qt::AlignLeft,
                 f.fm.elidedText(foot[size_t(k)].first, Qt::ElideRight, x0 - 12));
    }
  }
}

}  // namespace tb::ui
