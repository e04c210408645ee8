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

void ComparePanel::refresh() {
  cmp_ = rec_ ? compareSegments(segmentRun(*rec_)) : std::vector<Comparison>{};
  table_->setRowCount(int(cmp_.size()));
  auto num = [](double v, int prec = 1) { return std::isfinite(v) ? QString::number(v, 'f', prec) : QStringLiteral("–"); };
  for (int r = 0; r < int(cmp_.size()); ++r) {
    const Comparison& c = cmp_[size_t(r)];
    const QString verdict = QString::fromStdString(c.stats.verdict());
    auto set = [&](int col, const QString& text) {
      auto* it = new QTableWidgetItem(text);
      if (col > 0) it->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      table_->setItem(r, col, it);
      return it;
    };
    set(0, c.change)->setToolTip(tr("data wait: %1% → %2% of the step (median)").arg(100 * c.wait_before, 0, 'f', 1).arg(100 * c.wait_after, 0, 'f', 1));
    set(1, num(c.stats.before));
    set(2, num(c.stats.after));
    set(3, c.stats.valid ? QStringLiteral("×%1 [%2, %3]").arg(num(c.stats.ratio, 2), num(c.stats.lo, 2), num(c.stats.hi, 2))
                         : QStringLiteral("…"));
    auto* v = set(4, decisions_.contains(c.change) ? verdict + " · " + decisions_.value(c.change) : verdict);
    v->setForeground(verdict.startsWith("faster") ? QColor(0x2e, 0xa0, 0x43)
                     : verdict.startsWith("slower") ? QColor(0xd3, 0x2f, 0x2f)
                                                    : palette().color(QPalette::Text));
    // How far to trust it: each side's noise verdict (a live toggle is sequential, not alternated).
    v->setToolTip(QString::fromStdString(c.stats.noise_text()));
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
  table_->resizeColumnsToContents();
  table_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);

  chart_->removeAllSeries();
  for (auto* ax : chart_->axes()) {
    chart_->removeAxis(ax);
    delete ax;
  }
  whisker_count_ = 0;
  chart_->setTitle(cmp_.empty() ? tr("samples/s before → after<br/><i>no change measured yet</i>") : tr("samples/s before → after"));
  if (cmp_.empty()) return;
  auto* before = new QBarSet(tr("before"));
  auto* after = new QBarSet(tr("after"));
  before->setColor(QColor(0x78, 0x90, 0x9c));
  after->setColor(QColor(0x4f, 0xa3, 0xff));
  QStringList cats;
  double ymax = 1;
  for (const auto& c : cmp_) {
    *before << (std::isfinite(c.stats.before) ? c.stats.before : 0);
    *after << (std::isfinite(c.stats.after) ? c.stats.after : 0);
    ymax = std::max({ymax, std::isfinite(c.stats.before) ? c.stats.before : 0.0,
                     std::isfinite(c.stats.after) ? c.stats.after : 0.0});
    // The table's row number, not the change cut to fit ("worke…"): the table beside it has the full text.
    QString label = QStringLiteral("#%1").arg(cats.size() + 1);
    if (c.stats.valid) label += QStringLiteral("\n×%1").arg(c.stats.ratio, 0, 'f', 2);
    cats << label;
  }
  // Error bars on "after": the ratio's 95% interval times "before" (what the verdict rests on). Whiskers
  // are line series on a hidden x axis laid over the categories: bar sets of width 0.5 put the second set's
  // centre at i + 0.125.
  std::vector<QLineSeries*> whiskers;
  for (size_t i = 0; i < cmp_.size(); ++i) {
    const auto& c = cmp_[i];
    if (!c.stats.valid || !std::isfinite(c.stats.before) || !std::isfinite(c.stats.lo) || !std::isfinite(c.stats.hi)) continue;
    const double x = double(i) + 0.125, lo = c.stats.before * c.stats.lo, hi = c.stats.before * c.stats.hi;
    auto* w = new QLineSeries;
    w->setName(whiskers.empty() ? tr("95% interval") : QString());
    w->append({{x, lo}, {x, hi}, {x, hi}, {x - 0.05, hi}, {x + 0.05, hi}, {x, hi}, {x, lo}, {x - 0.05, lo}, {x + 0.05, lo}});
    QPen pen(palette().color(QPalette::WindowText));
    pen.setWidthF(1.5);
    w->setPen(pen);
    whiskers.push_back(w);
    ymax = std::max(ymax, hi);
  }
  auto* series = new QBarSeries;
  series->append(before);
  series->append(after);
  chart_->addSeries(series);
  auto* ax = new QBarCategoryAxis;
  ax->append(cats);
  auto* ay = new QValueAxis;
  ay->setRange(0, ymax * 1.1);
  ay->setLabelFormat("%.0f");
  chart_->addAxis(ax, Qt::AlignBottom);
  chart_->addAxis(ay, Qt::AlignLeft);
  series->attachAxis(ax);
  series->attachAxis(ay);
  if (!whiskers.empty()) {
    auto* wx = new QValueAxis;
    wx->setRange(-0.5, double(cmp_.size()) - 0.5);
    wx->setVisible(false);
    chart_->addAxis(wx, Qt::AlignBottom);
    for (auto* w : whiskers) {
      chart_->addSeries(w);
      w->attachAxis(wx);
      w->attachAxis(ay);
    }
    // One legend entry for all whiskers.
    const auto markers = chart_->legend()->markers();
    for (auto* m : markers)
      if (m->series() != series && m->series() != whiskers.front()) m->setVisible(false);
  }
  whisker_count_ = int(whiskers.size());
}

}  // namespace tb::ui
