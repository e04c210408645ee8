#include "ui/analysis_panel.h"

#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QTabWidget>
#include <QTableWidget>
#include <QToolTip>
#include <QVBoxLayout>

namespace tb::ui {

std::vector<TimeSlice> timeSlices(const tb::prof::AnalysisResult& r) {
  std::vector<TimeSlice> s;
  if (!r.has_gpu) {
    s.push_back({QObject::tr("waiting for data"), r.loader_stall_ns, QColor(0xd9, 0x53, 0x4f)});
    // Data parallel on the CPU: the gradient all-reduce backward did not hide (Gloo).
    if (r.comm_exposed_ns > 0)
      s.push_back({QObject::tr("waiting for all-reduce"), r.comm_exposed_ns, QColor(0x8e, 0x6c, 0xd8)});
    s.push_back({QObject::tr("training thread busy / other"), r.window.length() - r.loader_stall_ns - r.comm_exposed_ns,
                 QColor(0x88, 0x88, 0x88)});
    return s;
  }
  const int64_t memory = r.gpu_busy_ns - r.compute_ns - r.comm_exposed_ns;  // memcpy/memset alone
  s.push_back({QObject::tr("compute"), r.compute_ns, QColor(0x3c, 0xa5, 0x5c)});
  s.push_back({QObject::tr("communication (exposed)"), r.comm_exposed_ns, QColor(0x8e, 0x6c, 0xd8)});
  s.push_back({QObject::tr("memcpy/memset"), memory, QColor(0x4f, 0xa3, 0xff)});
  s.push_back({QObject::tr("loader stall"), r.loader_stall_ns, QColor(0xd9, 0x53, 0x4f)});
  s.push_back({QObject::tr("after host sync"), r.sync_idle_ns, QColor(0xe6, 0x7e, 0x22)});
  s.push_back({QObject::tr("runtime calls"), r.runtime_idle_ns, QColor(0xb0, 0x7d, 0x48)});
  s.push_back({QObject::tr("launch gap"), r.launch_gap_ns, QColor(0xf0, 0xc0, 0x30)});
  s.push_back({QObject::tr("launch overhead"), r.launch_overhead_ns, QColor(0xe8, 0xdc, 0x8a)});
  s.push_back({QObject::tr("before/after kernels"), r.lead_in_ns + r.tail_ns, QColor(0xbb, 0xbb, 0xbb)});
  s.push_back({QObject::tr("waiting on another stream"), r.event_wait_ns, QColor(0x9a, 0x8f, 0xb8)});
  s.push_back({QObject::tr("other idle"), r.other_idle_ns, QColor(0x70, 0x70, 0x70)});
  return s;
}

TimeBar::TimeBar(QWidget* parent) : QWidget(parent) {
  setMinimumHeight(56);
  setMouseTracking(true);
}

void TimeBar::setSlices(std::vector<TimeSlice> s, int64_t total) {
  slices_ = std::move(s);
  total_ = total;
  QString tip;
  for (const auto& x : slices_)
    if (x.ns > 0)
      tip += QStringLiteral("%1: %2 ms (%3%)\n").arg(x.label).arg(x.ns / 1e6, 0, 'f', 3).arg(total_ > 0 ? 100.0 * x.ns / total_ : 0, 0, 'f', 1);
  setToolTip(tip.trimmed());
  update();
}

void TimeBar::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QRect bar(0, 0, width() - 1, 18);
  p.fillRect(bar, palette().base());
  if (total_ <= 0) return;
  double x = 0;
  for (const auto& s : slices_) {
    if (s.ns <= 0) continue;
    const double w = bar.width() * static_cast<double>(s.ns) / static_cast<double>(total_);
    p.fillRect(QRectF(x, 0, w, bar.height()), s.color);
    x += w;
  }
  p.setPen(palette().mid().color());
  p.drawRect(bar);
  // Legend: the classes that take time, wrapping on as many lines as the width needs.
  const QFontMetrics fm(font());
  int lx = 0, ly = bar.height() + 4;
  p.setPen(palette().text().color());
  for (const auto& s : slices_) {
    if (s.ns <= 0) continue;
    const QString t = QStringLiteral("%1 %2%").arg(s.label).arg(100.0 * s.ns / total_, 0, 'f', 1);
    const int w = 14 + fm.horizontalAdvance(t) + 12;
    if (lx > 0 && lx + w > width()) lx = 0, ly += fm.height() + 2;
    p.fillRect(QRect(lx, ly + (fm.height() - 10) / 2, 10, 10), s.color);
    p.drawText(QPoint(lx + 14, ly + fm.ascent()), t);
    lx += w;
  }
  if (ly + fm.height() + 2 > height()) setMinimumHeight(ly + fm.height() + 2);
}

namespace {

QTableWidgetItem* num(double v, int decimals = 3) {
  auto* it = new QTableWidgetItem;
  it->setData(Qt::DisplayRole, QString::number(v, 'f', decimals).toDouble());
  it->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return it;
}

QTableWidget* table(const QStringList& headers) {
  auto* t = new QTableWidget(0, static_cast<int>(headers.size()));
  t->setHorizontalHeaderLabels(headers);
  t->setEditTriggers(QAbstractItemView::NoEditTriggers);
  t->setSelectionBehavior(QAbstractItemView::SelectRows);
  t->verticalHeader()->setVisible(false);
  t->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  t->setSortingEnabled(true);
  return t;
}

}  // namespace

AnalysisPanel::AnalysisPanel(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  summary_ = new QLabel(tr("Open a trace (File → Open) or start a run to see its analysis."));
  summary_->setWordWrap(true);
  summary_->setObjectName("analysis_summary");
  bar_ = new TimeBar;
  tabs_ = new QTabWidget;
  steps_ = table({tr("step"), tr("duration ms"), tr("data wait"), tr("forward"), tr("backward"), tr("optim"),
                  tr("GPU busy"), tr("comm exposed"), tr("stall"), tr("sync"), tr("launch gap"), tr("other"),
                  tr("kernels")});
  steps_->setObjectName("analysis_steps");
  steps_->setToolTip(tr("Host phases on the step's CPU time; GPU columns on the GPU work the step launched.\n"
                        "Double-click: show the step on the timeline."));
  kernels_ = table({tr("kernel"), tr("count"), tr("total ms"), tr("avg µs"), tr("% kernel time"), tr("launch µs"),
                    tr("delay µs")});
  kernels_->setObjectName("analysis_kernels");
  kernels_->setToolTip(tr("launch: mean host time in the launch call; delay: mean launch start → kernel start.\n"
                          "Double-click: find the kernel on the timeline."));
  ops_ = table({tr("op / runtime call"), tr("count"), tr("self ms"), tr("total ms"), tr("avg self µs")});
  ops_->setObjectName("analysis_ops");
  ops_->setToolTip(tr("Host ops and CUDA runtime calls of the analysed process in the window; self = without the ops "
                      "they contain.\nDouble-click: find it on the timeline."));
  tabs_->addTab(steps_, tr("Steps"));
  tabs_->addTab(kernels_, tr("Top kernels"));
  tabs_->addTab(ops_, tr("Top ops"));
  auto* sel = new QWidget;
  auto* sv = new QVBoxLayout(sel);
  sv->setContentsMargins(0, 0, 0, 0);
  selection_label_ = new QLabel(tr("Select a time range on the timeline (Shift+drag or right-drag) to sum its kernels and ops."));
  selection_label_->setWordWrap(true);
  selection_ = table({tr("kernel / op"), tr("kind"), tr("count"), tr("total ms"), tr("mean µs"), tr("% of range")});
  selection_->setObjectName("analysis_selection");
  sv->addWidget(selection_label_);
  sv->addWidget(selection_, 1);
  tabs_->addTab(sel, tr("Selection"));
  connect(selection_, &QTableWidget::cellDoubleClicked, this, [this](int row, int) {
    emit findRequested(selection_->item(row, 0)->data(Qt::UserRole).toString());
  });
  ranks_page_ = new QWidget;
  auto* rv = new QVBoxLayout(ranks_page_);
  rv->setContentsMargins(0, 0, 0, 0);
  ranks_label_ = new QLabel;
  ranks_label_->setWordWrap(true);
  ranks_label_->setObjectName("analysis_ranks_label");
  ranks_ = table({tr("rank"), tr("steps"), tr("step ms"), tr("work ms"), tr("comm wait ms"), tr("data wait ms"),
                  tr("late in")});
  ranks_->setObjectName("analysis_ranks");
  ranks_->setToolTip(tr("Medians over the step numbers every rank has. work = step − communication wait.\n"
                        "late in: steps in which the other ranks waited for this one at the all-reduce."));
  rv->addWidget(ranks_label_);
  rv->addWidget(ranks_, 1);
  v->addWidget(summary_);
  v->addWidget(bar_);
  v->addWidget(tabs_, 1);
  connect(steps_, &QTableWidget::cellDoubleClicked, this, [this](int row, int) {
    if (!r_) return;
    const int i = steps_->item(row, 0)->data(Qt::UserRole).toInt();
    if (i < 0 || i >= static_cast<int>(r_->steps.size())) return;
    const auto& s = r_->steps[i];
    emit intervalRequested(std::min(s.start_ns, s.gpu_start_ns), std::max(s.end_ns, s.gpu_end_ns));
  });
  connect(kernels_, &QTableWidget::cellDoubleClicked, this, [this](int row, int) {
    emit findRequested(kernels_->item(row, 0)->data(Qt::UserRole).toString());
  });
  connect(ops_, &QTableWidget::cellDoubleClicked, this, [this](int row, int) {
    emit findRequested(ops_->item(row, 0)->data(Qt::UserRole).toString());
  });
}

QString AnalysisPanel::summaryText() const { return summary_->text(); }

void AnalysisPanel::setSelection(const TimelineData& data, int64_t t0, int64_t t1) {
  const auto rows = summarizeRange(data, t0, t1);
  const double span = std::max<int64_t>(1, t1 - t0);
  selection_label_->setText(tr("%1 ms selected: %2 kernels/ops by name (events starting inside it)")
                                .arg((t1 - t0) / 1e6, 0, 'f', 3)
                                .arg(rows.size()));
  selection_->setSortingEnabled(false);
  const int n = static_cast<int>(std::min<size_t>(rows.size(), 200));
  selection_->setRowCount(n);
  for (int i = 0; i < n; ++i) {
    const auto& r = rows[size_t(i)];
    const QString name = QString::fromStdString(data.names[r.name]);
    auto* it = new QTableWidgetItem(name);
    it->setData(Qt::UserRole, name);
    it->setToolTip(name);
    selection_->setItem(i, 0, it);
    selection_->setItem(i, 1, new QTableWidgetItem(r.gpu ? tr("GPU") : tr("host")));
    selection_->setItem(i, 2, num(static_cast<double>(r.count), 0));
    selection_->setItem(i, 3, num(r.total_ns / 1e6));
    selection_->setItem(i, 4, num(r.count ? r.total_ns / 1e3 / r.count : 0, 2));
    selection_->setItem(i, 5, num(100.0 * r.total_ns / span, 1));
  }
  selection_->setSortingEnabled(true);
  selection_->sortByColumn(3, Qt::DescendingOrder);
  selection_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
}

void AnalysisPanel::clear() {
  r_.reset();
  steps_->setRowCount(0);
  kernels_->setRowCount(0);
  ops_->setRowCount(0);
  bar_->setSlices({}, 0);
  summary_->setText(tr("No trace."));
}

void AnalysisPanel::setRanks(std::shared_ptr<const tb::prof::RankAnalysis> ra) {
  const int at = tabs_->indexOf(ranks_page_);
  if (!ra || ra->ranks.size() < 2) {
    if (at >= 0) tabs_->removeTab(at);
    ranks_->setRowCount(0);
    ranks_label_->clear();
    return;
  }
  if (at < 0) tabs_->insertTab(1, ranks_page_, tr("Ranks"));
  // The summary above the tabs is one rank's: say which, and where the others are.
  if (r_ && !summary_->text().contains(tr("Ranks tab"))) {
    QString which = tr("process %1").arg(tb::prof::os_pid(r_->pid));
    for (const auto& rank : ra->ranks)
      if (rank.pid == r_->pid) which = QString::fromStdString(rank.label);
    summary_->setText(summary_->text() + tr(" · %1, one of %2 ranks (Ranks tab)").arg(which).arg(ra->ranks.size()));
  }
  QString text = tr("%1 ranks, %2 step numbers in common.").arg(ra->ranks.size()).arg(ra->matched_steps);
  if (ra->straggler >= 0)
    text += " " + tr("Straggler: %1 — the others wait %2 ms per step for it (%3% of a step; cause: %4).")
                      .arg(QString::fromStdString(ra->ranks[size_t(ra->straggler)].label))
                      .arg(ra->wait_per_step_ns / 1e6, 0, 'f', 2)
                      .arg(100 * ra->wait_share, 0, 'f', 1)
                      .arg(QString::fromStdString(ra->cause));
  for (const auto& n : ra->notes) text += " " + QString::fromStdString(n) + ".";
  ranks_label_->setText(text);
  ranks_->setSortingEnabled(false);
  ranks_->setRowCount(int(ra->ranks.size()));
  for (int i = 0; i < int(ra->ranks.size()); ++i) {
    const auto& r = ra->ranks[size_t(i)];
    auto* name = new QTableWidgetItem(QString::fromStdString(r.label));
    if (i == ra->straggler) name->setForeground(QColor(0xd2, 0x99, 0x22));
    ranks_->setItem(i, 0, name);
    ranks_->setItem(i, 1, num(double(r.steps), 0));
    ranks_->setItem(i, 2, num(r.step_median_ns / 1e6));
    ranks_->setItem(i, 3, num(r.work_median_ns / 1e6));
    ranks_->setItem(i, 4, num(r.comm_wait_median_ns / 1e6));
    ranks_->setItem(i, 5, num(r.data_wait_median_ns / 1e6));
    ranks_->setItem(i, 6, num(double(r.straggler_steps), 0));
  }
  ranks_->setSortingEnabled(true);
}

QString AnalysisPanel::ranksText() const { return ranks_label_->text(); }

void AnalysisPanel::setAnalysis(std::shared_ptr<const tb::prof::AnalysisResult> r) {
  r_ = std::move(r);
  if (!r_) return clear();
  const auto& a = *r_;
  const int64_t W = a.window.length();
  QString s = a.has_gpu ? tr("GPU %1, process %2 · ").arg(a.device).arg(a.pid) : tr("CPU-only · ");
  s += tr("window %1 ms").arg(W / 1e6, 0, 'f', 3);
  if (!a.steps.empty()) s += tr(" · %1 steps, median %2 ms").arg(a.steps.size()).arg(a.step_median_ns / 1e6, 0, 'f', 3);
  if (a.has_gpu) s += tr(" · GPU busy %1%").arg(W > 0 ? 100.0 * a.gpu_busy_ns / W : 0, 0, 'f', 1);
  if (!a.trusted) s += tr(" · too few steps to bound a gain");
  summary_->setText(s);
  bar_->setSlices(timeSlices(a), W);

  steps_->setSortingEnabled(false);
  steps_->setRowCount(static_cast<int>(a.steps.size()));
  for (int i = 0; i < static_cast<int>(a.steps.size()); ++i) {
    const auto& st = a.steps[i];
    auto* idx = num(static_cast<double>(st.index), 0);
    idx->setData(Qt::UserRole, i);
    const double cols[] = {st.duration_ns() / 1e6, st.data_wait_ns / 1e6, st.forward_ns / 1e6, st.backward_ns / 1e6,
                           st.optimizer_ns / 1e6, st.gpu_busy_ns / 1e6, st.comm_exposed_ns / 1e6,
                           st.loader_stall_ns / 1e6, st.sync_idle_ns / 1e6,
                           (st.launch_gap_ns + st.launch_overhead_ns) / 1e6,
                           (st.event_wait_ns + st.other_idle_ns + st.runtime_idle_ns + st.edge_idle_ns) / 1e6};
    steps_->setItem(i, 0, idx);
    for (int c = 0; c < 11; ++c) steps_->setItem(i, c + 1, num(cols[c]));
    steps_->setItem(i, 12, num(st.kernel_count, 0));
  }
  steps_->setSortingEnabled(true);
  steps_->sortByColumn(0, Qt::AscendingOrder);  // in step order until the user sorts by a column

  kernels_->setSortingEnabled(false);
  kernels_->setRowCount(static_cast<int>(a.top_kernels.size()));
  for (int i = 0; i < static_cast<int>(a.top_kernels.size()); ++i) {
    const auto& k = a.top_kernels[i];
    const QString name = QString::fromStdString(k.name);
    auto* n = new QTableWidgetItem((k.communication ? QStringLiteral("[comm] ") : k.tensor_core ? QStringLiteral("[TC] ") : QString()) + name);
    n->setData(Qt::UserRole, name);
    n->setToolTip(name);
    kernels_->setItem(i, 0, n);
    kernels_->setItem(i, 1, num(static_cast<double>(k.count), 0));
    kernels_->setItem(i, 2, num(k.total_ns / 1e6));
    kernels_->setItem(i, 3, num(k.count ? k.total_ns / 1e3 / k.count : 0, 2));
    kernels_->setItem(i, 4, num(100.0 * k.share_of_kernel_time, 1));
    kernels_->setItem(i, 5, num(k.launched ? k.launch_mean_ns / 1e3 : 0, 2));
    kernels_->setItem(i, 6, num(k.launched ? k.delay_mean_ns / 1e3 : 0, 2));
  }
  kernels_->setSortingEnabled(true);
  kernels_->sortByColumn(2, Qt::DescendingOrder);  // by total time
  kernels_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);

  ops_->setSortingEnabled(false);
  ops_->setRowCount(static_cast<int>(a.top_ops.size()));
  for (int i = 0; i < static_cast<int>(a.top_ops.size()); ++i) {
    const auto& o = a.top_ops[i];
    const QString name = QString::fromStdString(o.name);
    auto* n = new QTableWidgetItem(name);
    n->setData(Qt::UserRole, name);
    n->setToolTip(name);
    ops_->setItem(i, 0, n);
    ops_->setItem(i, 1, num(static_cast<double>(o.count), 0));
    ops_->setItem(i, 2, num(o.self_ns / 1e6));
    ops_->setItem(i, 3, num(o.total_ns / 1e6));
    ops_->setItem(i, 4, num(o.count ? o.self_ns / 1e3 / o.count : 0, 2));
  }
  ops_->setSortingEnabled(true);
  ops_->sortByColumn(2, Qt::DescendingOrder);  // by self time
  ops_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
}

}  // namespace tb::ui
