// Screenshot under Xvfb (ctest runs it with xvfb-run when installed; offscreen otherwise): the main window with
// the Kineto test trace open and a short fake run with one toggle, saved as PNGs next to the test binary
// (tunebench_window.png, tunebench_timeline.png) for a human to look at.
#include <QSignalSpy>
#include <QSpinBox>
#include <QtTest>

#include "ui/main_window.h"
#include "ui/timeline_widget.h"
#include "ui/toggles_panel.h"
#include "ui_test_util.h"

using namespace tb::ui;

class TestScreenshot : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName("TuneBenchScreenshot");
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, QDir::tempPath() + "/tunebench-screenshot-settings");
    QSettings().clear();
    initResources();
    qputenv("TUNEBENCH_THEME", "dark");
    applyPalette();
  }
  void screenshot() {
    const QString trace = tbtest::kinetoTrace();
    if (trace.isEmpty()) QSKIP("kineto_train_step_rank0.json.gz not found");
    MainWindow w;
    w.setQuiet(true);
    w.resize(1600, 1000);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w) || QGuiApplication::platformName() == "offscreen");
    const QString opened = tbtest::openTraceAndWait(w, trace, 60000);
    QVERIFY2(opened.isEmpty(), qPrintable(opened));
    // The opened file as a profiler user first sees it: a few steps, the analysis panel, a kernel found.
    QTest::qWait(600);
    w.findOnTimeline("volta_sgemm_64x64_nt");
    QTest::qWait(600);
    QVERIFY(w.grab().toImage().save(QStringLiteral(TB_SCREENSHOT_DIR) + "/tunebench_trace.png"));
    if (!tbtest::python().isEmpty()) {
      w.startProcess(tbtest::python(), {tbtest::fakeChild(), "--step-ms", "8"});
      QElapsedTimer t;
      t.start();
      while (w.run()->record().steps.size() < 30 && t.elapsed() < 15000) QTest::qWait(20);
      if (auto* sb = qobject_cast<QSpinBox*>(w.toggles()->editorFor("workers"))) sb->setValue(4);
      while (w.run()->record().steps.size() < 70 && t.elapsed() < 30000) QTest::qWait(20);
      w.stopRun();
      QTest::qWait(500);
    }
    // Zoom to one step in the middle so kernels and ranges are readable.
    auto d = w.timeline()->data();
    const double span = double(d->t_max - d->t_min);
    w.timeline()->setView(d->t_min + span * 0.450, d->t_min + span * 0.456);
    QTest::qWait(600);  // the draw list is built on a worker thread
    // Click a kernel launch in view so the screenshot shows its launch -> kernel flow arrow.
    {
      const auto rows = layoutRows(*d);
      const TimeMapper& m = w.timeline()->mapper();
      bool clicked = false;
      for (size_t r = 0; r < rows.size() && !clicked; ++r) {
        if (rows[r].group) continue;  // a device's header row has no events
        const Lane& L = d->tracks[rows[r].track].lanes[rows[r].lane];
        for (size_t i = L.firstEndingAtOrAfter(int64_t(m.start())); i < L.size() && L.start[i] < m.end(); ++i) {
          if (L.cat[i] != EventCat::Runtime || !L.corr[i] || m.toPx(double(L.end[i])) - m.toPx(double(L.start[i])) < 20) continue;
          const double mid = 0.5 * double(L.start[i] + L.end[i]);
          if (m.toPx(mid) < 300 || m.toPx(mid) > m.width() - 300) continue;
          const QPoint pos(TimelineWidget::kGutterWidth + int(m.toPx(mid)),
                           TimelineWidget::kRulerHeight + int(r) * TimelineWidget::kRowHeight + TimelineWidget::kRowHeight / 2);
          QTest::mouseClick(w.timeline(), Qt::LeftButton, Qt::NoModifier, pos);
          clicked = true;
          break;
        }
      }
      QVERIFY(clicked);
      QTest::qWait(100);
    }
    const QString dir = QStringLiteral(TB_SCREENSHOT_DIR);
    const QImage win = w.grab().toImage();
    QVERIFY(win.save(dir + "/tunebench_window.png"));
    const QImage tl = w.timeline()->toImage(QSize(1600, 700));
    QVERIFY(tl.save(dir + "/tunebench_timeline.png"));
    // Not a blank image: the timeline has many distinct colours.
    QSet<QRgb> colours;
    for (int y = 0; y < tl.height(); y += 7)
      for (int x = 0; x < tl.width(); x += 7) colours.insert(tl.pixel(x, y));
    QVERIFY2(colours.size() > 20, qPrintable(QString::number(colours.size())));
    qInfo("screenshots: %s/tunebench_window.png, tunebench_timeline.png", qPrintable(dir));
  }
};

QTEST_MAIN(TestScreenshot)
#include "test_screenshot.moc"
