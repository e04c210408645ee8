#include "ui/throughput_chart.h"

#include <QAreaSeries>
#include <QChart>
#include <QChartView>
#include <QGraphicsSimpleTextItem>
#include <QLineSeries>
#include <QScatterSeries>
#include <QValueAxis>
#include <QVBoxLayout>
#include <cmath>

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
  chart_->addSeries(line_);
  chart_->addSeries(warm_);
  ax_ = new QValueAxis;
  ax_->setTitleText(tr("step"));
  ax_->setLabelFormat("%d");
  ay_ = new QValueAxis;
  ay_->setTitleText(tr("samples/s"));
  ay_->setLabelFormat("%.0f");
  chart_->addAxis(ax_, Qt::AlignBottom);
  chart_->addAxis(ay_, Qt::AlignLeft);
  for (auto* s : {static_cast<QAbstractSeries*>(line_), static_cast<QAbstractSeries*>(warm_)}) {
    s->attachAxis(ax_);
    s->attachAxis(ay_);
  }
  ax_->setRange(0, 10);
  ay_->setRange(0, 1);
  view_ = new QChartView(chart_, this);
  view_->setRenderHint(QPainter::Antialiasing);
  view_->setMinimumHeight(160);
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

void ThroughputChart::refresh() {
  for (auto* s : extra_) {
    chart_->removeSeries(s);
    delete s;
  }
  extra_.clear();
  for (auto& l : labels_) delete l.item;
  labels_.clear();
  QList<QPointF> pts, warm;
  double ymax = 1, xmin = 0, xmax = 10;
  if (rec_) {
    for (const StepSample& s : rec_->steps) {
      if (s.skipped || s.wall_ns <= 0) continue;
      const QPointF p(double(s.i), s.samplesPerSec());
      (s.warmup ? warm : pts) << p;
      ymax = std::max(ymax, p.y());
    }
    if (!rec_->steps.empty()) {
      xmin = double(rec_->steps.front().i);
      xmax = std::max(xmin + 10, double(rec_->steps.back().i));
    }
  }
  line_->replace(pts);
  warm_->replace(warm);
  ymax *= 1.3;  // head room for the two label rows above the data
  ax_->setRange(xmin, xmax);
  ay_->setRange(0, ymax);
  // No steps: no made-up axis ("1 1 1 0 0" on an empty chart), a sentence instead.
  const bool empty = pts.isEmpty() && warm.isEmpty();
  ax_->setVisible(!empty);
  ay_->setVisible(!empty);
  if (!no_data_) {
    no_data_ = new QGraphicsSimpleTextItem(tr("No data yet: start a run (Run ▸ Start)"), chart_);
    no_data_->setBrush(palette().color(QPalette::PlaceholderText));
    // Centred again when the plot area moves (a resized window): else it stays where the first layout put it,
    // cut off at the corner.
    connect(chart_, &QChart::plotAreaChanged, this,
            [this](const QRectF& area) { no_data_->setPos(area.center() - no_data_->boundingRect().center()); });
  }
  no_data_->setVisible(empty);
  if (empty) {
    const QRectF area = chart_->plotArea();
    no_data_->setPos(area.center() - no_data_->boundingRect().center());
  }
  if (!rec_) return;

  const auto segs = segmentRun(*rec_);
  const auto cmp = compareSegments(segs);
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
      chart_->addSeries(area);
      area->attachAxis(ax_);
      area->attachAxis(ay_);
      extra_.push_back(area);  // removed/deleted with the others (owns `upper`)
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
      auto* t = new QGraphicsSimpleTextItem(seg.label(), chart_);
      t->setBrush(QColor(0xff, 0xb3, 0x47));
      labels_.push_back({t, double(seg.first_step), 0});
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
      QString text = QStringLiteral("%1/s").arg(med, 0, 'f', med < 100 ? 1 : 0);
      if (k > 0 && k - 1 < cmp.size() && cmp[k - 1].stats.valid) {
        const auto& st = cmp[k - 1].stats;
        text += QStringLiteral("  ×%1 [%2–%3]").arg(st.ratio, 0, 'f', 2).arg(st.lo, 0, 'f', 2).arg(st.hi, 0, 'f', 2);
      }
      auto* t = new QGraphicsSimpleTextItem(text, chart_);
      t->setBrush(QColor(0x76, 0xd2, 0x75).darker(dark ? 100 : 130));
      QFont f = t->font();
      f.setBold(true);
      t->setFont(f);
      labels_.push_back({t, double(seg.first_step + seg.warmup_steps), 1});
    }
  }
  placeLabels();
}

void ThroughputChart::placeLabels() {
  const QRectF area = chart_->plotArea();
  for (auto& l : labels_) {
    QPointF p = chart_->mapToPosition(QPointF(l.x, 0), line_);
    const double h = l.item->boundingRect().height();
    p.rx() = std::clamp(p.x() + 3, area.left(), std::max(area.left(), area.right() - l.item->boundingRect().width()));
    p.ry() = area.top() + 1 + l.row * (h + 1);
    l.item->setPos(p);
  }
}

}  // namespace tb::ui
