#include "ui/throughput_chart.h"

#include <QAreaSeries>
#include <QChart>
#include <QChartView>
#include <QGraphicsSimpleTextItem>
#include <QJsonArray>
#include <QLineSeries>
#include <QScatterSeries>
#include <QValueAxis>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <limits>

#include "axis_steps.h"
#include "ui/segments.h"

namespace tb::ui {

ThroughputChart::ThroughputChart(QWidget* parent) : QWidget(parent) {
  chart_ = new QChart;
  chart_->legend()->setVisible(false);
  chart_->setMargins(QMargins(4, 4, 4, 4));
  chart_->setBackgroundRoundness(0);
  const bool dark = palette().color(QPalette::Window).lightness() < 128;
  chart_->setTheme(dark ? QChart::ChartThemeDark : QChart::ChartThemeLight);
  line_ = new QLineSeries;
  line_->setName(tr("samples/s"));
  QPen p(QColor(0x4f, 0xa3, 0xff));
  p.setWidthF(1.5);
  line_->setPen(p);
  warm_ = new QScatterSeries;
  warm_->setName(tr("warm-up"));
  warm_->setMarkerSize(6);
  warm_->setColor(QColor(150, 150, 150));
  warm_->setBorderColor(Qt::transparent);
  traced_ = new QScatterSeries;
  traced_->setName(tr("traced"));
  traced_->setMarkerSize(7);
  traced_->setColor(QColor(0x4d, 0xb6, 0xac));  // the timeline's and the analysis bar's "profiler (TuneBench)"
  traced_->setBorderColor(Qt::transparent);
  chart_->addSeries(line_);
  chart_->addSeries(warm_);
  chart_->addSeries(traced_);
  ax_ = new QValueAxis;
  ax_->setTitleText(tr("step (a point per %1-step window)").arg(kWindowSteps));
  ax_->setLabelFormat("%d");
  ay_ = new QValueAxis;
  ay_->setTitleText(tr("samples/s"));
  ay_->setLabelFormat("%.0f");
  chart_->addAxis(ax_, Qt::AlignBottom);
  chart_->addAxis(ay_, Qt::AlignLeft);
  for (auto* s : {static_cast<QAbstractSeries*>(line_), static_cast<QAbstractSeries*>(warm_),
                  static_cast<QAbstractSeries*>(traced_)}) {
    s->attachAxis(ax_);
    s->attachAxis(ay_);
  }
  ax_->setRange(0, 10);
  ay_->setRange(0, 1);
  view_ = new QChartView(chart_, this);
  view_->setRenderHint(QPainter::Antialiasing);
  view_->setMinimumHeight(160);
  // Said once, where the numbers are drawn; every other place (Compare, the status bar, the exports) uses it.
  view_->setToolTip(tr("Throughput = samples over the wall time of a window of steps (data loading included).\n"
                       "Each point: a window of %1 measured steps of one configuration. The green line: the\n"
                       "configuration's measured steps together; its ratio is the Compare row's. A violet band:\n"
                       "an Auto-tune (its trials ran apart from this run; its figure is its own final alternation).\n"
                       "Grey: warm-up steps after a change, one point each, not measured. Teal: a window of steps\n"
                       "inside a trace chunk, stretched by the recording; the line and Compare leave them out\n"
                       "when the configuration has 10 untraced steps.").arg(kWindowSteps));
  auto* lay = new QVBoxLayout(this);
  lay->setContentsMargins(0, 0, 0, 0);
  lay->addWidget(view_);
  connect(chart_, &QChart::plotAreaChanged, this, [this] { placeLabels(); });
}

void ThroughputChart::setRecord(const RunRecord* rec) {
  rec_ = rec;
  refresh();
}

bool ThroughputChart::showsNoData() const { return no_data_ && no_data_->isVisible(); }

int ThroughputChart::drawnPointCount() const { return int(line_->count() + warm_->count() + traced_->count()); }

namespace {

// At most `max` points: consecutive points in buckets, each drawn as its lowest and highest (a spike stays
// visible). Buckets start at the first point, so the finished ones look the same as the run grows.
QList<QPointF> decimate(const QList<QPointF>& pts, int max) {
  if (pts.size() <= max) return pts;
  const qsizetype per = (2 * pts.size() + max - 1) / max;
  QList<QPointF> out;
  out.reserve(max + 2);
  for (qsizetype b = 0; b < pts.size(); b += per) {
    const qsizetype e = std::min(pts.size(), b + per);
    qsizetype lo = b, hi = b;
    for (qsizetype i = b + 1; i < e; ++i) {
      if (pts[i].y() < pts[lo].y()) lo = i;
      if (pts[i].y() > pts[hi].y()) hi = i;
    }
    out << pts[std::min(lo, hi)];
    if (lo != hi) out << pts[std::max(lo, hi)];
  }
  return out;
}

}  // namespace

QString ThroughputChart::rateTitle() const { return ay_->titleText(); }

void ThroughputChart::refresh() {
  const auto segs = rec_ ? segmentRun(*rec_) : std::vector<Segment>{};
  refresh(segs, compareSegments(segs));
}

void ThroughputChart::updatePoints() {
  bool changed = false;
  const int gen = rec_ ? rec_->generation : -1;
  if (gen != generation_ || !rec_ || rec_->steps.size() < consumed_) {  // another run, or none
    generation_ = gen;
    consumed_ = 0;
    pts_.clear();
    warm_pts_.clear();
    traced_pts_.clear();
    open_ = open_traced_ = {};
    ymax_data_ = 1;
    changed = true;
    ay_->setTitleText(tr("samples/s"));
  }
  // A point per window of kWindowSteps measured steps of one configuration, at its last step: samples over the
  // window's wall time, the throughput the segments, the Compare rows and the status bar use. Warm-up steps
  // are drawn one by one, greyed: they are not measured.
  for (; rec_ && consumed_ < rec_->steps.size(); ++consumed_) {
    const StepSample& s = rec_->steps[consumed_];
    if (s.wall_ns <= 0) continue;
    // An LBFGS script's rate counts its batch once per closure evaluation (StepSample::evaluatedSamples): said
    // where the figure is read, since it is not the loader's samples/s.
    if (s.evaluations > 0 && ay_->titleText() == tr("samples/s")) ay_->setTitleText(tr("evaluated samples/s"));
    if (s.warmup) {
      if (s.skipped) continue;
      const QPointF p(double(s.i), s.samplesPerSec());
      warm_pts_ << p;
      ymax_data_ = std::max(ymax_data_, p.y());
      changed = true;
      continue;
    }
    // Traced and untraced steps make windows of their own: a window is one kind of step.
    OpenWindow& w = s.traced ? open_traced_ : open_;
    if (w.steps > 0 && w.rev != s.config_rev) w = {};  // a partial window at a change is not drawn
    w.rev = s.config_rev;
    ++w.steps;
    w.samples += s.evaluatedSamples();
    w.wall_ns += s.wall_ns;
    if (w.steps < kWindowSteps) continue;
    const QPointF p(double(s.i), w.samples * 1e9 / double(w.wall_ns));
    (s.traced ? traced_pts_ : pts_) << p;
    ymax_data_ = std::max(ymax_data_, p.y());
    w = {};
    changed = true;
  }
  if (!changed) return;
  line_->replace(decimate(pts_, kMaxPoints));
  traced_->replace(decimate(traced_pts_, kMaxPoints / 4));
  warm_->replace(decimate(warm_pts_, kMaxPoints / 4));
}

void ThroughputChart::refresh(const std::vector<Segment>& segs, const std::vector<Comparison>& cmp) {
  updatePoints();
  double xmin = 0, xmax = 10;
  if (rec_ && !rec_->steps.empty()) {
    xmin = double(rec_->steps.front().i);
    xmax = roundUpAxis(std::max(xmin + 10, double(rec_->steps.back().i)));
  }
  const double ymax = roundUpAxis(ymax_data_ * 1.5);  // head room for the label rows above the data
  const bool axes_moved = xmin != ax_->min() || xmax != x_max_ || ymax != y_max_;
  if (axes_moved) {
    x_max_ = xmax;
    y_max_ = ymax;
    ax_->setRange(xmin, xmax);
    ay_->setRange(0, ymax);
  }
  // No steps: no made-up axis ("1 1 1 0 0" on an empty chart), a sentence instead.
  const bool empty = pts_.isEmpty() && warm_pts_.isEmpty();
  if (ax_->isVisible() == empty) {
    ax_->setVisible(!empty);
    ay_->setVisible(!empty);
  }
  if (!no_data_) {
    no_data_ = new QGraphicsSimpleTextItem(tr("No data yet: start a run (Run ▸ Start)"), chart_);
    no_data_->setBrush(palette().color(QPalette::PlaceholderText));
    // Centred again when the plot area moves (a resized window): else it stays where the first layout put it,
    // cut off at the corner.
    connect(chart_, &QChart::plotAreaChanged, this,
            [this](const QRectF& area) { no_data_->setPos(area.center() - no_data_->boundingRect().center()); });
  }
  if (no_data_->isVisible() != empty) no_data_->setVisible(empty);
  if (empty) {
    const QRectF area = chart_->plotArea();
    no_data_->setPos(area.center() - no_data_->boundingRect().center());
  }

  // Markers, shading and medians: rebuilt when a segment starts (or the y axis moved, which they span);
  // otherwise only the medians move (the current segment's grows with each step).
  QString structure = QString::number(y_max_);
  for (const Segment& seg : segs)
    structure += QStringLiteral("|%1,%2,%3,%4").arg(seg.first_step).arg(seg.warmup_steps).arg(seg.sps.empty()).arg(seg.label());
  if (rec_)
    for (const TuneEvent& t : rec_->tunes) structure += QStringLiteral("|tune %1,%2").arg(t.before_step).arg(tuneText(t));
  if (structure != structure_) {
    structure_ = structure;
    rebuildSegments(segs, cmp);
    placeLabels();
    return;
  }
  bool moved = axes_moved;
  for (size_t k = 0; k < segs.size() && k < medians_.size(); ++k) {
    if (!medians_[k]) continue;
    const Segment& seg = segs[k];
    const double med = seg.throughput();
    const QPointF a(double(seg.first_step + seg.warmup_steps), med), b(double(seg.last_step), med);
    if (medians_[k]->at(0) != a || medians_[k]->at(1) != b) medians_[k]->replace({a, b});
    const QString text = medianText(segs, cmp, k);
    if (median_labels_[k]->text() != text) {
      median_labels_[k]->setText(text);
      moved = true;  // a longer text may need to move left of the plot's edge
    }
  }
  if (moved) placeLabels();
}

QString ThroughputChart::medianText(const std::vector<Segment>& segs, const std::vector<Comparison>& cmp, size_t k) const {
  const double med = segs[k].throughput();
  QString text = QStringLiteral("%1/s").arg(med, 0, 'f', med < 100 ? 1 : 0);
  // A toggle's ratio sits on its segment; an Auto-tune's is on the tune's own label (its final alternation).
  if (k > 0 && k - 1 < cmp.size() && cmp[k - 1].stats.valid && !cmp[k - 1].from_tune) {
    const auto& st = cmp[k - 1].stats;
    text += QStringLiteral("  ×%1 [%2–%3]").arg(st.ratio, 0, 'f', 2).arg(st.lo, 0, 'f', 2).arg(st.hi, 0, 'f', 2);
  }
  return text;
}

QString ThroughputChart::tuneText(const TuneEvent& t) {
  if (t.failed) return tr("auto-tune failed");
  if (t.done.isEmpty()) return tr("auto-tune running…");
  if (t.done.value("plan_only").toBool())
    return tr("auto-tune priced in %1 s: one pass ~%2 s")
        .arg(t.done.value("elapsed_s").toDouble(), 0, 'f', 0)
        .arg(t.done.value("plan_s").toDouble(), 0, 'f', 0);
  const QString used = tr("auto-tune %1 s").arg(t.done.value("elapsed_s").toDouble(), 0, 'f', 0);
  if (!t.kept()) return tr("%1: nothing kept").arg(used);
  QStringList kept;
  for (const auto& k : t.done.value("kept").toArray()) kept << k.toString();
  const RatioCI st = tunerStats(t.done);
  return tr("%1: %2 ×%3 [%4–%5]")
      .arg(used, kept.join(", "))
      .arg(st.ratio, 0, 'f', 2)
      .arg(st.lo, 0, 'f', 2)
      .arg(st.hi, 0, 'f', 2);
}

void ThroughputChart::rebuildSegments(const std::vector<Segment>& segs, const std::vector<Comparison>& cmp) {
  ++rebuilds_;
  for (auto* s : extra_) {
    chart_->removeSeries(s);
    delete s;
  }
  extra_.clear();
  for (auto& l : labels_) delete l.item;
  labels_.clear();
  medians_.assign(segs.size(), nullptr);
  median_labels_.assign(segs.size(), nullptr);
  const double ymax = y_max_;
  const bool dark = palette().color(QPalette::Window).lightness() < 128;
  auto addSeries = [&](QAbstractSeries* s) {
    chart_->addSeries(s);
    s->attachAxis(ax_);
    s->attachAxis(ay_);
    extra_.push_back(s);
  };
  for (size_t k = 0; k < segs.size(); ++k) {
    const Segment& seg = segs[k];
    // Warm-up shading: a light band over the segment's first steps.
    if (seg.warmup_steps > 0) {
      auto* upper = new QLineSeries;
      const double x0 = double(seg.first_step) - 0.5, x1 = double(seg.first_step + seg.warmup_steps) - 0.5;
      upper->append(x0, ymax);
      upper->append(x1, ymax);
      auto* area = new QAreaSeries(upper);
      area->setColor(dark ? QColor(255, 255, 255, 22) : QColor(0, 0, 0, 18));
      area->setBorderColor(Qt::transparent);
      addSeries(area);  // removed/deleted with the others (owns `upper`)
    }
    // Config-change marker.
    if (k > 0) {
      auto* m = new QLineSeries;
      QPen pen(QColor(0xff, 0xb3, 0x47));
      pen.setStyle(Qt::DashLine);
      pen.setWidthF(1.5);
      m->setPen(pen);
      m->append(double(seg.first_step) - 0.5, 0);
      m->append(double(seg.first_step) - 0.5, ymax);
      addSeries(m);
      if (seg.tune.isEmpty()) {  // an Auto-tune's result is named by the tune's own label
        auto* t = new QGraphicsSimpleTextItem(seg.label(), chart_);
        t->setBrush(QColor(0xff, 0xb3, 0x47));
        labels_.push_back({t, double(seg.first_step), 0});
      }
    }
    // Segment throughput: samples over wall time of its measured steps.
    if (!seg.sps.empty()) {
      const double med = seg.throughput();
      auto* m = new QLineSeries;
      QPen pen(QColor(0x76, 0xd2, 0x75));
      pen.setWidthF(2.5);
      m->setPen(pen);
      m->append(double(seg.first_step + seg.warmup_steps), med);
      m->append(double(seg.last_step), med);
      addSeries(m);
      medians_[k] = m;
      auto* t = new QGraphicsSimpleTextItem(medianText(segs, cmp, k), chart_);
      t->setBrush(QColor(0x76, 0xd2, 0x75).darker(dark ? 100 : 130));
      QFont f = t->font();
      f.setBold(true);
      t->setFont(f);
      median_labels_[k] = t;
      labels_.push_back({t, double(seg.first_step + seg.warmup_steps), 1});
    }
  }
  // Each Auto-tune: a violet band at the step boundary where the run waited for it (its trials ran apart), its
  // result as the tuner measured it.
  const QColor violet(0xb0, 0x7c, 0xf0);
  for (const TuneEvent& tune : rec_ ? rec_->tunes : std::vector<TuneEvent>{}) {
    const double x = double(tune.before_step) + 0.5;
    auto* band = new QLineSeries;
    QPen pen(QColor(violet.red(), violet.green(), violet.blue(), 110));
    pen.setWidthF(7);
    band->setPen(pen);
    band->append(x, 0);
    band->append(x, ymax);
    addSeries(band);
    auto* t = new QGraphicsSimpleTextItem(tuneText(tune), chart_);
    t->setBrush(violet.darker(dark ? 100 : 125));
    labels_.push_back({t, x, 0});
  }
}

void ThroughputChart::placeLabels() {
  // Two label lines for the markers (row 0) and two for the segments' throughputs (row 1). The newest label
  // of a row is placed first, each in the first line where it clears the labels placed to its right; one that
  // fits in neither is hidden (the older one is the lesser), so no two labels print over each other.
  const QRectF area = chart_->plotArea();
  std::vector<size_t> order(labels_.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return labels_[a].x > labels_[b].x; });
  constexpr int kLinesPerRow = 2;
  double left_edge[2][kLinesPerRow];
  for (auto& row : left_edge)
    for (double& e : row) e = std::numeric_limits<double>::infinity();
  for (size_t k : order) {
    Label& l = labels_[k];
    const QRectF r = l.item->boundingRect();
    QPointF p = chart_->mapToPosition(QPointF(l.x, 0), line_);
    p.rx() = std::clamp(p.x() + 3, area.left(), std::max(area.left(), area.right() - r.width()));
    int line = -1;
    for (int j = 0; j < kLinesPerRow && line < 0; ++j)
      if (p.x() + r.width() + 6 <= left_edge[l.row][j]) line = j;
    l.item->setVisible(line >= 0);
    if (line < 0) continue;
    left_edge[l.row][line] = p.x();
    p.ry() = area.top() + 1 + (l.row * kLinesPerRow + line) * (r.height() + 1);
    l.item->setPos(p);
  }
}

bool ThroughputChart::labelsOverlap() const {
  for (size_t a = 0; a < labels_.size(); ++a)
    for (size_t b = a + 1; b < labels_.size(); ++b) {
      const auto* x = labels_[a].item;
      const auto* y = labels_[b].item;
      if (x->isVisible() && y->isVisible() &&
          x->mapRectToScene(x->boundingRect()).intersects(y->mapRectToScene(y->boundingRect())))
        return true;
    }
  return false;
}

QStringList ThroughputChart::labelTexts() const {
  QStringList out;
  for (const auto& l : labels_)
    if (l.item->isVisible()) out << l.item->text();
  return out;
}

}  // namespace tb::ui
