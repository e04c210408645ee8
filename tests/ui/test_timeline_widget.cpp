// The timeline widget's interaction (offscreen): keyboard zoom/pan/fit, range selection with shift+drag and
// zoom to it, evidence selection, that the asynchronous draw-list build lands and paints, and what a selected
// compiled kernel's details say.
#include <QSignalSpy>
#include <QtTest>

#include <QTemporaryDir>

#include "profiler/compile_lane.h"
#include "profiler/trace.h"
#include "ui/trace_loader.h"
#include "ui/timeline_widget.h"

using namespace tb::ui;

class TestTimelineWidget : public QObject {
  Q_OBJECT
 private slots:
  void keyboardAndSelection() {
    TimelineWidget w;
    w.resize(1200, 500);
    w.show();
    auto d = makeSyntheticTimeline(50000);
    w.setData(d);
    const double full = w.mapper().span();
    QVERIFY(full >= double(d->t_max - d->t_min));
    QTest::keyClick(&w, Qt::Key_W);
    QVERIFY(w.mapper().span() < full * 0.8);
    const double s0 = w.mapper().start();
    QTest::keyClick(&w, Qt::Key_D);
    QVERIFY(w.mapper().start() > s0);
    QTest::keyClick(&w, Qt::Key_A);
    QVERIFY(qAbs(w.mapper().start() - s0) < 1e-3 * full);
    QTest::keyClick(&w, Qt::Key_S);
    QTest::keyClick(&w, Qt::Key_F);
    QVERIFY(qAbs(w.mapper().span() - full) < 1e-6 * full);
    QVERIFY(w.userInteracted());
    // Shift+drag selects a range; Z zooms to it.
    QSignalSpy sel(&w, &TimelineWidget::selectionChanged);
    const int x0 = TimelineWidget::kGutterWidth + 300, x1 = TimelineWidget::kGutterWidth + 500;
    QTest::mousePress(&w, Qt::LeftButton, Qt::ShiftModifier, QPoint(x0, 100));
    QMouseEvent move(QEvent::MouseMove, QPointF(x1, 100), w.mapToGlobal(QPointF(x1, 100)), Qt::NoButton, Qt::LeftButton, Qt::ShiftModifier);
    QCoreApplication::sendEvent(&w, &move);
    QTest::mouseRelease(&w, Qt::LeftButton, Qt::ShiftModifier, QPoint(x1, 100));
    QVERIFY(w.hasSelection());
    QCOMPARE(sel.count(), 1);
    const auto [a, b] = w.selection();
    QVERIFY(b > a);
    QTest::keyClick(&w, Qt::Key_Z);
    QVERIFY(w.mapper().start() <= double(a) && w.mapper().end() >= double(b));
    QVERIFY(w.mapper().span() < (b - a) * 1.2);
    QTest::keyClick(&w, Qt::Key_Escape);
    QVERIFY(!w.hasSelection());
    // Evidence from a finding: selected and in view.
    w.selectInterval(d->t_min + 1000000, d->t_min + 1500000);
    QVERIFY(w.hasSelection());
    QVERIFY(w.mapper().start() <= d->t_min + 1000000 && w.mapper().end() >= d->t_min + 1500000);
  }
  // A live view rolls over the last steps: each step range is named with its absolute index.
  void stepsAreNamedWithTheirIndex() {
    auto d = std::make_shared<TimelineData>();
    d->names = {"", "step", "forward"};
    d->args = {"", "arg: 1234"};
    Track t;
    t.name = "train";
    t.lanes.resize(1);
    t.lanes[0].push(1000, 5000, 1, EventCat::Step, 0, 1);
    t.lanes[0].push(1200, 2000, 2, EventCat::Range, 0, 0);
    t.lanes[0].finalize();
    d->tracks.push_back(t);
    d->t_min = 1000;
    d->t_max = 5000;
    TimelineWidget w;
    w.setData(d);
    QCOMPARE(w.eventLabel(0, 0, 0), QString("step 1234"));
    QCOMPARE(w.eventLabel(0, 0, 1), QString("forward"));
    QCOMPARE(w.eventLabel(0, 0, 7), QString());
  }
  // A compiled kernel selected (a click, or Ctrl+F as here: one description) says the ops it fuses and the
  // user's lines it computes, from the compile lane; a kernel the lane does not know, its name's ops.
  void aCompiledKernelsDetailsSayItsOpsAndTheUsersLines() {
    namespace p = tb::prof;
    p::Trace t;
    const uint32_t train = t.track_for(p::TrackKind::CpuThread, 1, 1, "train");
    auto range = [&](const char* name, int64_t a, int64_t b) {
      p::Event e;
      e.kind = p::EventKind::Range;
      e.name = t.intern(name);
      e.start_ns = a;
      e.end_ns = b;
      t.add_event(train, e);
    };
    range("ProfilerStep#0", 0, 100'000);
    range("graph_0_cpp_fused_add_relu_0", 10'000, 30'000);
    range("graph_0_cpp_fused_mul_sum_1", 40'000, 50'000);
    p::LaneCompile c;
    c.id = "0/0";
    c.frame = "forward";
    c.file = "/work/train.py";
    c.line = 14;
    c.t_ns = 0;
    c.dur_ns = 5'000;
    p::LaneKernel k;
    k.name = "cpp_fused_add_relu_0";
    k.range = "graph_0_cpp_fused_add_relu_0";
    k.lines = {{"/work/train.py", 19, "y = torch.relu(y + 1)"}};
    c.kernels = {k};
    p::add_compile_lane(t, std::vector<p::LaneCompile>{c}, 0);
    t.finalize();
    TimelineWidget w;
    w.resize(1000, 400);
    w.show();
    w.setData(toTimeline(t, nullptr));
    QSignalSpy sel(&w, &TimelineWidget::eventSelected);
    QVERIFY(w.findNext("graph_0_cpp_fused_add_relu"));
    QCOMPARE(sel.count(), 1);
    const QString d = sel.at(0).at(0).toString();
    QVERIFY2(d.contains("fuses add, relu (its name&#x27;s ops)") || d.contains("fuses add, relu (its name's ops)"),
             qPrintable(d));
    QVERIFY2(d.contains("/work/train.py:19  y = torch.relu(y + 1)"), qPrintable(d));
    QVERIFY(w.findNext("graph_0_cpp_fused_mul_sum"));
    const QString other = sel.at(1).at(0).toString();
    QVERIFY2(other.contains("fuses mul, sum"), qPrintable(other));
    QVERIFY2(other.contains("no user line known"), qPrintable(other));
  }
  void asyncBuildLandsAndPaints() {
    TimelineWidget w;
    w.resize(1000, 400);
    w.show();
    w.setData(makeSyntheticTimeline(100000));
    QTRY_VERIFY_WITH_TIMEOUT(!w.drawList().items.empty(), 10000);
    const QImage img = w.toImage(QSize(1000, 400));
    QCOMPARE(img.size(), QSize(1000, 400));
    QVERIFY(w.lastPaintMs() > 0);
    // New data replaces the old draw list (no stale items from the previous trace).
    auto tiny = std::make_shared<TimelineData>();
    Track t;
    t.name = "only";
    t.lanes.resize(1);
    t.lanes[0].push(0, 1000, tiny->intern("x"), EventCat::Kernel);
    tiny->tracks.push_back(std::move(t));
    tiny->finalize();
    w.setData(tiny);
    QTRY_COMPARE_WITH_TIMEOUT(int(w.drawList().items.size()), 1, 10000);
  }
  // A script's validation between epochs (`## outside training ##` on the training thread): its own class,
  // a grey column over the timeline with its total in the gutter's foot, apart from the steps.
  void outsideTrainingIsItsOwnClass() {
    QTemporaryDir dir;
    const QString path = dir.filePath("script.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    QString ev;
    auto x = [&](const QString& name, int ts, int dur) {
      ev += QStringLiteral("%1{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"%2\",\"pid\":1,\"tid\":1,"
                           "\"ts\":%3,\"dur\":%4}")
                .arg(ev.isEmpty() ? "" : ",").arg(name).arg(ts).arg(dur);
    };
    for (int i = 0; i < 6; ++i) x(QStringLiteral("ProfilerStep#%1").arg(i), i * 1000 + (i >= 3 ? 3000 : 0), 1000);
    x("## outside training ##", 3000, 3000);  // three steps' worth of validation after epoch 1
    f.write(("{\"traceEvents\":[" + ev + "]}").toUtf8());
    f.close();
    const LoadedTrace t = loadTraceFile(path);
    QVERIFY2(t.ok, qPrintable(t.error));
    QCOMPARE(t.analysis->outside_training_count, 1u);
    QCOMPARE(t.timeline->outside_count, 1);
    QCOMPARE(t.timeline->outside_total_ns, int64_t(3'000'000));
    int bands = 0;
    for (const Band& b : t.timeline->bands)
      if (b.kind == BandKind::OutsideTraining) {
        ++bands;
        QCOMPARE(b.end - b.start, int64_t(3'000'000));
      }
    QCOMPARE(bands, 1);
    TimelineWidget w;
    w.resize(1000, 400);
    w.show();
    w.setData(t.timeline);
    QTRY_VERIFY_WITH_TIMEOUT(!w.drawList().items.empty(), 10000);
    const QImage img = w.toImage(QSize(1000, 400));
    // Below the rows, the column in the middle of the validation is lighter than the ground beside it.
    const auto px = [&](int64_t ns) { return TimelineWidget::kGutterWidth + int(w.mapper().toPx(double(ns))); };
    const int y = 300;
    const QColor in = img.pixelColor(px(t.timeline->t_min + 4'500'000), y);
    const QColor out = img.pixelColor(px(t.timeline->t_min + 7'500'000), y);
    QVERIFY2(in.lightness() > out.lightness() + 20, qPrintable(QString("%1 vs %2").arg(in.name(), out.name())));
  }
};

QTEST_MAIN(TestTimelineWidget)
#include "test_timeline_widget.moc"
