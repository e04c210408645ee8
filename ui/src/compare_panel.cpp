#include "ui/compare_panel.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLegendMarker>
#include <QLineSeries>
#include <QPushButton>
#include <QToolButton>
#include <QSplitter>
#include <QTableWidget>
#include <QValueAxis>
#include <QVBoxLayout>
#include <cmath>

#include "axis_steps.h"

namespace tb::ui {

ComparePanel::ComparePanel(QWidget* parent) : QWidget(parent) {
  auto* lay = new QVBoxLayout(this);
  lay->setContentsMargins(2, 2, 2, 2);
  auto* split = new QSplitter(Qt::Horizontal, this);
  table_ = new QTableWidget(0, 6, split);
  table_->setHorizontalHeaderLabels({tr("Change"), tr("Before /s"), tr("After /s"), tr("Ratio [95% CI]"), tr("Verdict"), tr("")});
  table_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  // Row numbers: the bar chart names its bars "#1", "#2" (a change's text does not fit under a bar).
  table_->verticalHeader()->setVisible(true);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  chart_ = new QChart;
  chart_->legend()->setAlignment(Qt::AlignBottom);
  chart_->setMargins(QMargins(2, 2, 2, 2));
  chart_->setTheme(palette().color(QPalette::Window).lightness() < 128 ? QChart::ChartThemeDark : QChart::ChartThemeLight);
  chart_->setTitle(tr("samples/s before → after"));
  view_ = new QChartView(chart_, split);
  view_->setRenderHint(QPainter::Antialiasing);
  view_->setMinimumWidth(200);
  view_->setMaximumWidth(300);
  table_->setMinimumWidth(380);
  split->addWidget(table_);
  split->addWidget(view_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  lay->addWidget(split);
}

void ComparePanel::setRecord(const RunRecord* rec) {
  rec_ = rec;
  refresh();
}

namespace {

// What one row shows, so that a refresh can tell what differs from what is on screen.
struct RowView {
  QString text[5];
  QString change_tip, verdict_tip;
  QColor verdict_color;
};

QString num(double v, int prec = 1) { return std::isfinite(v) ? QString::number(v, 'f', prec) : QStringLiteral("–"); }

RowView rowView(const Comparison& c, const QString& decision, const QPalette& pal) {
  RowView v;
  const QString verdict = QString::fromStdString(c.stats.verdict());
  v.text[0] = c.change;
  v.text[1] = num(c.stats.before);
  v.text[2] = num(c.stats.after);
  v.text[3] = c.stats.valid ? QStringLiteral("×%1 [%2, %3]").arg(num(c.stats.ratio, 2), num(c.stats.lo, 2), num(c.stats.hi, 2))
                            : QStringLiteral("…");
  v.text[4] = decision.isEmpty() ? verdict : verdict + " · " + decision;
  v.change_tip = QObject::tr("data wait: %1% → %2% of the step (median)").arg(100 * c.wait_before, 0, 'f', 1).arg(100 * c.wait_after, 0, 'f', 1);
  // How far to trust it: each side's noise verdict (a live toggle is sequential, not alternated), and the
  // window's own CPU share when it was high enough to slow the run.
  v.verdict_tip = c.trustText();
  v.verdict_color = verdict.startsWith("faster")   ? QColor(0x2e, 0xa0, 0x43)
                    : verdict.startsWith("slower") ? QColor(0xd3, 0x2f, 0x2f)
                                                   : pal.color(QPalette::Text);
  return v;
}

bool hasInterval(const Comparison& c) {
  return c.stats.valid && std::isfinite(c.stats.before) && std::isfinite(c.stats.lo) && std::isfinite(c.stats.hi);
}

double finiteOr0(double v) { return std::isfinite(v) ? v : 0.0; }

// The table's row number, not the change cut to fit ("worke…"): the table beside it has the full text.
QString categoryLabel(size_t i, const Comparison& c) {
  QString label = QStringLiteral("#%1").arg(i + 1);
  if (c.stats.valid) label += QStringLiteral("\n×%1").arg(c.stats.ratio, 0, 'f', 2);
  return label;
}

// Error bars on "after": the ratio's 95% interval times "before" (what the verdict rests on). Whiskers are
// line series on a hidden x axis laid over the categories: bar sets of width 0.5 put the second set's centre
// at i + 0.125.
QList<QPointF> whiskerPoints(size_t i, const Comparison& c) {
  const double x = double(i) + 0.125, lo = c.stats.before * c.stats.lo, hi = c.stats.before * c.stats.hi;
  return {{x, lo}, {x, hi}, {x, hi}, {x - 0.05, hi}, {x + 0.05, hi}, {x, hi}, {x, lo}, {x - 0.05, lo}, {x + 0.05, lo}};
}

double valueAxisEnd(const std::vector<Comparison>& cmp) {
  double ymax = 1;
  for (const auto& c : cmp) {
    ymax = std::max({ymax, finiteOr0(c.stats.before), finiteOr0(c.stats.after)});
    if (hasInterval(c)) ymax = std::max(ymax, c.stats.before * c.stats.hi);
  }
  return roundUpAxis(ymax * 1.1);
}

}  // namespace

void ComparePanel::refresh() { refresh(rec_ ? compareSegments(segmentRun(*rec_)) : std::vector<Comparison>{}); }

void ComparePanel::refresh(std::vector<Comparison> cmp) {
  cmp_ = std::move(cmp);
  QStringList shown;
  for (const auto& c : cmp_) shown << c.change + '\x1f' + decisions_.value(c.change) + '\x1f' + (hasInterval(c) ? "1" : "0");
  if (rebuilds_ == 0 || shown != shown_) {
    shown_ = shown;
    rebuild();
  } else {
    updateInPlace();
  }
}

void ComparePanel::updateInPlace() {
  const QStringList cats = categories_ ? categories_->categories() : QStringList();
  for (int r = 0; r < int(cmp_.size()); ++r) {
    const Comparison& c = cmp_[size_t(r)];
    const RowView v = rowView(c, decisions_.value(c.change), palette());
    for (int col = 0; col < 5; ++col)
      if (auto* it = table_->item(r, col); it && it->text() != v.text[col]) it->setText(v.text[col]);
    if (auto* it = table_->item(r, 0); it && it->toolTip() != v.change_tip) it->setToolTip(v.change_tip);
    if (auto* it = table_->item(r, 4); it) {
      if (it->toolTip() != v.verdict_tip) it->setToolTip(v.verdict_tip);
      if (it->foreground().color() != v.verdict_color) it->setForeground(v.verdict_color);
    }
    if (before_ && before_->at(r) != finiteOr0(c.stats.before)) before_->replace(r, finiteOr0(c.stats.before));
    if (after_ && after_->at(r) != finiteOr0(c.stats.after)) after_->replace(r, finiteOr0(c.stats.after));
    if (r < cats.size() && cats[r] != categoryLabel(size_t(r), c)) categories_->replace(cats[r], categoryLabel(size_t(r), c));
    if (size_t(r) < whiskers_.size() && whiskers_[size_t(r)]) {
      const QList<QPointF> pts = whiskerPoints(size_t(r), c);
      if (whiskers_[size_t(r)]->points() != pts) whiskers_[size_t(r)]->replace(pts);
    }
  }
  if (values_ && values_->max() != valueAxisEnd(cmp_)) values_->setRange(0, valueAxisEnd(cmp_));
}

void ComparePanel::rebuild() {
  ++rebuilds_;
  table_->setRowCount(int(cmp_.size()));
  for (int r = 0; r < int(cmp_.size()); ++r) {
    const Comparison& c = cmp_[size_t(r)];
    const RowView v = rowView(c, decisions_.value(c.change), palette());
    for (int col = 0; col < 5; ++col) {
      auto* it = new QTableWidgetItem(v.text[col]);
      if (col > 0) it->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      table_->setItem(r, col, it);
    }
    table_->item(r, 0)->setToolTip(v.change_tip);
    table_->item(r, 4)->setForeground(v.verdict_color);
    table_->item(r, 4)->setToolTip(v.verdict_tip);
    auto* cell = new QWidget;
    auto* h = new QHBoxLayout(cell);
    h->setContentsMargins(0, 0, 0, 0);
    auto* keep = new QToolButton(cell);
    keep->setText(tr("Keep"));
    keep->setObjectName(QStringLiteral("keep_%1").arg(r));
    auto* revert = new QToolButton(cell);
    revert->setText(tr("Revert"));
    revert->setObjectName(QStringLiteral("revert_%1").arg(r));
    revert->setToolTip(tr("Send the previous value(s) back to the run"));
    auto* traces = new QToolButton(cell);
    traces->setText(tr("Traces"));
    traces->setObjectName(QStringLiteral("traces_%1").arg(r));
    traces->setToolTip(tr("Compare a trace chunk from before the change with one from after (kernels, ops, idle)"));
    if (decisions_.contains(c.change)) {  // decided: the buttons say so and do nothing more
      keep->setEnabled(false);
      revert->setEnabled(false);
      (decisions_.value(c.change) == tr("kept") ? keep : revert)->setToolTip(tr("already %1").arg(decisions_.value(c.change)));
    }
    h->addWidget(keep);
    h->addWidget(revert);
    h->addWidget(traces);
    connect(traces, &QToolButton::clicked, this, [this, r] { emit tracesRequested(r); });
    connect(keep, &QToolButton::clicked, this, [this, change = c.change] {
      decisions_.insert(change, tr("kept"));
      emit kept(change);
      refresh();
    });
    connect(revert, &QToolButton::clicked, this, [this, change = c.change, prev = c.previous] {
      decisions_.insert(change, tr("reverted"));
      emit revertRequested(prev);
      refresh();
    });
    table_->setCellWidget(r, 5, cell);
  }
  table_->resizeColumnsToContents();  // rows or decisions changed: rare (a toggle, a click)
  table_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);

  chart_->removeAllSeries();
  for (auto* ax : chart_->axes()) {
    chart_->removeAxis(ax);
    delete ax;
  }
  before_ = after_ = nullptr;
  categories_ = nullptr;
  values_ = nullptr;
  whiskers_.assign(cmp_.size(), nullptr);
  whisker_count_ = 0;
  chart_->setTitle(cmp_.empty() ? tr("samples/s before → after<br/><i>no change measured yet</i>") : tr("samples/s before → after"));
  if (cmp_.empty()) return;
  before_ = new QBarSet(tr("before"));
  after_ = new QBarSet(tr("after"));
  before_->setColor(QColor(0x78, 0x90, 0x9c));
  after_->setColor(QColor(0x4f, 0xa3, 0xff));
  QStringList cats;
  for (size_t i = 0; i < cmp_.size(); ++i) {
    *before_ << finiteOr0(cmp_[i].stats.before);
    *after_ << finiteOr0(cmp_[i].stats.after);
    cats << categoryLabel(i, cmp_[i]);
  }
  QLineSeries* first_whisker = nullptr;
  for (size_t i = 0; i < cmp_.size(); ++i) {
    if (!hasInterval(cmp_[i])) continue;
    auto* w = new QLineSeries;
    w->setName(first_whisker ? QString() : tr("95% interval"));
    w->append(whiskerPoints(i, cmp_[i]));
    QPen pen(palette().color(QPalette::WindowText));
    pen.setWidthF(1.5);
    w->setPen(pen);
    whiskers_[i] = w;
    if (!first_whisker) first_whisker = w;
    ++whisker_count_;
  }
  auto* series = new QBarSeries;
  series->append(before_);
  series->append(after_);
  chart_->addSeries(series);
  categories_ = new QBarCategoryAxis;
  categories_->append(cats);
  values_ = new QValueAxis;
  values_->setRange(0, valueAxisEnd(cmp_));
  values_->setLabelFormat("%.0f");
  chart_->addAxis(categories_, Qt::AlignBottom);
  chart_->addAxis(values_, Qt::AlignLeft);
  series->attachAxis(categories_);
  series->attachAxis(values_);
  if (first_whisker) {
    auto* wx = new QValueAxis;
    wx->setRange(-0.5, double(cmp_.size()) - 0.5);
    wx->setVisible(false);
    chart_->addAxis(wx, Qt::AlignBottom);
    for (auto* w : whiskers_) {
      if (!w) continue;
      chart_->addSeries(w);
      w->attachAxis(wx);
      w->attachAxis(values_);
    }
    // One legend entry for all whiskers.
    const auto markers = chart_->legend()->markers();
    for (auto* m : markers)
      if (m->series() != series && m->series() != first_whisker) m->setVisible(false);
  }
}

}  // namespace tb::ui
