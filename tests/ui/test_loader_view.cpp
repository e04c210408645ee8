// The Loader tab as a picture (offscreen): one line of what to change above the bars, a bar a part in the
// verdict's order, the loading processes' time split, supply against demand, the sentences collapsed under
// "Details"; an invalid verdict shows nothing. The tab is also grabbed to loader_tab.png (and the other verdicts'
// pictures beside it) next to the test binary, for a human to look at.
#include <QFile>
#include <QLabel>
#include <QScrollArea>
#include <QScrollBar>
#include <QTabWidget>
#include <QTableView>
#include <QToolButton>
#include <QtTest>

#include <nlohmann/json.hpp>

#include "client/loader_verdict.h"
#include "ui/analysis_panel.h"
#include "ui/loader_view.h"
#include "ui/main_window.h"

using namespace tb::ui;
using tb::client::LoaderVerdict;

namespace {

// One loading process's report (docs/protocol.md, done.summary.loader_parts), as tests/client's helper makes it:
// its parts as {name, ms a sample (collate: a batch)}, `cpu` of the busy time on the CPU, `run_delay` of it
// waiting for a CPU (< 0: not measured), over `life_ms`.
nlohmann::json proc(const std::string& who, int samples, int batches, std::vector<std::pair<std::string, double>> parts,
                    double cpu, double run_delay, double life_ms) {
  nlohmann::json p = {{"who", who}, {"pid", 100}, {"samples", samples}, {"batches", batches}};
  double busy = 0;
  for (const auto& [name, ms] : parts) {
    const int n = name == "collate" ? batches : samples;
    p["parts"][name] = {{"ns", int64_t(ms * 1e6 * n)}, {"calls", n}};
    busy += ms * 1e6 * n;
  }
  p["busy_ns"] = int64_t(busy);
  p["cpu_ns"] = int64_t(busy * cpu);
  if (run_delay >= 0) p["run_delay_ns"] = int64_t(busy * run_delay);
  p["life_ns"] = int64_t(life_ms * 1e6);
  return p;
}

// Sixteen workers on two cores (an ImageFolder trainer's default): each waits 70% of its busy time for a CPU,
// busy three quarters of its life.
LoaderVerdict crowded() {
  nlohmann::json parts = nlohmann::json::array();
  for (int w = 0; w < 16; ++w)
    parts.push_back(proc("worker " + std::to_string(w), 16, 1,
                         {{"open (PIL)", 120.0}, {"RandomResizedCrop", 45.0}, {"ToTensor", 8.0}, {"collate", 16.0}}, 0.15,
                         0.70, 3800));
  return tb::client::loader_verdict(parts, 256, 4'000'000'000, 1'000'000'000, 2, 5.0);
}

// Two workers too few on eight cores: a costly blur, the decode, collate a batch; no wait for a CPU measured.
LoaderVerdict tooFew() {
  nlohmann::json parts = nlohmann::json::array();
  for (int w = 0; w < 2; ++w)
    parts.push_back(proc("worker " + std::to_string(w), 128, 4,
                         {{"SlowBlur", 6.0}, {"read + decode (PIL)", 1.5}, {"Normalize", 0.3}, {"collate", 2.4}}, 0.9,
                         -1, 1200));
  return tb::client::loader_verdict(parts, 256, 2'000'000'000, 900'000'000, 8, 2.0);
}

// Loading in the training process (num_workers=0).
LoaderVerdict mainProcess() {
  const auto parts = nlohmann::json::array(
      {proc("main", 256, 8, {{"read + decode (PIL)", 2.1}, {"RandomResizedCrop", 1.4}, {"collate", 3.0}}, 0.95, -1, 2000)});
  return tb::client::loader_verdict(parts, 256, 2'000'000'000, 700'000'000, 4, 3.0);
}

QStringList linesOf(const LoaderVerdict& v) {
  QStringList out;
  for (const auto& l : v.lines()) out << QString::fromStdString(l);
  return out;
}

}  // namespace

class TestLoaderView : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { initResources(); }

  // The picture, widget-free: a bar a part in the verdict's order, collate a batch; the time split sums to the
  // workers' life; the supply now and with the advised workers against the model's rate and the run's.
  void pictureOfCrowdedWorkers() {
    const LoaderVerdict v = crowded();
    QVERIFY(v.valid);
    QVERIFY(v.crowded());
    const LoaderPicture pic = loaderPicture(v);
    QCOMPARE(pic.parts.size(), v.parts.size());
    for (size_t i = 0; i < v.parts.size(); ++i) QCOMPARE(pic.parts[i].label, QString::fromStdString(v.parts[i].name));
    for (const auto& b : pic.parts)
      if (b.label == "collate") QVERIFY2(b.value.contains("a batch"), qPrintable(b.value));
    double sum = 0;
    QStringList labels;
    for (const auto& s : pic.time) sum += s.share, labels << s.label;
    QVERIFY(std::abs(sum - 1) < 1e-9);
    QCOMPARE(labels, QStringList({"on the CPU", "waiting for a CPU", "on reads or sleeps", "idle"}));
    const auto a = v.advice();
    QCOMPARE(a.knob, std::string("workers"));
    QCOMPARE(pic.rates.size(), size_t(2));
    QCOMPARE(pic.rates[1].label, QString("with workers=%1").arg(QString::fromStdString(a.value)));
    QVERIFY(std::abs(pic.rates[0].sps - v.supply_sps) < 1e-9);
    QCOMPARE(pic.marks.size(), size_t(2));
    QVERIFY(std::abs(pic.marks[0].sps - v.consume_sps) < 1e-9);
    QVERIFY(std::abs(pic.marks[1].sps - v.run_sps) < 1e-9);
    // No wait for a CPU measured: the CPU, and one slice for the rest.
    QStringList unmeasured;
    for (const auto& s : loaderPicture(tooFew()).time) unmeasured << s.label;
    QCOMPARE(unmeasured, QStringList({"on the CPU", "reads, sleeps or waiting for a CPU", "idle"}));
  }

  // The tab: the one line (the advice's switch, why and bound), a drawn bar a part top to bottom, the sentences
  // collapsed under Details and whole there; an invalid verdict then shows no bars and no tab.
  void tabShowsTheAdviceThePictureAndCollapsedDetails() {
    const LoaderVerdict v = crowded();
    AnalysisPanel panel;
    panel.resize(900, 700);
    const int least = panel.minimumSizeHint().height();
    panel.setLoader(v);
    // The picture scrolls in its tab: the dock can still be made as short as before.
    QVERIFY2(panel.minimumSizeHint().height() <= least + 20, qPrintable(QString::number(panel.minimumSizeHint().height())));
    panel.show();
    QVERIFY(panel.showTab("Loader"));
    const auto a = v.advice();
    const QString line = panel.loaderAdviceText();
    QVERIFY2(line.startsWith(QString("workers=%1: ").arg(QString::fromStdString(a.value))), qPrintable(line));
    QVERIFY2(line.contains(QString::fromStdString(a.why)), qPrintable(line));
    QVERIFY2(line.contains(QString("at most %1x").arg(a.at_most, 0, 'f', 2)), qPrintable(line));
    auto* advice = panel.findChild<QLabel*>("analysis_loader_advice");
    QVERIFY(advice && advice->isVisible());
    QVERIFY(!advice->text().contains('\n'));  // one line of words (wrapped by the width only)
    const auto bars = panel.loaderView()->partBarRects();
    QCOMPARE(bars.size(), v.parts.size());
    for (size_t i = 1; i < bars.size(); ++i) QVERIFY(bars[i].top() > bars[i - 1].top());
    // Costliest first: each bar no longer than the one above it.
    for (size_t i = 1; i < bars.size(); ++i) QVERIFY(bars[i].width() <= bars[i - 1].width());
    QVERIFY(panel.loaderView()->height() >= panel.loaderView()->heightForWidth(panel.loaderView()->width()));
    QVERIFY2(panel.loaderView()->toolTipAt(bars[0].center()).contains("ms a sample"),
             qPrintable(panel.loaderView()->toolTipAt(bars[0].center())));
    auto* details = panel.loaderDetailsButton();
    QVERIFY(!details->isChecked());
    auto* text = panel.findChild<QLabel*>("analysis_loader_label");
    QVERIFY(!text->isVisible());
    QCOMPARE(panel.loaderText(), linesOf(v).join('\n'));
    details->click();
    QVERIFY(text->isVisible());
    QVERIFY(panel.loaderTable()->isVisible());

    panel.setLoader(LoaderVerdict{});
    QVERIFY(panel.loaderView()->picture().empty());
    QVERIFY(panel.loaderView()->partBarRects().empty());
    QVERIFY(panel.loaderAdviceText().isEmpty());
    QVERIFY(!panel.showTab("Loader"));
  }

  // Advice without a switch says so in the same place.
  void noSwitchIsSaid() {
    nlohmann::json parts = nlohmann::json::array({proc("worker 0", 64, 8, {{"dataset code", 1.0}}, 1.0, 0, 400)});
    const LoaderVerdict v = tb::client::loader_verdict(parts, 64, 1'000'000'000, 10'000'000, 4, 1.0);
    QVERIFY(v.valid);
    const QString line = loaderAdviceLine(v);
    QVERIFY2(line.startsWith("no loader switch: "), qPrintable(line));
    QVERIFY2(line.contains("at most "), qPrintable(line));
    QCOMPARE(advisedSupply(v), 0.0);
    QCOMPARE(loaderPicture(v).rates.size(), size_t(1));
  }

  // What a user sees: the tab at the analysis dock's size, in the dark theme the screenshots use, for three
  // verdicts (PNGs next to the test binary).
  void screenshots() {
    qputenv("TUNEBENCH_THEME", "dark");
    applyPalette();
    const struct {
      const char* name;
      LoaderVerdict v;
      int width;
    } cases[] = {{"loader_tab.png", crowded(), 1100},
                 {"loader_tab_too_few.png", tooFew(), 1100},
                 {"loader_tab_main.png", mainProcess(), 1100},
                 {"loader_tab_narrow.png", tooFew(), 480}};
    for (const auto& [name, v, width] : cases) {
      AnalysisPanel panel;
      panel.resize(width, 640);
      panel.setLoader(v);
      panel.showTab("Loader");
      panel.show();
      QTest::qWait(50);
      QVERIFY(panel.grab().save(QStringLiteral(TB_SCREENSHOT_DIR "/") + name));
    }
    // A short dock: the tab scrolls, and nothing in it is squeezed.
    {
      AnalysisPanel panel;
      panel.resize(1100, 380);
      panel.setLoader(crowded());
      panel.showTab("Loader");
      panel.show();
      QTest::qWait(50);
      auto* area = qobject_cast<QScrollArea*>(panel.loaderPage());
      QVERIFY(area && area->verticalScrollBar()->maximum() > 0);
      QVERIFY(panel.loaderTable()->height() >= panel.loaderTable()->minimumHeight());
      QVERIFY(panel.loaderView()->height() >= panel.loaderView()->heightForWidth(panel.loaderView()->width()));
      QVERIFY(panel.grab().save(QStringLiteral(TB_SCREENSHOT_DIR "/loader_tab_short.png")));
    }
    // The crowded verdict as a script's trace carries it (its "loader" document), for the whole window:
    // `tunebench loader_tab.trace.json --tab Loader --screenshot F --quit-after 3`.
    nlohmann::json trace = {{"displayTimeUnit", "ns"},
                            {"tunebench", {{"documents", {{"loader", crowded().to_json()}}}}},
                            {"traceEvents", nlohmann::json::array()}};
    for (int s = 0; s < 8; ++s)
      trace["traceEvents"].push_back({{"ph", "X"}, {"cat", "user_annotation"}, {"name", "ProfilerStep#" + std::to_string(s)},
                                      {"pid", 1}, {"tid", 1}, {"ts", s * 20000}, {"dur", 19000}});
    QFile f(QStringLiteral(TB_SCREENSHOT_DIR "/loader_tab.trace.json"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray::fromStdString(trace.dump()));
  }
};

QTEST_MAIN(TestLoaderView)
#include "test_loader_view.moc"
