#include "ui/analysis_panel.h"

#include <QCoreApplication>
#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QScrollArea>
#include <QSortFilterProxyModel>
#include <QTabWidget>
#include <QTableView>
#include <QToolButton>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <optional>
#include <utility>

#include "profiler/time_classes.h"
#include "ui/keyed_table_model.h"
#include "ui/loader_view.h"

namespace tb::ui {

// The bar's colour of each class (prof::time_classes' ids): a class keeps its colour in both variants (the
// CPU's wait for data is the GPU's loader stall).
std::optional<QColor> timeClassColor(std::string_view id) {
  static const std::pair<std::string_view, QColor> kColors[] = {
      {"compute", QColor(0x3c, 0xa5, 0x5c)},          {"comm_exposed", QColor(0x8e, 0x6c, 0xd8)},
      {"memory_exposed", QColor(0x4f, 0xa3, 0xff)},   {"loader_stall", QColor(0xd9, 0x53, 0x4f)},
      {"sync_idle", QColor(0xe6, 0x7e, 0x22)},        {"runtime_idle", QColor(0xb0, 0x7d, 0x48)},
      {"launch_gap", QColor(0xf0, 0xc0, 0x30)},       {"launch_overhead", QColor(0xe8, 0xdc, 0x8a)},
      {"edge_idle", QColor(0xbb, 0xbb, 0xbb)},        {"event_wait", QColor(0x9a, 0x8f, 0xb8)},
      {"other_idle", QColor(0x70, 0x70, 0x70)},       {"profiler", QColor(0x4d, 0xb6, 0xac)},
      {"outside_training", QColor(0x90, 0x96, 0xa0)}, {"training_busy_other", QColor(0x6a, 0x6a, 0x6a)},
  };
  for (const auto& [k, c] : kColors)
    if (k == id) return c;
  return std::nullopt;
}

std::vector<TimeSlice> timeSlices(const tb::prof::AnalysisResult& r) {
  std::vector<TimeSlice> s;
  for (const auto& c : tb::prof::time_classes(r))
    // A class this map does not know yet is drawn as other idle (test_analysis_panel fails on it).
    s.push_back({QObject::tr(std::string(c.label).c_str()), c.ns,
                 timeClassColor(c.id).value_or(QColor(0x70, 0x70, 0x70))});
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

// A number rounded to what the table shows: a value that did not change compares equal in the next chunk's
// analysis (its row is left alone), and the delegate prints its shortest form ("12.346") when it paints it.
QVariant num(double v, int decimals = 3) {
  const double p = std::pow(10.0, decimals);
  return std::round(v * p) / p;
}

// What sets one table of the panel apart.
struct TableSetup {
  const char* name;               // its object name (the tests find it by it)
  QString tip;                    // its tooltip; none when empty
  int sort_column = -1;           // sorted by it until the user sorts by a column; -1: not sorted
  Qt::SortOrder order = Qt::DescendingOrder;
  bool stretch_first = false;     // the first column (a name) takes the width the others leave
};

// A sortable view of a keyed model. Columns keep the width they were given (Interactive; a double-click on a
// divider fits one): ResizeToContents measured the text of every cell each time a cell was set.
QTableView* table(KeyedTableModel* model, const TableSetup& setup) {
  auto* proxy = new QSortFilterProxyModel(model);
  proxy->setSourceModel(model);
  auto* t = new QTableView;
  t->setModel(proxy);
  t->setEditTriggers(QAbstractItemView::NoEditTriggers);
  t->setSelectionBehavior(QAbstractItemView::SelectRows);
  t->verticalHeader()->setVisible(false);
  t->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  t->setSortingEnabled(true);
  t->setObjectName(setup.name);
  if (!setup.tip.isEmpty()) t->setToolTip(setup.tip);
  if (setup.sort_column >= 0) t->sortByColumn(setup.sort_column, setup.order);
  if (setup.stretch_first) t->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  return t;
}

// Columns are fitted to their text when a table fills with mostly new rows (a trace opened, a run's first
// chunk), not each time a live run's window slides by a chunk.
void fitColumnsIfNew(QTableView* t, const KeyedTableModel& m) {
  const auto& u = m.lastUpdate();
  if (u.inserted > 0 && 2 * u.inserted > m.rowCount()) t->resizeColumnsToContents();
}

}  // namespace

AnalysisPanel::AnalysisPanel(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  summary_ = new QLabel(tr("Open a trace (File → Open) or start a run to see its analysis."));
  summary_->setWordWrap(true);
  summary_->setObjectName("analysis_summary");
  bar_ = new TimeBar;
  tabs_ = new QTabWidget;
  steps_model_ = new KeyedTableModel({tr("step"), tr("duration ms"), tr("data wait"), tr("forward"), tr("backward"),
                                      tr("optim"), tr("GPU busy"), tr("comm exposed"), tr("stall"), tr("sync"),
                                      tr("launch gap"), tr("other"), tr("kernels"), tr("outside after"),
                                      tr("profiler"), tr("mem peak MiB")}, this);
  steps_ = table(steps_model_,
                 {.name = "analysis_steps",
                  .tip = tr("Host phases on the step's CPU time; GPU columns on the GPU work the step launched.\n"
                            "Outside after: time outside training that followed the step (a script's validation or "
                            "checkpoint), in no step and no throughput window.\n"
                            "Profiler: TuneBench's own time in the step (a trace chunk boundary), in no class of the "
                            "program's.\n"
                            "Double-click: show the step on the timeline."),
                  .sort_column = 0,  // in step order
                  .order = Qt::AscendingOrder});
  kernels_model_ = new KeyedTableModel({tr("kernel"), tr("count"), tr("total ms"), tr("avg µs"), tr("% kernel time"),
                                        tr("launch µs"), tr("delay µs")}, this);
  kernels_ = table(kernels_model_,
                   {.name = "analysis_kernels",
                    .tip = tr("launch: mean host time in the launch call; delay: mean launch start → kernel start.\n"
                              "Double-click: find the kernel on the timeline."),
                    .sort_column = 2,  // by total time
                    .stretch_first = true});
  ops_model_ = new KeyedTableModel({tr("op / runtime call"), tr("count"), tr("self ms"), tr("total ms"),
                                    tr("avg self µs")}, this);
  ops_ = table(ops_model_, {.name = "analysis_ops",
                            .tip = tr("Host ops and CUDA runtime calls of the analysed process in the window; self = "
                                      "without the ops they contain.\nDouble-click: find it on the timeline."),
                            .sort_column = 2,  // by self time
                            .stretch_first = true});
  tabs_->addTab(steps_, tr("Steps"));
  tabs_->addTab(kernels_, tr("Top kernels"));
  tabs_->addTab(ops_, tr("Top ops"));
  auto* sel = new QWidget;
  auto* sv = new QVBoxLayout(sel);
  sv->setContentsMargins(0, 0, 0, 0);
  selection_label_ = new QLabel(tr("Select a time range on the timeline (Shift+drag or right-drag) to sum its kernels and ops."));
  selection_label_->setWordWrap(true);
  selection_model_ = new KeyedTableModel({tr("kernel / op"), tr("kind"), tr("count"), tr("total ms"), tr("mean µs"),
                                          tr("% of range")}, this);
  selection_ = table(selection_model_, {.name = "analysis_selection", .sort_column = 3, .stretch_first = true});
  sv->addWidget(selection_label_);
  sv->addWidget(selection_, 1);
  tabs_->addTab(sel, tr("Selection"));
  ranks_page_ = new QWidget;
  auto* rv = new QVBoxLayout(ranks_page_);
  rv->setContentsMargins(0, 0, 0, 0);
  ranks_label_ = new QLabel;
  ranks_label_->setWordWrap(true);
  ranks_label_->setObjectName("analysis_ranks_label");
  ranks_model_ = new KeyedTableModel({tr("rank"), tr("steps"), tr("step ms"), tr("work ms"), tr("comm wait ms"),
                                      tr("data wait ms"), tr("late in")}, this);
  ranks_ = table(ranks_model_,
                 {.name = "analysis_ranks",
                  .tip = tr("Medians over the step numbers every rank has. work = step − communication wait.\n"
                            "late in: steps in which the other ranks waited for this one at the all-reduce.")});
  rv->addWidget(ranks_label_);
  rv->addWidget(ranks_, 1);
  buildLoaderPage();
  v->addWidget(summary_);
  v->addWidget(bar_);
  v->addWidget(tabs_, 1);
  // Rows carry what a double-click acts on (Qt::UserRole): the step's number, the kernel's or op's name.
  connect(steps_, &QTableView::doubleClicked, this, [this](const QModelIndex& i) {
    if (!r_) return;
    const qint64 step = i.data(Qt::UserRole).toLongLong();
    for (const auto& s : r_->steps)
      if (s.index == step) {
        emit intervalRequested(std::min(s.start_ns, s.gpu_start_ns), std::max(s.end_ns, s.gpu_end_ns));
        return;
      }
  });
  for (QTableView* t : {kernels_, ops_, selection_})
    connect(t, &QTableView::doubleClicked, this, [this](const QModelIndex& i) { emit findRequested(i.data(Qt::UserRole).toString()); });
}

QString AnalysisPanel::summaryText() const { return summary_->text(); }

void AnalysisPanel::setSelection(const TimelineData& data, int64_t t0, int64_t t1) {
  const auto rows = summarizeRange(data, t0, t1);
  const double span = std::max<int64_t>(1, t1 - t0);
  selection_label_->setText(tr("%1 ms selected: %2 kernels/ops by name (events starting inside it)")
                                .arg((t1 - t0) / 1e6, 0, 'f', 3)
                                .arg(rows.size()));
  const size_t n = std::min<size_t>(rows.size(), 200);
  std::vector<KeyedRow> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const auto& r = rows[i];
    const QString name = QString::fromStdString(data.names[r.name]);
    const QString kind = r.gpu ? tr("GPU") : tr("host");
    out.push_back({name + '\x1f' + kind,
                   {name, kind, num(double(r.count), 0), num(r.total_ns / 1e6), num(r.count ? r.total_ns / 1e3 / r.count : 0, 2),
                    num(100.0 * r.total_ns / span, 1)},
                   name, name, {}});
  }
  selection_model_->setRows(std::move(out));
  fitColumnsIfNew(selection_, *selection_model_);
}

void AnalysisPanel::clear() {
  r_.reset();
  steps_model_->setRows({});
  kernels_model_->setRows({});
  ops_model_->setRows({});
  bar_->setSlices({}, 0);
  setLoader({});
  summary_->setText(tr("No trace."));
}

void AnalysisPanel::setRanks(std::shared_ptr<const tb::prof::RankAnalysis> ra) {
  const int at = tabs_->indexOf(ranks_page_);
  if (!ra || ra->ranks.size() < 2) {
    if (at >= 0) tabs_->removeTab(at);
    ranks_model_->setRows({});
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
  std::vector<KeyedRow> rows;
  for (int i = 0; i < int(ra->ranks.size()); ++i) {
    const auto& r = ra->ranks[size_t(i)];
    const QString label = QString::fromStdString(r.label);
    rows.push_back({label,
                    {label, num(double(r.steps), 0), num(r.step_median_ns / 1e6), num(r.work_median_ns / 1e6),
                     num(r.comm_wait_median_ns / 1e6), num(r.data_wait_median_ns / 1e6), num(double(r.straggler_steps), 0)},
                    label, {}, i == ra->straggler ? QColor(0xd2, 0x99, 0x22) : QColor()});
  }
  ranks_model_->setRows(std::move(rows));
  fitColumnsIfNew(ranks_, *ranks_model_);
}

QString AnalysisPanel::ranksText() const { return ranks_label_->text(); }

// The Loader tab's page: what to change in one line, the picture, the sentences behind both (collapsed: they
// are what `run` printed, kept whole for whoever wants them) and the parts' table. It scrolls: the picture is a
// few hundred pixels tall, and a tab's least height is the whole dock's, which would keep the timeline from
// taking the room back while the tab exists.
void AnalysisPanel::buildLoaderPage() {
  auto* area = new QScrollArea;
  area->setWidgetResizable(true);
  area->setFrameShape(QFrame::NoFrame);
  auto* content = new QWidget;
  auto* lv = new QVBoxLayout(content);
  lv->setContentsMargins(4, 4, 4, 0);
  loader_advice_ = new QLabel;
  loader_advice_->setWordWrap(true);
  loader_advice_->setTextFormat(Qt::RichText);
  loader_advice_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  loader_advice_->setObjectName("analysis_loader_advice");
  loader_advice_->setToolTip(tr("What to change: the loader switch every voice advises (the findings' Try it, "
                                "analyze, run) and the most it can give this run."));
  loader_view_ = new LoaderView;
  loader_view_->setObjectName("analysis_loader_view");
  loader_details_ = new QToolButton;
  loader_details_->setObjectName("analysis_loader_details");
  loader_details_->setText(tr("Details"));
  loader_details_->setCheckable(true);
  loader_details_->setChecked(false);
  loader_details_->setAutoRaise(true);
  loader_details_->setArrowType(Qt::RightArrow);
  loader_details_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  loader_details_->setToolTip(tr("The verdict in sentences, as `run` and `analyze` print it."));
  loader_label_ = new QLabel;
  loader_label_->setWordWrap(true);
  loader_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  loader_label_->setObjectName("analysis_loader_label");
  loader_label_->setVisible(false);
  connect(loader_details_, &QToolButton::toggled, this, [this](bool open) {
    loader_details_->setArrowType(open ? Qt::DownArrow : Qt::RightArrow);
    loader_label_->setVisible(open);
  });
  loader_model_ = new KeyedTableModel({tr("part"), tr("ms"), tr("per"), tr("% of loading")}, this);
  loader_ = table(loader_model_,
                  {.name = "analysis_loader",
                   .tip = tr("Where a loaded sample's time goes, in the processes that load (the workers, or the "
                             "training process with num_workers=0): exclusive times, costliest first; collate per "
                             "batch."),
                   .sort_column = 3,
                   .stretch_first = true});
  lv->addWidget(loader_advice_);
  lv->addWidget(loader_view_);
  lv->addWidget(loader_details_, 0, Qt::AlignLeft);
  lv->addWidget(loader_label_);
  loader_->setMinimumHeight(6 * loader_->fontMetrics().height());
  lv->addWidget(loader_, 1);
  area->setWidget(content);
  loader_page_ = area;
}

void AnalysisPanel::setLoader(const tb::client::LoaderVerdict& v) {
  loader_verdict_ = v;
  const int at = tabs_->indexOf(loader_page_);
  if (!v.valid) {
    if (at >= 0) tabs_->removeTab(at);
    loader_model_->setRows({});
    loader_label_->clear();
    loader_advice_->clear();
    loader_advice_text_.clear();
    loader_view_->setVerdict(v);
    return;
  }
  if (at < 0) tabs_->insertTab(1, loader_page_, tr("Loader"));
  QStringList lines;
  for (const auto& l : v.lines()) lines << QString::fromStdString(l);
  loader_label_->setText(lines.join('\n'));
  // The switch in bold, then why and its bound.
  loader_advice_text_ = loaderAdviceLine(v);
  const qsizetype colon = loader_advice_text_.indexOf(QStringLiteral(": "));
  loader_advice_->setText(colon < 0 ? loader_advice_text_.toHtmlEscaped()
                                    : QStringLiteral("<b>%1</b>%2").arg(loader_advice_text_.left(colon).toHtmlEscaped(),
                                                                        loader_advice_text_.mid(colon).toHtmlEscaped()));
  loader_view_->setVerdict(v);
  std::vector<KeyedRow> rows;
  for (const auto& p : v.parts) {
    const QString name = QString::fromStdString(p.name);
    rows.push_back({name, {name, num(p.ms), p.per_batch ? tr("batch") : tr("sample"), num(100 * p.share, 1)}});
  }
  loader_model_->setRows(std::move(rows));
  fitColumnsIfNew(loader_, *loader_model_);
}

bool AnalysisPanel::showTab(const QString& title) {
  for (int i = 0; i < tabs_->count(); ++i)
    if (tabs_->tabText(i).remove('&') == title) {
      tabs_->setCurrentIndex(i);
      // A page shown for the first time lays out on its posted requests (the Loader page's scroll range among
      // them): settled now, a grab straight after (`--tab Loader --screenshot`) shows what a click would.
      QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
      return true;
    }
  return false;
}

QString AnalysisPanel::loaderText() const { return loader_label_->text(); }
QString AnalysisPanel::loaderAdviceText() const { return loader_advice_text_; }

void AnalysisPanel::setAnalysis(std::shared_ptr<const tb::prof::AnalysisResult> r) {
  r_ = std::move(r);
  if (!r_) return clear();
  const auto& a = *r_;
  const int64_t W = a.traced_ns();
  QString s = a.has_gpu ? tr("GPU %1, process %2 · ").arg(a.device).arg(a.pid) : tr("CPU-only · ");
  s += tr("window %1 ms").arg(W / 1e6, 0, 'f', 3);
  if (!a.steps.empty()) {
    s += tr(" · %1 steps").arg(a.steps.size() - a.warmup_steps);
    if (a.warmup_steps) s += tr(" after %1 warm-up").arg(a.warmup_steps);
    s += tr(", median %1 ms").arg(a.step_median_ns / 1e6, 0, 'f', 3);
  }
  if (a.has_gpu) s += tr(" · GPU busy %1%").arg(W > 0 ? 100.0 * a.gpu_busy_ns / W : 0, 0, 'f', 1);
  // A sampled trace: the bar is of the traced time; what watching cost the run is of all of it.
  if (a.untraced_ns > 0)
    s += tr(" · sampled: %1% of the run traced, TuneBench's pauses %2% of the run")
             .arg(100.0 * W / std::max<int64_t>(1, a.window.length()), 0, 'f', 1)
             .arg(100.0 * a.profiler_ns / std::max<int64_t>(1, a.window.length()), 0, 'f', 1);
  if (!a.trusted) s += tr(" · too few steps to bound a gain");
  // Memory beside time: the peak the run reached and what the device had left.
  if (a.memory.present) {
    auto gib = [](int64_t b) { return QStringLiteral("%1 GiB").arg(double(b) / double(int64_t(1) << 30), 0, 'f', 2); };
    if (a.memory.device_step_peak >= 0) {
      s += tr(" · memory peak %1 (step %2)").arg(gib(a.memory.device_step_peak)).arg(a.memory.peak_step);
      if (a.memory.headroom >= 0) s += tr(", %1 headroom").arg(gib(a.memory.headroom));
    } else if (a.memory.host_rss_peak >= 0) {
      s += tr(" · host memory peak %1").arg(gib(a.memory.host_rss_peak));
    }
  }
  summary_->setText(s);
  bar_->setSlices(timeSlices(a), W);

  std::vector<KeyedRow> steps;
  steps.reserve(a.steps.size());
  for (const auto& st : a.steps)
    steps.push_back({QString::number(st.index),
                     {num(double(st.index), 0), num(st.duration_ns() / 1e6), num(st.data_wait_ns / 1e6),
                      num(st.forward_ns / 1e6), num(st.backward_ns / 1e6), num(st.optimizer_ns / 1e6),
                      num(st.gpu_busy_ns / 1e6), num(st.comm_exposed_ns / 1e6), num(st.loader_stall_ns / 1e6),
                      num(st.sync_idle_ns / 1e6), num((st.launch_gap_ns + st.launch_overhead_ns) / 1e6),
                      num((st.event_wait_ns + st.other_idle_ns + st.runtime_idle_ns + st.edge_idle_ns) / 1e6),
                      num(double(st.kernel_count), 0), num(st.outside_after_ns / 1e6), num(st.profiler_ns / 1e6),
                      st.memory_peak_bytes >= 0 ? num(double(st.memory_peak_bytes) / double(1 << 20), 0) : QVariant()},
                     qint64(st.index), {}, {}});
  steps_model_->setRows(std::move(steps));
  fitColumnsIfNew(steps_, *steps_model_);

  std::vector<KeyedRow> kernels;
  for (const auto& k : a.top_kernels) {
    const QString name = QString::fromStdString(k.name);
    const QString shown = (k.communication ? QStringLiteral("[comm] ") : k.tensor_core ? QStringLiteral("[TC] ") : QString()) + name;
    kernels.push_back({name,
                       {shown, num(double(k.count), 0), num(k.total_ns / 1e6), num(k.count ? k.total_ns / 1e3 / k.count : 0, 2),
                        num(100.0 * k.share_of_kernel_time, 1), num(k.launched ? k.launch_mean_ns / 1e3 : 0, 2),
                        num(k.launched ? k.delay_mean_ns / 1e3 : 0, 2)},
                       name, name, {}});
  }
  kernels_model_->setRows(std::move(kernels));
  fitColumnsIfNew(kernels_, *kernels_model_);

  std::vector<KeyedRow> ops;
  for (const auto& o : a.top_ops) {
    const QString name = QString::fromStdString(o.name);
    ops.push_back({name,
                   {name, num(double(o.count), 0), num(o.self_ns / 1e6), num(o.total_ns / 1e6),
                    num(o.count ? o.self_ns / 1e3 / o.count : 0, 2)},
                   name, name, {}});
  }
  ops_model_->setRows(std::move(ops));
  fitColumnsIfNew(ops_, *ops_model_);
}

}  // namespace tb::ui
