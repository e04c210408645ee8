// What the Loader tab's picture shows, from the verdict alone (no widget): the bars, their words and their
// exact figures, and the one line of advice above them. The painting is ui/src/loader_view.cpp.
#include <QObject>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "ui/loader_view.h"

namespace tb::ui {
namespace {

// The loading's colours: a short supply in the timeline's loader-stall red, one that feeds the model in compute
// green; the time slices in the time bar's colours for the same kinds of time (compute green for the CPU, sync
// orange for a wait to run).
const QColor kCpu(0x3c, 0xa5, 0x5c);
const QColor kCpuWait(0xe6, 0x7e, 0x22);
const QColor kReads(0x4f, 0xa3, 0xff);
const QColor kIdle(0x90, 0x96, 0xa0);
const QColor kShort(0xd9, 0x53, 0x4f);
const QColor kFeeds(0x3c, 0xa5, 0x5c);
const QColor kUnknown(0x4f, 0xa3, 0xff);

bool positive(double x) { return std::isfinite(x) && x > 0; }

// As lines() writes a part's time: two decimals under 10 ms.
QString ms(double v) { return QString::number(v, 'f', v < 10 ? 2 : 1) + QObject::tr(" ms"); }
QString pct(double share) { return QString::number(100 * share, 'f', 0) + '%'; }
QString pct1(double share) { return QString::number(100 * share, 'f', 1) + '%'; }
QString sps(double v) { return QString::number(v, 'f', 0); }
QString workersOf(int n) { return n == 1 ? QObject::tr("1 worker") : QObject::tr("%1 workers").arg(n); }

void addParts(const tb::client::LoaderVerdict& v, LoaderPicture& pic) {
  const double batch = v.samples > 0 && v.batches > 0 ? double(v.samples) / double(v.batches) : 0;
  pic.parts_title = v.workers > 0 ? v.workers == 1 ? QObject::tr("Where a sample's time goes, in the worker")
                                                  : QObject::tr("Where a sample's time goes, in each of %1").arg(workersOf(v.workers))
                                  : QObject::tr("Where a sample's time goes, in the training process (num_workers=0)");
  for (const auto& p : v.parts) {
    LoaderPartBar b;
    b.label = QString::fromStdString(p.name);
    b.length = p.per_batch ? (batch > 0 ? p.ms / batch : 0) : p.ms;
    b.value = (p.per_batch ? QObject::tr("%1 a batch").arg(ms(p.ms)) : ms(p.ms)) + QStringLiteral(" · ") + pct(p.share);
    b.tip = p.per_batch ? QObject::tr("%1: %2 ms a batch (%3 ms a sample at %4 samples a batch), %5 of the loading")
                              .arg(b.label)
                              .arg(p.ms, 0, 'f', 3)
                              .arg(b.length, 0, 'f', 3)
                              .arg(batch, 0, 'f', 1)
                              .arg(pct1(p.share))
                        : QObject::tr("%1: %2 ms a sample, %3 of the loading").arg(b.label).arg(p.ms, 0, 'f', 3).arg(pct1(p.share));
    if (!p.where.empty()) b.tip += QObject::tr("\nat %1").arg(QString::fromStdString(p.where));
    pic.parts.push_back(b);
  }
}

// Workers: their life, busy (split by what the busy time did) and idle. The training process: its loading
// time only (between loads it trains, which is no idle of the loader's).
void addTime(const tb::client::LoaderVerdict& v, LoaderPicture& pic) {
  const bool workers = v.workers > 0;
  const double busy = workers ? std::clamp(v.busy_share, 0.0, 1.0) : 1.0;
  const double cpu = std::clamp(v.cpu_share, 0.0, 1.0);
  const double wait = v.cpu_wait_share >= 0 ? std::clamp(v.cpu_wait_share, 0.0, 1.0 - cpu) : -1;
  const QString of = workers ? QObject::tr("of their life") : QObject::tr("of its loading time");
  auto slice = [&](const QString& label, double share_of_busy, const QColor& c) {
    const double share = busy * share_of_busy;
    QString tip = QStringLiteral("%1: %2 %3").arg(label, pct1(share), of);
    if (workers) tip += QObject::tr(" (%1 of their busy time)").arg(pct1(share_of_busy));
    pic.time.push_back({label, tip, share, c});
  };
  pic.time_title = workers ? QObject::tr("What the %1 did over their life").arg(workersOf(v.workers))
                           : QObject::tr("What the training process's loading time went to");
  slice(QObject::tr("on the CPU"), cpu, kCpu);
  if (wait >= 0) {
    slice(QObject::tr("waiting for a CPU"), wait, kCpuWait);
    slice(QObject::tr("on reads or sleeps"), std::max(0.0, 1 - cpu - wait), kReads);
  } else {
    slice(QObject::tr("reads, sleeps or waiting for a CPU"), 1 - cpu, kReads);
  }
  if (workers)
    pic.time.push_back({QObject::tr("idle"),
                        QObject::tr("idle: %1 of their life, waiting for room in the queue or the next pass").arg(pct1(1 - busy)),
                        1 - busy, kIdle});
}

void addRates(const tb::client::LoaderVerdict& v, LoaderPicture& pic) {
  const bool fed_known = positive(v.consume_sps);
  auto color = [&](double s) { return !fed_known ? kUnknown : s >= v.consume_sps ? kFeeds : kShort; };
  if (positive(v.supply_sps)) {
    // Loading in the training process is no supply beside the model: it loads between steps, so its rate and the
    // model's add up per sample rather than race, and no colour says whether it feeds the model.
    const bool beside = v.workers > 0;
    const QString who = beside ? workersOf(v.workers) : QObject::tr("num_workers=0");
    const QString tip = beside ? QObject::tr("what the loaders supply now (%1): %2 samples/s").arg(who).arg(v.supply_sps, 0, 'f', 1)
                               : QObject::tr("how fast the training process loads, between its steps: %1 samples/s "
                                             "(the training waits while it loads)").arg(v.supply_sps, 0, 'f', 1);
    pic.rates.push_back({QObject::tr("now, %1").arg(who), tip, v.supply_sps, beside ? color(v.supply_sps) : kUnknown});
  }
  if (const double s = advisedSupply(v); s > 0) {
    const auto a = v.advice();
    const QString sw = QStringLiteral("%1=%2").arg(QString::fromStdString(a.knob), QString::fromStdString(a.value));
    pic.rates.push_back({QObject::tr("with %1").arg(sw),
                         QObject::tr("with %1, the advised switch: %2 samples/s (the figure its advice states)")
                             .arg(sw)
                             .arg(s, 0, 'f', 1),
                         s, color(s)});
  }
  if (fed_known)
    pic.marks.push_back({QObject::tr("model takes %1").arg(sps(v.consume_sps)),
                         QObject::tr("what the model takes when it never waits for a batch: %1 samples/s").arg(v.consume_sps, 0, 'f', 1),
                         v.consume_sps, QColor(), false});
  if (positive(v.run_sps))
    pic.marks.push_back({QObject::tr("run measured %1").arg(sps(v.run_sps)),
                         QObject::tr("what this run measured, loading included: %1 samples/s").arg(v.run_sps, 0, 'f', 1),
                         v.run_sps, QColor(), true});
  if (!pic.rates.empty() || !pic.marks.empty()) pic.rates_title = QObject::tr("Samples/s: what the loaders supply against what the model takes");
}

}  // namespace

double advisedSupply(const tb::client::LoaderVerdict& v) {
  if (!v.valid) return 0;
  const auto a = v.advice();
  if (a.knob != "workers") return 0;
  // Crowded workers are advised fewer, and their advice states what that many supply; otherwise it states what a
  // run with the advised count should measure (LoaderVerdict::advice).
  const double s = v.crowded() ? v.supply_with(std::atoi(a.value.c_str())) : v.expect_sps;
  return positive(s) ? s : 0;
}

LoaderPicture loaderPicture(const tb::client::LoaderVerdict& v) {
  LoaderPicture pic;
  if (!v.valid) return pic;
  addParts(v, pic);
  addTime(v, pic);
  addRates(v, pic);
  return pic;
}

QString loaderAdviceLine(const tb::client::LoaderVerdict& v) {
  if (!v.valid) return {};
  const auto a = v.advice();
  if (!a.known)
    return QObject::tr("no loader switch: the run's rate or a sample's time was not measured, so no switch can be "
                       "bounded (the details say what was)");
  const QString sw = a.knob.empty()
                         ? QObject::tr("no loader switch")
                         : QStringLiteral("%1=%2").arg(QString::fromStdString(a.knob), QString::fromStdString(a.value));
  return QObject::tr("%1: %2; at most %3x this run's throughput")
      .arg(sw, QString::fromStdString(a.why))
      .arg(a.at_most, 0, 'f', 2);
}

}  // namespace tb::ui
