#include "ui/timeline_widget.h"

#include "profiler/range_names.h"

#include <QElapsedTimer>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>
#include <QWheelEvent>
#include <QtConcurrent/QtConcurrent>
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

QString fmtDuration(double ns) {
  const double a = std::abs(ns);
  if (a < 1e3) return QString::number(ns, 'f', 0) + " ns";
  if (a < 1e6) return QString::number(ns / 1e3, 'f', a < 1e4 ? 2 : 1) + " µs";
  if (a < 1e9) return QString::number(ns / 1e6, 'f', a < 1e7 ? 2 : 1) + " ms";
  return QString::number(ns / 1e9, 'f', 3) + " s";
}

}  // namespace

TimelineWidget::TimelineWidget(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setMinimumSize(400, 160);
  watcher_ = new QFutureWatcher<DrawList>(this);
  connect(watcher_, &QFutureWatcher<DrawList>::finished, this, [this] {
    DrawList l = watcher_->result();
    if (l.generation >= list_.generation) {
      build_ms_ = l.build_ms;
      list_ = std::move(l);
    }
    update();
    if (build_pending_) {
      build_pending_ = false;
      requestBuild();
    }
  });
}

TimelineWidget::~TimelineWidget() { watcher_->waitForFinished(); }

void TimelineWidget::clear() {
  data_.reset();
  rows_.clear();
  list_ = DrawList{};
  corr_index_.clear();
  corr_built_ = false;
  hover_ = selected_ = Hit{};
  update();
}

void TimelineWidget::setData(std::shared_ptr<const TimelineData> data, bool keep_view) {
  const bool had = bool(data_);
  data_ = std::move(data);
  rows_ = data_ ? layoutRows(*data_) : std::vector<RowInfo>{};
  corr_index_.clear();
  corr_built_ = false;
  hover_ = selected_ = Hit{};
  // Items of the previous data must not be painted over the new rows; builds still in flight for the old data
  // carry an older generation and are dropped when they land.
  list_ = DrawList{};
  list_.generation = generation_ + 1;
  mapper_.setWidth(std::max(1, width() - kGutterWidth));
  // A kept view that shows none of the new data (a live run's newest chunks moved past it) would leave every
  // row blank: it is fitted like a first view.
  const bool view_shows_data =
      data_ && mapper_.end() >= double(data_->t_min) && mapper_.start() <= double(data_->t_max);
  if (!keep_view || !had || !view_shows_data) {
    user_moved_ = false;
    scroll_y_ = 0;
    fit();
  } else {
    applyView();
  }
}

void TimelineWidget::fit() {
  if (!data_) return;
  mapper_.fit(data_->t_min, data_->t_max);
  applyView();
}

void TimelineWidget::setView(double t0, double t1) {
  mapper_.setView(t0, t1);
  applyView();
}

void TimelineWidget::zoomToSelection() {
  if (!hasSelection()) return;
  mapper_.fit(sel_t0_, sel_t1_, 0.05);
  applyView();
}

void TimelineWidget::selectInterval(int64_t t0, int64_t t1, bool zoom) {
  user_moved_ = true;
  sel_t0_ = std::min(t0, t1);
  sel_t1_ = std::max(t0, t1);
  if (sel_t1_ == sel_t0_) sel_t1_ = sel_t0_ + 1;
  emit selectionChanged(sel_t0_, sel_t1_);
  if (zoom) {
    // Show the evidence with context on both sides.
    const int64_t pad = std::max<int64_t>((sel_t1_ - sel_t0_) * 2, 2000);
    mapper_.fit(sel_t0_ - pad, sel_t1_ + pad, 0.0);
    applyView();
  } else {
    update();
  }
}

bool TimelineWidget::findNext(const QString& text) {
  if (!data_) return false;
  EventRef cur;
  const EventRef* after = nullptr;
  if (selected_.ok) {
    cur = {selected_.track, selected_.lane, selected_.index};
    after = &cur;
  }
  const auto r = findNextEvent(*data_, text.toStdString(), after);
  if (!r) return false;
  selected_ = Hit{};
  selected_.ok = true;
  selected_.track = r->track;
  selected_.lane = r->lane;
  selected_.index = uint32_t(r->index);
  const Lane& L = data_->tracks[r->track].lanes[r->lane];
  const double s = double(L.start[r->index]), e = double(L.end[r->index]), d = std::max(1.0, e - s);
  // Keep the zoom when the event reads at it (a few pixels up to most of the view); otherwise zoom so it
  // takes about a tenth of the view.
  if (d < mapper_.span() / 300 || d > mapper_.span() * 0.8) {
    const double pad = std::max(4.5 * d, 1000.0);
    mapper_.fit(s - pad, e + pad, 0.0);
  } else {
    const double mid = (s + e) / 2, half = mapper_.span() / 2;
    mapper_.setView(mid - half, mid + half);
  }
  for (size_t row = 0; row < rows_.size(); ++row) {
    if (rows_[row].track != r->track || rows_[row].lane != r->lane) continue;
    const int y = int(row) * kRowHeight, visible = std::max(kRowHeight, height() - rowsTop());
    if (y < scroll_y_ || y + kRowHeight > scroll_y_ + visible)
      scroll_y_ = std::clamp(y - visible / 2, 0, std::max(0, contentHeight() - visible));
    break;
  }
  user_moved_ = true;
  applyView();
  QString desc = describe(selected_);
  desc.replace("<br>", " · ");
  desc.remove(QRegularExpression("<[^>]*>"));
  emit eventSelected(desc);
  return true;
}

void TimelineWidget::applyView() {
  if (data_) mapper_.clampTo(data_->t_min, data_->t_max);
  emit viewChanged(mapper_.start(), mapper_.end());
  requestBuild();
  update();
}

int TimelineWidget::contentHeight() const { return int(rows_.size()) * kRowHeight; }

void TimelineWidget::requestBuild() {
  if (!data_) return;
  const int h = std::max(1, height() - rowsTop());
  scroll_y_ = std::clamp(scroll_y_, 0, std::max(0, contentHeight() - h));
  const size_t first = size_t(scroll_y_ / kRowHeight);
  const size_t last = std::min(rows_.size(), size_t((scroll_y_ + h) / kRowHeight + 2));
  const uint64_t gen = ++generation_;
  auto data = data_;
  auto rows = rows_;
  TimeMapper m = mapper_;
  // Build a little wider than the view so small pans re-project the old list without holes.
  // (Synchronous builds — export, bench — cover exactly the view.)
  const double pad = sync_ ? 0.0 : 0.25 * m.span();
  TimeMapper wide(m.start() - pad, m.end() + pad, m.width() * (sync_ ? 1.0 : 1.5));
  auto job = [data, rows = std::move(rows), wide, first, last, gen] {
    DrawList l = buildDrawList(*data, rows, wide, first, last);
    l.generation = gen;
    return l;
  };
  if (sync_) {
    QElapsedTimer t;
    t.start();
    list_ = job();
    build_ms_ = double(t.nsecsElapsed()) / 1e6;
    return;
  }
  if (watcher_->isRunning()) {
    build_pending_ = true;  // coalesce: one more build when the current one lands
    return;
  }
  watcher_->setFuture(QtConcurrent::run([job]() mutable {
    QElapsedTimer t;
    t.start();
    DrawList l = job();
    l.build_ms = double(t.nsecsElapsed()) / 1e6;
    return l;
  }));
}

void TimelineWidget::resizeEvent(QResizeEvent*) {
  mapper_.setWidth(std::max(1, width() - kGutterWidth));
  requestBuild();
}

void TimelineWidget::paintEvent(QPaintEvent*) {
  QElapsedTimer t;
  t.start();
  QPainter p(this);
  paintAll(p, rect());
  paint_ms_ = double(t.nsecsElapsed()) / 1e6;
}

void TimelineWidget::renderTo(QPainter& p, const QSize& size) {
  const QSize old = this->size();
  const bool was_sync = sync_;
  sync_ = true;
  if (size != old) resize(size);
  mapper_.setWidth(std::max(1, size.width() - kGutterWidth));
  requestBuild();
  QElapsedTimer t;
  t.start();
  paintAll(p, QRect(QPoint(0, 0), size));
  paint_ms_ = double(t.nsecsElapsed()) / 1e6;
  sync_ = was_sync;
  if (size != old) {
    resize(old);
    mapper_.setWidth(std::max(1, old.width() - kGutterWidth));
  }
}

QImage TimelineWidget::toImage(const QSize& s) {
  const QSize size = s.isValid() ? s : this->size();
  QImage img(size, QImage::Format_ARGB32_Premultiplied);
  QPainter p(&img);
  renderTo(p, size);
  return img;
}

void TimelineWidget::paintAll(QPainter& p, const QRect& r) {
  p.fillRect(r, kBg);
  const int top = rowsTop();
  const int x0 = kGutterWidth;
  const int w = r.width() - x0;
  QFont small = font();
  small.setPointSizeF(std::max(7.0, small.pointSizeF() * 0.85));
  p.setFont(small);
  const QFontMetrics fm(small);
  const double avg_char = fm.averageCharWidth() * 0.8;  // conservative: most names are narrower than average

  if (!data_ || data_->tracks.empty()) {
    p.setPen(kDimText);
    p.drawText(r, Qt::AlignCenter,
               tr("No trace yet.\nOpen a trace (Ctrl+O), drop a Kineto / Chrome trace here, or start a run."));
    return;
  }
  // Row backgrounds per track, alternating.
  p.setClipRect(QRect(x0, top, w, r.height() - top));
  for (size_t i = 0; i < rows_.size(); ++i) {
    const int y = top + int(i) * kRowHeight - scroll_y_;
    if (y + kRowHeight < top || y > r.height()) continue;
    if (rows_[i].track % 2) p.fillRect(x0, y, w, kRowHeight, kBgAlt);
  }
  // Grid lines under everything else.
  const double target = mapper_.nsPerPx() * 110;
  double step = std::pow(10.0, std::floor(std::log10(std::max(1.0, target))));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (step * m >= target) {
      step *= m;
      break;
    }
  const double base = double(data_->t_min);
  const double first_tick = std::ceil((mapper_.start() - base) / step) * step;
  p.setPen(QColor(0x2e, 0x34, 0x3f));
  for (double t = first_tick; base + t <= mapper_.end(); t += step) {
    const double x = x0 + mapper_.toPx(base + t);
    p.drawLine(QPointF(x, top), QPointF(x, r.height()));
  }
  // Analysis bands: full-height translucent columns. Adjacent sub-pixel bands merge into one.
  auto bandColor = [](BandKind k) {
    QColor c = k == BandKind::LoaderStall ? kStall : k == BandKind::LaunchGap ? kGap : k == BandKind::Sync ? QColor(0xe5, 0x39, 0x35)
               : k == BandKind::OutsideTraining ? kOutside : kSel;
    c.setAlpha(k == BandKind::LoaderStall ? 70 : k == BandKind::OutsideTraining ? 80 : 55);
    return c;
  };
  for (BandKind kind : {BandKind::OutsideTraining, BandKind::LaunchGap, BandKind::Sync, BandKind::LoaderStall}) {
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
  // Events.
  p.setRenderHint(QPainter::Antialiasing, false);
  const DrawItem* hovered_item = nullptr;
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
      if (text.size() * avg_char > box.width() - 6) text = fm.elidedText(text, Qt::ElideRight, int(box.width()) - 6);
      if (text.size() > 1) {
        p.setPen(c.lightness() > 140 ? QColor(0x10, 0x10, 0x10) : QColor(0xf4, 0xf6, 0xfa));
        p.drawText(box.adjusted(3, 0, -3, 0), Qt::AlignVCenter | Qt::AlignLeft, text);
      }
    }
    if (hover_.ok && it.track == hover_.track && it.lane == hover_.lane && it.index == hover_.index) hovered_item = &it;
  }
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
  (void)hovered_item;
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
  // Markers: trace-wide instants and config changes, as dashed full-height lines over the events.
  const QColor kMarker(0xf0, 0xc0, 0x40);
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
  p.setClipping(false);

  // Ruler: ticks at 1/2/5 x 10^k ns (grid computed before the events), labelled relative to the trace start.
  p.fillRect(QRect(0, 0, r.width(), top), kRuler);
  p.setPen(kDimText);
  for (double t = first_tick; base + t <= mapper_.end(); t += step) {
    const double x = x0 + mapper_.toPx(base + t);
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
      const double lw = fm.horizontalAdvance(label);
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
               fm.elidedText(QString::fromStdString(tr.name), Qt::ElideMiddle, x0 - 14));
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
  if (!foot.empty()) {
    const int n = int(foot.size());
    const QRect box(0, r.height() - fm.height() * n - 10, x0, fm.height() * n + 10);
    p.fillRect(box, kGutter.darker(115));
    for (int k = 0; k < n; ++k) {
      p.setPen(foot[size_t(k)].second);
      p.drawText(box.adjusted(8, 4 + k * fm.height(), -4, 0), Qt::AlignTop | Qt::AlignLeft,
                 fm.elidedText(foot[size_t(k)].first, Qt::ElideRight, x0 - 12));
    }
  }
}

TimelineWidget::Hit TimelineWidget::hitTest(const QPoint& pos) const {
  Hit h;
  if (!data_ || pos.x() < kGutterWidth || pos.y() < rowsTop()) return h;
  const int row = (pos.y() - rowsTop() + scroll_y_) / kRowHeight;
  if (row < 0 || size_t(row) >= rows_.size()) return h;
  const RowInfo& ri = rows_[size_t(row)];
  if (ri.lane >= data_->tracks[ri.track].lanes.size()) return h;
  const Lane& L = data_->tracks[ri.track].lanes[ri.lane];
  const double t = mapper_.toNs(pos.x() - kGutterWidth);
  const double slop = 2 * mapper_.nsPerPx();  // a 1-px event is still hoverable
  size_t i = L.firstEndingAtOrAfter(int64_t(t - slop));
  // Prefer the shortest event under the cursor (nested GPU overlaps are rare but possible).
  size_t best = SIZE_MAX;
  for (int guard = 0; i < L.size() && L.start[i] <= t + slop && guard < 64; ++i, ++guard) {
    if (L.end[i] + slop >= t && (best == SIZE_MAX || L.end[i] - L.start[i] < L.end[best] - L.start[best])) best = i;
  }
  if (best == SIZE_MAX) return h;
  h.ok = true;
  h.track = ri.track;
  h.lane = ri.lane;
  h.index = uint32_t(best);
  return h;
}

QString TimelineWidget::eventLabel(uint32_t track, uint32_t lane, uint32_t index) const {
  if (!data_ || track >= data_->tracks.size() || lane >= data_->tracks[track].lanes.size()) return {};
  const Lane& L = data_->tracks[track].lanes[lane];
  if (index >= L.size() || L.name[index] >= data_->names.size()) return {};
  QString name = QString::fromStdString(data_->names[L.name[index]]);
  if (L.cat[index] == EventCat::Step && L.args[index] != 0 && L.args[index] < data_->args.size()) {
    const std::string& a = data_->args[L.args[index]];
    if (a.rfind("arg: ", 0) == 0) name += QStringLiteral(" %1").arg(QString::fromStdString(a.substr(5)));
  }
  return name;
}

QString TimelineWidget::describe(const Hit& h) const {
  if (!h.ok) return {};
  const Track& tr = data_->tracks[h.track];
  const Lane& L = tr.lanes[h.lane];
  const size_t i = h.index;
  QString s = QStringLiteral("<b>%1</b><br>%2 · %3<br>start %4 · duration <b>%5</b>")
                  .arg(eventLabel(h.track, h.lane, h.index).toHtmlEscaped(), eventCatName(L.cat[i]),
                       QString::fromStdString(tr.name).toHtmlEscaped(), fmtDuration(double(L.start[i] - data_->t_min)),
                       fmtDuration(double(L.end[i] - L.start[i])));
  if (L.corr[i]) s += QStringLiteral("<br>correlation %1").arg(L.corr[i]);
  if (L.args[i] && L.args[i] < data_->args.size())
    s += "<br><span style='color:#8a93a3'>" + QString::fromStdString(data_->args[L.args[i]]).toHtmlEscaped().replace("\n", "<br>") + "</span>";
  return s;
}

const std::pair<uint32_t, uint32_t>* TimelineWidget::findCorr(int64_t corr, const Hit& not_this) const {
  if (!corr_built_) {
    corr_built_ = true;
    for (uint32_t r = 0; r < rows_.size(); ++r) {
      const auto& tr = data_->tracks[rows_[r].track];
      if (rows_[r].lane >= tr.lanes.size()) continue;
      const Lane& L = tr.lanes[rows_[r].lane];
      for (uint32_t i = 0; i < L.size(); ++i)
        if (L.corr[i]) corr_index_.emplace(L.corr[i], std::make_pair(r, i));
    }
  }
  auto [a, b] = corr_index_.equal_range(corr);
  for (auto it = a; it != b; ++it) {
    const RowInfo& ri = rows_[it->second.first];
    if (ri.track == not_this.track && ri.lane == not_this.lane && it->second.second == not_this.index) continue;
    if (data_->tracks[ri.track].kind == data_->tracks[not_this.track].kind) continue;
    return &it->second;
  }
  return nullptr;
}

bool TimelineWidget::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* he = static_cast<QHelpEvent*>(e);
    const Hit h = hitTest(he->pos());
    if (h.ok) QToolTip::showText(he->globalPos(), describe(h), this);
    else QToolTip::hideText();
    return true;
  }
  return QWidget::event(e);
}

void TimelineWidget::wheelEvent(QWheelEvent* e) {
  user_moved_ = true;
  const double steps = e->angleDelta().y() / 120.0;
  const double px = e->position().x() - kGutterWidth;
  if (e->modifiers() & Qt::ControlModifier) {
    mapper_.zoomAround(std::max(0.0, px), std::pow(1.25, steps));
    applyView();
  } else if (e->modifiers() & Qt::ShiftModifier || e->angleDelta().x() != 0) {
    const double dx = e->angleDelta().x() != 0 ? e->angleDelta().x() / 120.0 : steps;
    mapper_.panPx(dx * 60);
    applyView();
  } else {
    scroll_y_ -= int(steps * kRowHeight * 3);
    requestBuild();
    update();
  }
  e->accept();
}

void TimelineWidget::mousePressEvent(QMouseEvent* e) {
  user_moved_ = true;
  press_pos_ = last_pos_ = e->pos();
  if (e->button() == Qt::RightButton || (e->button() == Qt::LeftButton && (e->modifiers() & Qt::ShiftModifier))) {
    selecting_ = true;
    sel_t0_ = sel_t1_ = int64_t(mapper_.toNs(e->pos().x() - kGutterWidth));
  } else if (e->button() == Qt::LeftButton) {
    dragging_ = true;
    setCursor(Qt::ClosedHandCursor);
  }
}

void TimelineWidget::mouseMoveEvent(QMouseEvent* e) {
  if (dragging_) {
    mapper_.panPx(e->pos().x() - last_pos_.x());
    scroll_y_ -= e->pos().y() - last_pos_.y();
    last_pos_ = e->pos();
    applyView();
    return;
  }
  if (selecting_) {
    const int64_t a = int64_t(mapper_.toNs(press_pos_.x() - kGutterWidth));
    const int64_t b = int64_t(mapper_.toNs(e->pos().x() - kGutterWidth));
    sel_t0_ = std::min(a, b);
    sel_t1_ = std::max(a, b);
    update();
    return;
  }
  const Hit h = hitTest(e->pos());
  if (h.ok != hover_.ok || h.track != hover_.track || h.lane != hover_.lane || h.index != hover_.index) {
    hover_ = h;
    update();
  }
}

void TimelineWidget::mouseReleaseEvent(QMouseEvent* e) {
  if (selecting_) {
    selecting_ = false;
    if (sel_t1_ > sel_t0_) emit selectionChanged(sel_t0_, sel_t1_);
  }
  if (dragging_) {
    dragging_ = false;
    unsetCursor();
    if ((e->pos() - press_pos_).manhattanLength() < 3) {  // a click, not a drag: select the event
      selected_ = hitTest(e->pos());
      if (selected_.ok) {
        QString d = describe(selected_);
        d.replace("<br>", " · ");
        d.remove(QRegularExpression("<[^>]*>"));
        emit eventSelected(d);
      }
      update();
    }
  }
}

void TimelineWidget::mouseDoubleClickEvent(QMouseEvent* e) {
  user_moved_ = true;
  const Hit h = hitTest(e->pos());
  if (!h.ok) return;
  const Lane& L = data_->tracks[h.track].lanes[h.lane];
  mapper_.fit(L.start[h.index], L.end[h.index], 0.1);
  applyView();
}

void TimelineWidget::keyPressEvent(QKeyEvent* e) {
  user_moved_ = true;
  const double cx = std::clamp(double(mapFromGlobal(QCursor::pos()).x() - kGutterWidth), 0.0, mapper_.width());
  switch (e->key()) {
    case Qt::Key_W: mapper_.zoomAround(cx, 1.5); break;
    case Qt::Key_S: mapper_.zoomAround(cx, 1 / 1.5); break;
    case Qt::Key_A: mapper_.panPx(mapper_.width() * 0.15); break;
    case Qt::Key_D: mapper_.panPx(-mapper_.width() * 0.15); break;
    case Qt::Key_F: fit(); return;
    case Qt::Key_Z: zoomToSelection(); return;
    case Qt::Key_Escape:
      sel_t0_ = sel_t1_ = 0;
      selected_ = Hit{};
      update();
      return;
    default: QWidget::keyPressEvent(e); return;
  }
  applyView();
}

}  // namespace tb::ui
