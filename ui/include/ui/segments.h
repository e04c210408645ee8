// Splits a run's steps into segments of one configuration revision, and compares each segment with the one
// before it (the live before/after of a toggle). Pure (no widgets): the chart, the compare panel and the
// report export all read the same numbers.
#pragma once

#include <QHash>
#include <limits>
#include <QJsonObject>
#include <QString>
#include <vector>

#include "ui/run_controller.h"
#include "ui/stats.h"

namespace tb::ui {

struct Segment {
  int rev = 0;
  qint64 first_step = 0, last_step = 0;
  std::vector<double> sps;        // samples/s of each measured step (warm-up excluded; for the chart's points)
  std::vector<measure::StepTiming> timings;  // the same steps, for windows (skipped steps keep their time)
  std::vector<measure::Window> windows() const;  // kWindowSteps each
  double throughput() const;      // samples over wall time of the measured steps; NaN when none
  std::vector<double> wait_share; // data_wait_ns / wall_ns of the same steps (the loader stall, per step)
  int warmup_steps = 0;
  int compiling_left_out = 0;     // steps that compiled (torch.compile's one-time cost): in no figure above
  qint64 compile_ns = 0;          // ... and the time they compiled (StepSample::compile_ns summed)
  // Measured steps that ran inside a trace chunk: left out of the figures above when the segment has two
  // windows (kWindowSteps) of untraced ones, counted in them otherwise (a run traced whole has nothing else to show).
  int traced_left_out = 0, traced_in_figures = 0;
  QJsonObject changed;            // knobs changed at the start of this segment ({} for the first)
  QJsonObject previous;           // their values in the segment before (what "revert" sends)
  QString source;                 // "auto-tune" when the tuner's result started it (ConfigChange::source)
  QJsonObject tune;               // that tune's tune_done (RunRecord::tunes), {} for any other segment
  QString label() const;          // "workers=4, pin_memory=on", "auto-tune: workers=4" or "baseline"
  // The window's stamps (StepSample::observer_*) at the first and the last measured step: its CPU share
  // while this segment was measured (observer_cost.h); NaN when fewer than two steps carry them.
  qint64 observer_cpu0 = -1, observer_wall0 = -1, observer_cpu1 = -1, observer_wall1 = -1;
  double observerShare() const;
};

struct Comparison {
  int index = 0;                  // segment index of "after"
  QString change;                 // "workers 0 → 4"
  QJsonObject changed, previous;
  // An Auto-tune's result is one comparison: the tuner's own final alternation (its baseline and the kept
  // configuration, alternating), the figures its dialog and report give; not this run's segment before
  // against the one after (the tune's trials ran apart from the live run, with tracing off).
  bool from_tune = false;
  QString report_html;            // the tune's report, when from_tune
  RatioCI stats;
  double wait_before = 0, wait_after = 0;  // median share of the step spent waiting for data (0..1)
  int traced_left_out = 0, traced_in_figures = 0;  // both sides' (Segment)
  int compiling_left_out = 0;                      // both sides' (Segment)
  // What the change paid once (the after side's compiles, seconds) and the steps after which the time it saves a
  // step pays that back (NaN: nothing paid, or no step faster): the tuner's trials say the same (docs/tuning.md).
  double one_time_s = 0;
  double break_even_steps = std::numeric_limits<double>::quiet_NaN();
  double observer_share = 0;  // the window's CPU share from the first measured step before to the last after (NaN: not stamped)
  // The trust line: each side's noise verdict and the method, and the window's share when above the
  // threshold (observer_cost.h), one line each.
  QString trustText() const;
};

std::vector<Segment> segmentRun(const RunRecord& rec);
std::vector<Comparison> compareSegments(const std::vector<Segment>& segs);
// The change's one-time cost (the compiles of `after`) and its break-even into `c` (its stats already set).
void breakEven(const Segment& before, const Segment& after, Comparison& c);
// An Auto-tune's headline (tune_done) as a RatioCI: before/after the tuner's baseline and final throughput, the
// ratio and interval its final alternation measured; not valid when it kept nothing.
RatioCI tunerStats(const QJsonObject& tune_done);

// The trace chunks that show a toggle's before and after: the last chunk lying inside the segment before it
// and the first inside the segment after (steps of a chunk all of one configuration). Empty paths when the
// run traced no such chunk (trace every N steps, or the segment was too short).
std::pair<QString, QString> chunksForComparison(const RunRecord& rec, const std::vector<Segment>& segs,
                                                const Comparison& c);

// What File ▸ Export hands the report writer (engine/session_report.h, `tunebench-cli report --session`): the
// run's environment, its first and current configuration, every comparison (the tuner's for an Auto-tune) with
// its trust line and the user's decision, each segment's throughput and every tune's report files; `loader`, the
// loader's verdict the window shows (its Loader tab: client::LoaderVerdict::to_json()), when there is one.
QJsonObject sessionDocument(const RunRecord& rec, const std::vector<Comparison>& cmp,
                            const QHash<QString, QString>& decisions = {}, const QJsonObject& loader = {});

}  // namespace tb::ui
