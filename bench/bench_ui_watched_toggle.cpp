// Bench (not run in CI; a QtTest program built with -DTUNEBENCH_BENCH=ON): watching a script must not change
// what a toggle shows. A real script over a DataLoader (steps of ~40 ms, the shape of a VAE on MNIST) is opened
// in the window twice, once with the timeline off and once watched (the default chunks), and the same toggle
// (loader workers 0 -> 2) is clicked in each. It prints both Compare rows' ratios with their intervals, and
// fails when the toggle did not show (ratio <= 1.3) or the two disagree beyond their noise: the figures come
// from untraced steps, and sampling keeps the chunks' pauses rare. That traced steps stay out of a Compare
// row's figures is a logic test (tests/ui/test_live_panels.cpp).
// usage: QT_QPA_PLATFORM=offscreen build/bench/bench_ui_watched_toggle
#include <QComboBox>
#include <QFile>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

#include "ui/compare_panel.h"
#include "ui/main_window.h"
#include "ui/segments.h"
#include "ui/toggles_panel.h"
#include "ui_test_util.h"

using namespace tb::ui;
using tbtest::measuredSteps;
using tbtest::waitFor;

namespace {

// The loader's time is a sleep per sample (an image read from a slow disk, 1-3 ms), so that the toggle's effect
// (about 2x) does not depend on how many cores the machine has free; the model is a small MLP with Adam. The
// jitter keeps two workers from delivering in lockstep (pairs of batches, one wait long and one short).
constexpr char kScript[] = R"(import random, sys, time, torch
from torch.utils.data import DataLoader, Dataset

class SlowDisk(Dataset):
    def __len__(self):
        return 4096  # one epoch outlasts the test: no worker start at an epoch boundary inside it
    def __getitem__(self, i):
        time.sleep(random.uniform(0.001, 0.003))
        return torch.randn(64), i % 10

model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
loader = DataLoader(SlowDisk(), batch_size=16, shuffle=True)
for epoch in range(int(sys.argv[2])):
    for x, y in loader:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    print(f"epoch {epoch} loss {loss.item():.3f}")
)";

// Steps of config revision `rev` that ran inside a trace chunk (the record's own flags, not the figures').
int tracedSteps(const MainWindow& w, int rev) {
  int n = 0;
  for (const auto& x : w.run()->record().steps) n += x.config_rev == rev && x.traced;
  return n;
}

// Measured steps of `rev` outside every chunk: what the Compare row's figures come from.
int untracedSteps(const MainWindow& w, int rev) {
  int n = 0;
  for (const auto& x : w.run()->record().steps) n += x.config_rev == rev && !x.warmup && !x.traced;
  return n;
}

struct Toggled {
  RatioCI stats;
  int traced = 0;     // traced steps on both sides, as the steps say
  int left_out = 0;   // of them, left out of the figures
  QString trust;
};

}  // namespace

class TestWatchedToggle : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

  // Opens the script with chunks of `trace_every` steps (0: no timeline), measures 60 untraced steps, sets
  // workers=2, measures 60 more and returns the Compare row. Watched, each side also waits for a chunk of its own
  // (the sampler places them some seconds apart), so that the comparison has traced steps on both sides; the 60
  // are untraced ones either way (a side whose first chunks took most of its 60 steps had 2 windows left and no
  // interval, 1 run in 2 on a quiet machine).
  bool toggle(int trace_every, Toggled& out) {
    MainWindow w;
    w.setQuiet(true);
    w.findChild<QSpinBox*>("trace_every")->setValue(trace_every);
    if (!w.openScript(tmp_.filePath("slow_disk.py"), {"--epochs", "1000"})) return false;
    const bool up = waitFor([&] { return (w.toggles()->editorFor("workers") && untracedSteps(w, 0) >= 60 &&
                                          (trace_every == 0 || tracedSteps(w, 0) >= 10)) ||
                                         !w.run()->isRunning(); }, 120000);
    if (!up || !w.run()->isRunning()) {
      qWarning().noquote() << "no baseline:" << w.lastError() << w.run()->stderrTail();
      return false;
    }
    qobject_cast<QSpinBox*>(w.toggles()->editorFor("workers"))->setValue(2);
    const bool after = waitFor([&] { return w.compare()->comparisons().size() == 1 && untracedSteps(w, 1) >= 60 &&
                                        (trace_every == 0 || tracedSteps(w, 1) >= 10); },
                               120000);
    QSignalSpy fin(w.run(), &RunController::finished);
    const auto rows = w.compare()->comparisons();
    w.stopRun();
    waitFor([&] { return fin.count() == 1; }, 15000);
    if (!after || rows.size() != 1) {
      qWarning().noquote() << "no comparison:" << w.lastError() << w.run()->stderrTail();
      return false;
    }
    out.stats = rows[0].stats;
    out.traced = tracedSteps(w, 0) + tracedSteps(w, 1);
    out.left_out = rows[0].traced_left_out;
    out.trust = rows[0].trustText();
    return true;
  }

 private slots:
  void initTestCase() {
    QFile f(tmp_.filePath("slow_disk.py"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(kScript);
  }

  void aToggleWatchedAgreesWithTheSameToggleUnwatched() {
    const QString cli = tbtest::realCliWithEngine();
    if (cli.isEmpty()) QSKIP("no tunebench-cli with the engine (set TUNEBENCH_CLI to one)");
    qputenv("TUNEBENCH_CLI", cli.toUtf8());
    Toggled plain, watched;
    QVERIFY(toggle(0, plain));
    QVERIFY(toggle(20, watched));
    qInfo().noquote() << QString("unwatched x%1 [%2, %3]; watched x%4 [%5, %6], %7 traced steps (%8 left out)")
                             .arg(plain.stats.ratio, 0, 'f', 3).arg(plain.stats.lo, 0, 'f', 3)
                             .arg(plain.stats.hi, 0, 'f', 3).arg(watched.stats.ratio, 0, 'f', 3)
                             .arg(watched.stats.lo, 0, 'f', 3).arg(watched.stats.hi, 0, 'f', 3)
                             .arg(watched.traced).arg(watched.left_out);
    QCOMPARE(plain.traced, 0);
    // The watched run was watched: chunks fell on both sides, and their steps stayed out of the figures.
    QVERIFY2(watched.traced >= 20, qPrintable(watched.trust));
    QVERIFY2(watched.left_out > 0 && watched.trust.contains("traced steps left out"), qPrintable(watched.trust));
    // The toggle does what it does either way (two workers hide most of the loader's sleep).
    QVERIFY2(plain.stats.ratio > 1.3 && watched.stats.ratio > 1.3, qPrintable(watched.trust));
    // And the two agree within their noise: two runs one after the other, each with its interval, differ by at
    // most the two half-widths combined (in log terms, the root of their squares: the interval of a difference
    // of two independent estimates). Two workers deliver batches in pairs, one wait long and one short, so
    // 5-step windows vary by 10-30% here; under a load of 4 the two runs met different loads (x2.335 [2.114,
    // 2.579] and x2.088 [1.915, 2.277]: 0.112 apart, half-widths 0.099 and 0.087).
    const double apart = std::abs(std::log(watched.stats.ratio / plain.stats.ratio));
    const double noise = std::max(std::hypot(std::log(plain.stats.hi / plain.stats.lo) / 2,
                                             std::log(watched.stats.hi / watched.stats.lo) / 2), 0.05);
    QVERIFY2(apart <= noise,
             qPrintable(QString("apart %1 in log terms, noise %2").arg(apart).arg(noise)));
  }
};

QTEST_MAIN(TestWatchedToggle)
#include "bench_ui_watched_toggle.moc"
