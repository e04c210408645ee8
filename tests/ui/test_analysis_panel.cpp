// The analysis of an opened trace in the GUI (offscreen): the panel's step and kernel tables and its time bar
// on the real V100 trace, find-by-name on the timeline model and widget, the window opening a static trace
// on its first steps with the live panels hidden, and File → Compare with… on two real traces.

#include <QDockWidget>
#include <QJsonArray>
#include <QJsonObject>
#include <QSignalSpy>
#include <QHeaderView>
#include <QStyledItemDelegate>
#include <QTableView>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>
#include <map>

#include <nlohmann/json.hpp>

#include "client/loader_verdict.h"
#include "profiler/trace_io.h"
#include "profiler/time_classes.h"
#include "ui/analysis_panel.h"
#include "ui/keyed_table_model.h"
#include "ui/live_loader.h"
#include "ui/main_window.h"
#include "ui/segments.h"
#include "ui/timeline_widget.h"
#include "ui/trace_loader.h"
#include "ui_test_util.h"

using namespace tb::ui;

namespace {
// Counts the cell measurements a view asks for (a header fitting columns to their text asks for every cell).
class CountingDelegate : public QStyledItemDelegate {
 public:
  using QStyledItemDelegate::QStyledItemDelegate;
  QSize sizeHint(const QStyleOptionViewItem& o, const QModelIndex& i) const override {
    ++measured;
    return QStyledItemDelegate::sizeHint(o, i);
  }
  mutable int measured = 0;
};

// A live run's ten steps of 8 samples and 100 ms, the first a warm-up, each waiting `wait_ns` for its batch and
// copying it for `h2d_ns`.
tb::ui::RunRecord tenSteps(int64_t wait_ns, int64_t h2d_ns) {
  tb::ui::RunRecord rec;
  for (int k = 0; k < 10; ++k) {
    tb::ui::StepSample s;
    s.i = k;
    s.samples = 8;
    s.wall_ns = 100'000'000;
    s.data_wait_ns = wait_ns;
    s.h2d_ns = h2d_ns;
    s.warmup = k == 0;
    rec.steps.push_back(s);
  }
  return rec;
}

// The analysis of steps [first, first + n): what a live run's latest chunks give, one chunk later each time.
std::shared_ptr<tb::prof::AnalysisResult> stepsWindow(int64_t first, int n) {
  auto a = std::make_shared<tb::prof::AnalysisResult>();
  for (int64_t i = first; i < first + n; ++i) {
    tb::prof::StepBreakdown s;
    s.index = i;
    s.start_ns = i * 1'000'000;
    s.end_ns = s.start_ns + 900'000 + (i % 7) * 1000;
    s.gpu_start_ns = s.start_ns;  // CPU-only: no GPU work of its own
    s.gpu_end_ns = s.end_ns;
    s.data_wait_ns = 100'000;
    a->steps.push_back(s);
  }
  a->window = {a->steps.front().start_ns, a->steps.back().end_ns};
  return a;
}
}  // namespace

class TestAnalysisPanel : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("TuneBenchTestAnalysis");
    QSettings::setDefaultFormat(QSettings::IniFormat);
    initResources();
  }

  void panelShowsStepsKernelsAndAFullBar() {
    const QString path = tbtest::kinetoTrace();
    if (path.isEmpty()) QSKIP("kineto_train_step_rank0.json.gz not found");
    const LoadedTrace t = loadTraceFile(path);
    QVERIFY2(t.ok, qPrintable(t.error));
    AnalysisPanel p;
    p.setAnalysis(t.analysis);
    QCOMPARE(p.stepsTable()->model()->rowCount(), 5);
    QCOMPARE(p.kernelsTable()->model()->rowCount(), 10);
    QCOMPARE(p.opsTable()->model()->rowCount(), 20);
    // Each step row says 870 kernels (the work it launched).
    for (int r = 0; r < 5; ++r) QCOMPARE(p.stepsTable()->model()->index(r, 12).data(Qt::DisplayRole).toInt(), 870);
    QVERIFY(p.summaryText().contains("5 steps"));
    // The bar's slices are the whole window, nothing more, nothing less.
    int64_t sum = 0;
    for (const auto& s : timeSlices(*t.analysis)) {
      QVERIFY2(s.ns >= 0, qPrintable(s.label));
      sum += s.ns;
    }
    QCOMPARE(sum, t.analysis->window.length());
    // Double-clicking a step asks the timeline for that step.
    QSignalSpy spy(&p, &AnalysisPanel::intervalRequested);
    emit p.stepsTable()->doubleClicked(p.stepsTable()->model()->index(1, 0));
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.at(0).at(0).toLongLong(), qint64(t.analysis->steps[1].start_ns));
  }

  // A live run's window slides by a chunk: the steps that left are removed, the new ones appended, the rest
  // left alone, and no cell's text is measured again (the header fitted every column to every cell before).
  void liveWindowUpdatesStepsInPlace() {
    AnalysisPanel p;
    p.resize(900, 400);
    p.show();
    auto* counting = new CountingDelegate(p.stepsTable());
    p.stepsTable()->setItemDelegate(counting);
    p.setAnalysis(stepsWindow(0, 60));
    QCOMPARE(p.stepsModel()->lastUpdate().inserted, 60);
    QVERIFY(counting->measured > 0);  // a new table is fitted to its text once
    QCOMPARE(p.stepsTable()->horizontalHeader()->sectionResizeMode(1), QHeaderView::Interactive);
    const int width = p.stepsTable()->columnWidth(1);
    p.stepsTable()->selectRow(59);  // step 59, the newest
    for (int chunk = 1; chunk <= 3; ++chunk) {
      counting->measured = 0;
      p.setAnalysis(stepsWindow(20 * chunk, 60));
      const auto& u = p.stepsModel()->lastUpdate();
      QCOMPARE(u.removed, 20);
      QCOMPARE(u.inserted, 20);
      QCOMPARE(u.kept, 40);
      QCOMPARE(u.changed, 0);
      QCOMPARE(counting->measured, 0);
      QCOMPARE(p.stepsTable()->columnWidth(1), width);
      // The selected step stays selected until it leaves the window (steps 60.. in the third).
      const auto rows = p.stepsTable()->selectionModel()->selectedRows();
      QCOMPARE(rows.size(), chunk < 3 ? 1 : 0);
      if (chunk < 3) QCOMPARE(rows.front().data().toInt(), 59);
    }
    QCOMPARE(p.stepsTable()->model()->index(0, 0).data().toInt(), 60);  // in step order
    QCOMPARE(p.stepsTable()->model()->index(59, 0).data().toInt(), 119);
    // A value that changes repaints its row only; the user's sort holds across chunks.
    p.stepsTable()->sortByColumn(1, Qt::DescendingOrder);
    auto changed = stepsWindow(80, 60);
    changed->steps[10].end_ns += 5'000'000;  // step 90 becomes the longest
    p.setAnalysis(changed);
    QCOMPARE(p.stepsModel()->lastUpdate().changed, 1);
    QCOMPARE(p.stepsTable()->model()->index(0, 0).data().toInt(), 90);
    // Double-click acts on the step the row shows, whatever the order.
    QSignalSpy spy(&p, &AnalysisPanel::intervalRequested);
    emit p.stepsTable()->doubleClicked(p.stepsTable()->model()->index(0, 3));
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.at(0).at(0).toLongLong(), qint64(90 * 1'000'000));
  }

  // A script's validation after a step: the step row says how long, and the bar gives it its own slice, the
  // slices still summing to the window.
  void outsideTrainingHasItsColumnAndSlice() {
    auto a = stepsWindow(0, 10);
    a->steps[4].outside_after_ns = 3'000'000;
    a->outside_training_ns = 3'000'000;
    a->outside_training_count = 1;
    AnalysisPanel p;
    p.setAnalysis(a);
    auto column = [&](const QString& name) {
      for (int c = 0; c < p.stepsModel()->columnCount(); ++c)
        if (p.stepsModel()->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString() == name) return c;
      return -1;
    };
    const int col = column("outside after");
    QVERIFY(col > 0);
    // The profiler's own time and the step's memory peak have columns of their own, after it.
    QVERIFY(column("profiler") > col);
    QVERIFY(column("mem peak MiB") > col);
    QCOMPARE(p.stepsModel()->index(4, col).data(Qt::DisplayRole).toDouble(), 3.0);
    QCOMPARE(p.stepsModel()->index(3, col).data(Qt::DisplayRole).toDouble(), 0.0);
    int64_t sum = 0, outside = 0;
    for (const auto& sl : timeSlices(*a)) {
      sum += sl.ns;
      if (sl.label == "outside training") outside = sl.ns;
    }
    QCOMPARE(outside, int64_t(3'000'000));
    QCOMPARE(sum, a->window.length());
  }

  // Every class of time, in both variants, has a colour of its own: a class added to prof::time_classes
  // without one fails here, not as a grey slice nobody can tell from "other idle".
  void everyClassOfTimeHasItsOwnColour() {
    tb::prof::AnalysisResult gpu, cpu;
    gpu.has_gpu = true;
    std::map<QRgb, std::string> seen;
    for (const auto* r : {&gpu, &cpu})
      for (const auto& c : tb::prof::time_classes(*r)) {
        const auto colour = timeClassColor(c.id);
        QVERIFY2(colour.has_value(), c.id.data());
        const auto [it, fresh] = seen.emplace(colour->rgb(), std::string(c.id));
        QVERIFY2(fresh || it->second == c.id, (std::string(c.id) + " has " + it->second + "'s colour").c_str());
      }
    QVERIFY(!timeClassColor("no_such_class").has_value());
  }

  void keyedModelKeepsKeysUnique() {
    KeyedTableModel m({"name", "value"});
    m.setRows({{"a", {"a", 1.0}, {}, {}, {}}, {"a", {"a", 2.0}, {}, {}, {}}, {"b", {"b", 3.0}, {}, {}, {}}});
    QCOMPARE(m.rowCount(), 3);
    QCOMPARE(m.row(1).key, QString("a #2"));
    QCOMPARE(m.index(2, 1).data(Qt::TextAlignmentRole).toInt(), int(Qt::AlignRight | Qt::AlignVCenter));
    QVERIFY(!m.index(2, 0).data(Qt::TextAlignmentRole).isValid());
    m.setRows({{"b", {"b", 4.0}, {}, {}, {}}});
    QCOMPARE(m.rowCount(), 1);
    QCOMPARE(m.lastUpdate().removed, 2);
    QCOMPARE(m.lastUpdate().changed, 1);
    QCOMPARE(m.index(0, 1).data().toDouble(), 4.0);
  }

  void findNextByNameWrapsAround() {
    TimelineData d;
    Track cpu;
    cpu.name = "cpu";
    cpu.lanes.resize(1);
    const uint32_t a = d.intern("aten::conv2d"), k = d.intern("volta_sgemm_128x64_nn");
    cpu.lanes[0].push(0, 10, a, EventCat::Range);
    cpu.lanes[0].push(20, 30, a, EventCat::Range);
    Track gpu;
    gpu.name = "gpu";
    gpu.kind = TrackKind::GpuStream;
    gpu.sort_key = 1;
    gpu.lanes.resize(1);
    gpu.lanes[0].push(15, 25, k, EventCat::Kernel);
    d.tracks = {cpu, gpu};
    d.finalize();
    auto first = findNextEvent(d, "CONV", nullptr);  // case-insensitive
    QVERIFY(first);
    QCOMPARE(d.tracks[first->track].lanes[first->lane].start[first->index], int64_t(0));
    auto second = findNextEvent(d, "conv", &*first);
    QVERIFY(second);
    QCOMPARE(d.tracks[second->track].lanes[second->lane].start[second->index], int64_t(20));
    auto wrapped = findNextEvent(d, "conv", &*second);
    QVERIFY(wrapped);
    QCOMPARE(d.tracks[wrapped->track].lanes[wrapped->lane].start[wrapped->index], int64_t(0));
    auto kernel = findNextEvent(d, "sgemm", &*first);
    QVERIFY(kernel);
    QCOMPARE(d.tracks[kernel->track].name, std::string("gpu"));
    QVERIFY(!findNextEvent(d, "nccl", nullptr));
    // Summaries of a range count the events that start inside it.
    auto all = summarizeRange(d, 0, 30);
    QCOMPARE(int(all.size()), 2);
    QCOMPARE(d.names[all[0].name], std::string("aten::conv2d"));  // 2 x 10 ns, before the kernel's 10
    QCOMPARE(all[0].count, uint64_t(2));
    QCOMPARE(all[0].total_ns, int64_t(20));
    QVERIFY(!all[0].gpu && all[1].gpu);
    auto part = summarizeRange(d, 12, 17);  // only the kernel starts in there
    QCOMPARE(int(part.size()), 1);
    QVERIFY(part[0].gpu);
  }

  void toggleChunksArePickedInsideEachConfiguration() {
    RunRecord rec;
    rec.chunks = {{"c0", 0, 9}, {"c1", 10, 19}, {"c2", 20, 29}, {"c3", 30, 39}, {"c4", 40, 49}};
    std::vector<Segment> segs(2);
    segs[0].first_step = 0;
    segs[0].last_step = 24;  // the toggle took effect at step 25: c2 straddles it
    segs[1].first_step = 25;
    segs[1].last_step = 49;
    Comparison c;
    c.index = 1;
    const auto [before, after] = chunksForComparison(rec, segs, c);
    QCOMPARE(before, QString("c1"));  // the last chunk wholly before
    QCOMPARE(after, QString("c3"));   // the first wholly after
    segs[1].last_step = 35;           // no chunk wholly after: nothing
    QVERIFY(chunksForComparison(rec, segs, c).first.isEmpty());
    c.index = 0;
    QVERIFY(chunksForComparison(rec, segs, c).first.isEmpty());
  }

  void windowOpensOnStepsFindsAndCompares() {
    const QString path = tbtest::kinetoTrace();
    const QString other = QStringLiteral(TB_TESTDATA_DIR "/kineto_nccl_sampled_rank0.json.gz");
    if (path.isEmpty() || !QFileInfo::exists(other)) QSKIP("test traces not found");
    MainWindow w;
    w.setQuiet(true);
    w.resize(1400, 900);
    w.show();
    const QString opened = tbtest::openTraceAndWait(w, path, 60000);
    QVERIFY2(opened.isEmpty(), qPrintable(opened));
    QCOMPARE(w.analysis()->stepsTable()->model()->rowCount(), 5);
    // memcpy/memset on their own row per stream, kernels alone on theirs.
    int copy_rows = 0;
    for (const auto& tr : w.timeline()->data()->tracks) {
      if (tr.kind != TrackKind::GpuStream) continue;
      const bool copies = tr.name.find("memcpy/memset") != std::string::npos;
      copy_rows += copies;
      for (const auto& l : tr.lanes)
        for (EventCat c : l.cat)
          if (c == EventCat::Memcpy || c == EventCat::Memset) QVERIFY2(copies, tr.name.c_str());
          else if (c == EventCat::Kernel) QVERIFY2(!copies, tr.name.c_str());
    }
    QVERIFY(copy_rows >= 1);
    // A static trace: the analysis is shown, the live panels are not.
    QVERIFY(w.findChild<QDockWidget*>("dock_analysis")->isVisible());
    QVERIFY(!w.findChild<QDockWidget*>("dock_chart")->isVisible());
    QVERIFY(!w.findChild<QDockWidget*>("dock_compare")->isVisible());
    // Opened on the first three steps, not the whole file.
    const auto& a = *w.currentTrace().analysis;
    const double span = w.timeline()->mapper().span();
    QVERIFY2(span < 0.8 * double(a.window.length()), qPrintable(QString::number(span)));
    QVERIFY(w.timeline()->mapper().start() <= double(a.steps[0].start_ns));
    // Go to step 103: selected, in view.
    QVERIFY(w.goToStep(103));
    QVERIFY(w.timeline()->hasSelection());
    QCOMPARE(w.timeline()->selection().first, qint64(std::min(a.steps[2].start_ns, a.steps[2].gpu_start_ns)));
    QVERIFY(!w.goToStep(7));
    QVERIFY(w.analysis()->selectionTable()->model()->rowCount() > 10);  // the step's kernels and ops, summed
    // Ctrl+F: a kernel by part of its name is selected and in view.
    QSignalSpy sel(w.timeline(), &TimelineWidget::eventSelected);
    QVERIFY(w.findOnTimeline("bn_bw_1C11"));
    QCOMPARE(sel.count(), 1);
    QVERIFY(sel.at(0).at(0).toString().contains("bn_bw_1C11"));
    QVERIFY(!w.findOnTimeline("no_such_kernel_anywhere"));
    // Compare with another trace.
    QSignalSpy cmp(&w, &MainWindow::compareFinished);
    w.compareWith(other);
    QVERIFY(cmp.wait(60000));
    QVERIFY2(cmp.at(0).at(0).toBool(), qPrintable(cmp.at(0).at(1).toString()));
    QVERIFY(w.lastComparisonHtml().contains("median step"));
    QVERIFY(w.lastComparisonHtml().contains("Changed most"));
    // A bad file: an error, no crash, the trace stays.
    cmp.clear();
    w.compareWith("/nonexistent/trace.json");
    QVERIFY(cmp.wait(20000));
    QVERIFY(!cmp.at(0).at(0).toBool());
    QVERIFY(w.currentTrace().ok);
  }

  // At a script's end its `done` summary carries the last totals, and with num_workers=0 the launcher's probe of
  // what taking each batch from a worker would cost: the Loader tab's verdict then counts it, as `run` prints it.
  void theVerdictAtTheEndCountsWhatWorkersWouldCost() {
    const tb::ui::RunRecord rec = tenSteps(60'000'000, 0);
    QJsonObject part{{"who", "main"}, {"pid", 7}, {"samples", 80}, {"batches", 10}, {"busy_ns", 800'000'000},
                     {"cpu_ns", 80'000'000}, {"life_ns", 1'000'000'000},
                     {"parts", QJsonObject{{"SlowDisk", QJsonObject{{"ns", 800'000'000}, {"calls", 80}}}}}};
    QVERIFY(!tb::ui::loaderVerdictAtEnd(rec, QJsonObject{{"steps", 10}}).valid);  // an engine's or untraced run
    const auto before = tb::ui::loaderVerdictAtEnd(rec, QJsonObject{{"loader_parts", QJsonArray{part}}});
    QVERIFY(before.valid);
    QCOMPARE(before.receive_ms, 0.0);
    part["receive"] = QJsonObject{{"ns", 4'000'000}, {"batches", 16}, {"bytes", 98'368}};
    const auto v = tb::ui::loaderVerdictAtEnd(rec, QJsonObject{{"loader_parts", QJsonArray{part}}, {"cpu_ns", 400'000'000}});
    QVERIFY(v.valid);
    QCOMPARE(v.receive_ms, 4.0);
    QVERIFY(v.fed_sps < v.consume_sps);
    std::string all;
    for (const auto& l : v.lines()) all += l + "\n";
    QVERIFY2(all.find("counting what taking each batch from a worker costs it (4.00 ms a batch") != std::string::npos,
             all.c_str());
  }

  // An engine run's live verdict (serve sends its loader's parts after each chunk, `transfer` set: the engine
  // times its batches' copies): the input split into the host's wait and the transfer; a script's message (no
  // `transfer`) leaves the transfer unmeasured.
  void liveVerdictOfAnEngineRunSplitsItsInput() {
    const tb::ui::RunRecord rec = tenSteps(30'000'000, 10'000'000);
    QJsonObject part{{"who", "main"}, {"pid", 7}, {"samples", 80}, {"batches", 10}, {"busy_ns", 240'000'000},
                     {"cpu_ns", 200'000'000}, {"life_ns", 1'000'000'000},
                     {"parts", QJsonObject{{"decode (JPEG, PNG)", QJsonObject{{"ns", 200'000'000}, {"calls", 80}}},
                                           {"read (file)", QJsonObject{{"ns", 40'000'000}, {"calls", 80}}}}}};
    QJsonObject msg{{"type", "loader_parts"}, {"parts", QJsonArray{part}}, {"cpu_ns", 500'000'000}};
    const auto script = tb::ui::liveLoaderVerdict(rec, msg);
    QVERIFY(script.valid);
    QVERIFY(script.transfer_share < 0);
    QCOMPARE(script.grade, std::string("highly input-bound"));
    msg["transfer"] = true;
    const auto engine = tb::ui::liveLoaderVerdict(rec, msg);
    QVERIFY(std::abs(engine.transfer_share - 0.10) < 1e-9);
    std::string all;
    for (const auto& l : engine.lines()) all += l + "\n";
    QVERIFY2(all.find("input took 40% of the step time: the loop waited for batches 30% (host) and copied them to "
                      "the device 10% (transfer)") != std::string::npos, all.c_str());
    QVERIFY2(all.find("--set pin_memory=on") != std::string::npos, all.c_str());
  }

  // A script's trace whose loader was timed (`run --script --trace` writes its verdict in as the "loader"
  // document): the Loader tab says what the run printed, line for line, and lists the parts costliest first;
  // a trace without one has no such tab.
  void loaderVerdictOfAScriptTraceIsItsOwnTab() {
    auto proc = [](const char* who, std::vector<std::pair<const char*, double>> parts) {
      nlohmann::json p = {{"who", who}, {"pid", 7}, {"samples", 64}, {"batches", 8}, {"life_ns", 900'000'000}};
      double busy = 0;
      for (const auto& [name, ms] : parts) {
        const double ns = ms * 1e6 * (std::string(name) == "collate" ? 8 : 64);
        p["parts"][name] = {{"ns", int64_t(ns)}, {"calls", 64}};
        busy += ns;
      }
      p["busy_ns"] = int64_t(busy);
      p["cpu_ns"] = int64_t(busy * 0.4);
      return p;
    };
    const auto parts = nlohmann::json::array({proc("worker 0", {{"SlowBlur", 6.0}, {"read + decode (PIL)", 1.5}, {"collate", 0.4}}),
                                              proc("worker 1", {{"SlowBlur", 6.0}, {"read + decode (PIL)", 1.5}, {"collate", 0.4}})});
    const tb::client::LoaderVerdict v = tb::client::loader_verdict(parts, 128, 2'000'000'000, 900'000'000, 2, 2.0);
    QVERIFY(v.valid);
    nlohmann::json trace = {{"displayTimeUnit", "ns"},
                            {"tunebench", {{"documents", {{"loader", v.to_json()}, {"not_an_object", 3}}}}},
                            {"traceEvents", nlohmann::json::array()}};
    for (int s = 0; s < 3; ++s)
      trace["traceEvents"].push_back({{"ph", "X"}, {"cat", "user_annotation"}, {"name", "ProfilerStep#" + std::to_string(s)},
                                      {"pid", 1}, {"tid", 1}, {"ts", s * 20000}, {"dur", 19000}});
    // Its loader's lanes, as the launcher writes them (hooks/loader_lanes.py): a worker's process with a sample
    // and its slow part, and the queue's counters.
    auto& ev = trace["traceEvents"];
    ev.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", 2001}, {"tid", 0}, {"args", {{"name", "DataLoader worker 0"}}}});
    ev.push_back({{"ph", "X"}, {"cat", "tunebench_loader"}, {"name", "sample"}, {"pid", 2001}, {"tid", 2001}, {"ts", 1000}, {"dur", 7000}});
    ev.push_back({{"ph", "X"}, {"cat", "tunebench_loader"}, {"name", "SlowBlur"}, {"pid", 2001}, {"tid", 2001}, {"ts", 1500}, {"dur", 6000}});
    for (int k = 0; k < 3; ++k)
      for (const char* c : {"loader: batches ready", "loader: batches in flight"})
        ev.push_back({{"ph", "C"}, {"name", c}, {"pid", 1}, {"tid", 0}, {"ts", k * 20000 + 100}, {"args", {{"value", k}}}});
    const QString path = tmp_.filePath("loader.trace.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray::fromStdString(trace.dump()));
    f.close();
    MainWindow w;
    w.setQuiet(true);
    const QString opened = tbtest::openTraceAndWait(w, path, 30000);
    QVERIFY2(opened.isEmpty(), qPrintable(opened));
    QStringList lines;
    for (const auto& l : v.lines()) lines << QString::fromStdString(l);
    QCOMPARE(w.analysis()->loaderText(), lines.join('\n'));
    QVERIFY2(w.analysis()->loaderText().contains("highly input-bound"), qPrintable(w.analysis()->loaderText()));
    auto* table = w.analysis()->loaderTable();
    QCOMPARE(table->model()->rowCount(), 3);
    QCOMPARE(table->model()->index(0, 0).data().toString(), QString("SlowBlur"));
    QCOMPARE(w.analysis()->findChild<QTabWidget*>()->indexOf(w.analysis()->loaderPage()) >= 0, true);
    // `tunebench --tab Loader --screenshot F` brings it to the front by its title, as a user's click would.
    QVERIFY(w.analysis()->showTab("Loader"));
    QCOMPARE(w.analysis()->findChild<QTabWidget*>()->currentWidget(), w.analysis()->loaderPage());
    QVERIFY(!w.analysis()->showTab("No such tab"));
    // The worker is a row group of its own, its sample with the slow part inside; the queue is a strip.
    const auto& data = *w.timeline()->data();
    const auto worker = std::find_if(data.tracks.begin(), data.tracks.end(),
                                     [](const auto& t) { return t.group == "DataLoader worker 0 (pid 2001)"; });
    QVERIFY(worker != data.tracks.end());
    QCOMPARE(worker->lanes.size(), size_t(2));  // the sample, and its part one level down
    QCOMPARE(data.queue.size(), size_t(2));
    // File ▸ Export carries the verdict the tab shows: the report says why the loader is slow, line for line.
    const QString md = tmp_.filePath("loader.md");
    QVERIFY2(w.exportReport({{"--md", md}}), qPrintable(w.lastError()));
    QFile r(md);
    QVERIFY(r.open(QIODevice::ReadOnly));
    const QString report = QString::fromUtf8(r.readAll());
    QVERIFY2(report.contains("## Why the loader is slow"), qPrintable(report));
    for (const QString& l : lines) QVERIFY2(report.contains("- " + l.mid(QString("loader: ").size())), qPrintable(l));
    // Another trace, with no loader document: the tab goes.
    const QString plain = tmp_.filePath("plain.trace.json");
    trace.erase("tunebench");
    QFile g(plain);
    QVERIFY(g.open(QIODevice::WriteOnly));
    g.write(QByteArray::fromStdString(trace.dump()));
    g.close();
    QVERIFY(tbtest::openTraceAndWait(w, plain, 30000).isEmpty());
    QVERIFY(w.analysis()->loaderText().isEmpty());
    QCOMPARE(w.analysis()->findChild<QTabWidget*>()->indexOf(w.analysis()->loaderPage()), -1);
  }
};

QTEST_MAIN(TestAnalysisPanel)
#include "test_analysis_panel.moc"
