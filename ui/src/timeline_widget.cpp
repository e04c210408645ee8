#include "ui/timeline_widget.h"
#include "timeline_format.h"

#include "profiler/range_names.h"

#include <QElapsedTimer>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>
#include <QtConcurrent/QtConcurrent>
#include <cmath>

namespace tb::ui {


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

int TimelineWidget::contentHeight() const {
  return int(rows_.size()) * kRowHeight + memoryStripHeight() + queueStripHeight();
}

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
  const bool step = L.cat[index] == EventCat::Step || L.cat[index] == EventCat::StepDetailed;
  if (step && L.args[index] != 0 && L.args[index] < data_->args.size()) {
    // The step's index is its "arg: N" line (a lane step's detail, when it has one, comes first).
    const std::string& a = data_->args[L.args[index]];
    const size_t at = a.rfind("arg: ", 0) == 0 ? 0 : a.find("\narg: ");
    if (at != std::string::npos) {
      const size_t from = at == 0 ? 5 : at + 6;
      name += QStringLiteral(" %1").arg(QString::fromStdString(a.substr(from, a.find('\n', from) - from)));
    }
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
