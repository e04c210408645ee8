// Widget-free timeline logic: time <-> pixel mapping, zoom/pan/fit, binary search and LOD folding; and the
// before/after statistics. No window is created.
#include <QtTest>

#include "profiler/analysis.h"
#include "profiler/trace.h"
#include "profiler/trace_io.h"
#include "ui/stats.h"
#include "ui/timeline_model.h"
#include "ui/trace_loader.h"

using namespace tb::ui;

class TestTimelineModel : public QObject {
  Q_OBJECT
 private slots:
  void mappingRoundTrips() {
    TimeMapper m(1000, 11000, 1000);  // 10 ns per px
    QCOMPARE(m.nsPerPx(), 10.0);
    QCOMPARE(m.toPx(1000), 0.0);
    QCOMPARE(m.toPx(6000), 500.0);
    QCOMPARE(m.toNs(250), 3500.0);
    for (double t : {1000.0, 1234.5, 9999.0}) QVERIFY(qAbs(m.toNs(m.toPx(t)) - t) < 1e-6);
  }
  void zoomKeepsAnchorUnderCursor() {
    TimeMapper m(0, 1e6, 1000);
    const double anchor = m.toNs(300);
    m.zoomAround(300, 4.0);
    QVERIFY(qAbs(m.span() - 250000.0) < 1e-6);
    QVERIFY(qAbs(m.toNs(300) - anchor) < 1e-6);
    m.zoomAround(300, 1e12);  // clamps at the minimum span
    QCOMPARE(m.span(), TimeMapper::kMinSpanNs);
  }
  void panAndFit() {
    TimeMapper m(0, 1000, 100);  // 10 ns/px
    m.panPx(10);                 // content moves right: the view goes earlier
    QCOMPARE(m.start(), -100.0);
    m.fit(5000, 6000, 0.0);
    QCOMPARE(m.start(), 5000.0);
    QCOMPARE(m.end(), 6000.0);
    m.setView(-1e9, 1e9);
    m.clampTo(0, 1000);  // far too wide: snaps back to the data (2% margins)
    QCOMPARE(m.start(), -20.0);
    QCOMPARE(m.end(), 1020.0);
    // Panned or zoomed past an end: back on the data, the span kept.
    m.setView(900, 1400);
    m.clampTo(0, 1000);
    QCOMPARE(m.end(), 1020.0);
    QCOMPARE(m.span(), 500.0);
    m.setView(-700, -200);
    m.clampTo(0, 1000);
    QCOMPARE(m.start(), -20.0);
  }
  void binarySearchFindsFirstVisible() {
    Lane L;
    for (int i = 0; i < 1000; ++i) L.push(i * 100, i * 100 + 50, 1, EventCat::Kernel);
    L.finalize();
    QCOMPARE(L.firstEndingAtOrAfter(0), size_t(0));
    QCOMPARE(L.firstEndingAtOrAfter(151), size_t(2));   // event 1 ends at 150
    QCOMPARE(L.firstEndingAtOrAfter(150), size_t(1));
    QCOMPARE(L.firstStartingAtOrAfter(350, 0), size_t(4));
    QCOMPARE(L.firstStartingAtOrAfter(350, 3), size_t(4));
    QCOMPARE(L.firstEndingAtOrAfter(1'000'000), size_t(1000));
    QCOMPARE(L.block_min_start.size(), size_t(4));  // 1000 / 256 rounded up
  }
  void unsortedInputIsSorted() {
    Lane L;
    L.push(300, 400, 3, EventCat::Range);
    L.push(100, 200, 1, EventCat::Range);
    L.finalize();
    QCOMPARE(L.start[0], int64_t(100));
    QCOMPARE(L.name[0], 1u);
    QCOMPARE(L.max_end[1], int64_t(400));
  }
  void foldsSubPixelEventsAndKeepsWideOnes() {
    TimelineData d;
    Track t;
    t.name = "GPU 0 stream 7";
    t.kind = TrackKind::GpuStream;
    t.lanes.resize(1);
    // 100k 1-ns kernels packed 10 ns apart, then one wide kernel.
    for (int i = 0; i < 100000; ++i) t.lanes[0].push(i * 10, i * 10 + 1, d.intern("tiny"), EventCat::Kernel);
    t.lanes[0].push(2'000'000, 3'000'000, d.intern("wide"), EventCat::Kernel);
    d.tracks.push_back(std::move(t));
    d.finalize();
    const auto rows = layoutRows(d);
    QCOMPARE(rows.size(), size_t(2));  // the GPU 0 group's header row, then the stream
    QVERIFY(rows[0].group && !rows[1].group);
    TimeMapper m;
    m.setWidth(1000);
    m.fit(d.t_min, d.t_max, 0.0);  // 3000 ns per px: every tiny kernel is sub-pixel
    const DrawList l = buildDrawList(d, rows, m, 0, rows.size());
    // Folding: far fewer items than events, every event accounted for, the wide one on its own.
    QVERIFY2(l.items.size() <= 10, qPrintable(QString::number(l.items.size())));
    size_t counted = 0;
    bool wide = false;
    for (const auto& it : l.items) {
      counted += it.count;
      if (it.count == 1 && it.end - it.start == 1'000'000) wide = true;
    }
    QCOMPARE(counted, size_t(100001));
    QVERIFY(wide);
    QVERIFY(l.folded_events >= 100000);
    // Zoomed in to 100 ns across 1000 px: nothing folds, only the visible events are listed.
    m.setView(5000, 5100);
    const DrawList z = buildDrawList(d, rows, m, 0, rows.size());
    QVERIFY(z.items.size() >= 10 && z.items.size() <= 12);
    for (const auto& it : z.items) QCOMPARE(it.count, 1u);
  }
  void gapsWiderThanAPixelSplitFoldedRuns() {
    TimelineData d;
    Track t;
    t.lanes.resize(1);
    // Two clusters of tiny events separated by a large gap.
    for (int i = 0; i < 1000; ++i) t.lanes[0].push(i * 2, i * 2 + 1, 1, EventCat::Range);
    for (int i = 0; i < 1000; ++i) t.lanes[0].push(1'000'000 + i * 2, 1'000'000 + i * 2 + 1, 1, EventCat::Range);
    d.tracks.push_back(std::move(t));
    d.finalize();
    TimeMapper m;
    m.setWidth(1000);
    m.fit(d.t_min, d.t_max, 0.0);
    const DrawList l = buildDrawList(d, layoutRows(d), m, 0, 1);
    QCOMPARE(l.items.size(), size_t(2));
    QCOMPARE(l.items[0].count + l.items[1].count, 2000u);
  }
  // The step lane zoomed out: steps folded together are drawn as steps (not the grey of a mixed fold), and a fold
  // that holds a detailed step as a detailed one; a fold of mixed ranges stays "other".
  void foldedStepsStaySteps() {
    TimelineData d;
    Track t;
    t.lanes.resize(1);
    const uint32_t step = d.intern("training step");
    // 2000 touching 10-ns steps, every 50th detailed, then 1000 ranges of two names after a gap.
    for (int i = 0; i < 2000; ++i)
      t.lanes[0].push(i * 10, i * 10 + 10, step, i % 50 == 0 ? EventCat::StepDetailed : EventCat::Step);
    for (int i = 0; i < 1000; ++i)
      t.lanes[0].push(1'000'000 + i * 10, 1'000'000 + i * 10 + 10, 1 + i % 2, i % 2 ? EventCat::Range : EventCat::DataWait);
    d.tracks.push_back(std::move(t));
    d.finalize();
    TimeMapper m;
    m.setWidth(100);
    m.fit(d.t_min, d.t_max, 0.0);  // ~10 µs a pixel: every event folds
    const DrawList l = buildDrawList(d, layoutRows(d), m, 0, 1);
    bool detailed = false;
    for (const auto& it : l.items) {
      if (it.start < 1'000'000) {
        QVERIFY2(it.cat == EventCat::Step || it.cat == EventCat::StepDetailed, eventCatName(it.cat));
        detailed |= it.cat == EventCat::StepDetailed;
      } else if (it.count > 1) {
        QCOMPARE(it.cat, EventCat::Other);
      }
    }
    QVERIFY(detailed);
  }
  void wideEventsAfterTinyOnesAreNotSwallowed() {
    // A training step seen from far away: a tiny data wait, then long forward/backward ranges back to back.
    TimelineData d;
    Track t;
    t.lanes.resize(1);
    const uint32_t dw = d.intern("data_wait"), fw = d.intern("forward"), bw = d.intern("backward");
    int64_t now = 0;
    for (int s = 0; s < 50; ++s) {
      t.lanes[0].push(now, now + 14, dw, EventCat::DataWait);
      t.lanes[0].push(now + 14, now + 154, fw, EventCat::Range);
      t.lanes[0].push(now + 154, now + 314, bw, EventCat::Range);
      now += 320;
    }
    d.tracks.push_back(std::move(t));
    d.finalize();
    TimeMapper m;
    m.setWidth(800);  // 20 ns per px: data waits fold, forward/backward (7-8 px) must stay individual
    m.fit(d.t_min, d.t_max, 0.0);
    const DrawList l = buildDrawList(d, layoutRows(d), m, 0, 1);
    int wide = 0;
    for (const auto& it : l.items)
      if (it.count == 1 && (it.name == fw || it.name == bw)) ++wide;
    QCOMPARE(wide, 100);
  }
  void syntheticLodIsBoundedByPixels() {
    auto d = makeSyntheticTimeline(200000);
    QVERIFY(d->eventCount() >= 190000);
    const auto rows = layoutRows(*d);
    TimeMapper m;
    m.setWidth(1600);
    m.fit(d->t_min, d->t_max);
    const DrawList l = buildDrawList(*d, rows, m, 0, rows.size());
    // At most a handful of items per pixel per row, whatever the event count.
    QVERIFY2(l.items.size() < rows.size() * 1600, qPrintable(QString::number(l.items.size())));
    QVERIFY(l.folded_events > 0);
  }
  // Instants are not drawn as boxes: trace-wide ones and config changes become markers, and a track with
  // nothing left to draw is not an empty row.
  void markersFromInstantsAndNoEmptyRows() {
    tb::prof::Trace t;
    const uint32_t train = t.track_for(tb::prof::TrackKind::CpuThread, 1, 1, "train");
    const uint32_t marks = t.track_for(tb::prof::TrackKind::CpuThread, 9, 9, tb::prof::kGlobalMarkersTrack);
    tb::prof::Event step;
    step.kind = tb::prof::EventKind::Range;
    step.name = t.intern("step");
    step.start_ns = 1000;
    step.end_ns = 5000;
    t.add_event(train, step);
    tb::prof::Event change;
    change.kind = tb::prof::EventKind::Instant;
    change.name = t.intern("config_change");
    change.start_ns = change.end_ns = 3000;
    change.arg = 4;
    t.add_event(train, change);
    tb::prof::Event window_end = change;
    window_end.name = t.intern("Record Window End");
    window_end.start_ns = window_end.end_ns = 4500;
    window_end.arg = tb::prof::kNoArg;
    t.add_event(marks, window_end);
    t.finalize();
    auto d = toTimeline(t, nullptr);
    QCOMPARE(int(d->tracks.size()), 1);  // the markers track holds only instants
    QCOMPARE(QString::fromStdString(d->tracks[0].name), QString("train"));
    QCOMPARE(int(d->markers.size()), 2);
    QCOMPARE(d->markers[0].t, int64_t(3000));
    QCOMPARE(QString::fromStdString(d->names[d->markers[0].name]), QString("config_change"));
    QCOMPARE(d->markers[0].arg, int64_t(4));
    QCOMPARE(QString::fromStdString(d->names[d->markers[1].name]), QString("Record Window End"));
    QCOMPARE(d->eventCount(), size_t(1));
  }

  // A CUDA graph's kernel says its graph and node, and which of the graph's replays ran it (the analysis's).
  void graphKernelDetailsSayGraphNodeAndReplay() {
    tb::prof::Trace t;
    const uint32_t cpu = t.track_for(tb::prof::TrackKind::CpuThread, 1, 1, "train");
    const uint32_t gpu = t.track_for(tb::prof::TrackKind::GpuStream, 0, 7);
    for (int replay = 0; replay < 2; ++replay) {
      const int64_t t0 = replay * 100000;
      tb::prof::Event launch;
      launch.kind = tb::prof::EventKind::Runtime;
      launch.name = t.intern("cudaGraphLaunch");
      launch.start_ns = t0;
      launch.end_ns = t0 + 5000;
      launch.correlation = 50 + replay;
      t.add_event(cpu, launch);
      for (int node = 1; node <= 2; ++node) {
        tb::prof::Event k;
        k.kind = tb::prof::EventKind::Kernel;
        k.name = t.intern(node == 1 ? "gemm" : "relu");
        k.start_ns = t0 + 10000 * node;
        k.end_ns = k.start_ns + 5000;
        k.correlation = launch.correlation;
        k.graph = 4;
        k.arg = node;
        t.add_event(gpu, k);
      }
    }
    t.finalize();
    const tb::prof::AnalysisResult a = tb::prof::analyze(t);
    auto d = toTimeline(t, &a);
    QStringList kernels;
    for (const Track& tr : d->tracks)
      for (const Lane& l : tr.lanes)
        for (size_t i = 0; i < l.size(); ++i)
          if (l.cat[i] == EventCat::Kernel) kernels << QString::fromStdString(d->args[l.args[i]]);
    QCOMPARE(kernels.size(), 4);
    QVERIFY2(kernels[0].contains("CUDA graph 4, node 1\nreplay 1 of 2"), qPrintable(kernels[0]));
    QVERIFY2(kernels[3].contains("CUDA graph 4, node 2\nreplay 2 of 2"), qPrintable(kernels[3]));
    // Without an analysis the graph and node are still said.
    auto bare = toTimeline(t, nullptr);
    bool said = false;
    for (const auto& s : bare->args) said = said || (s.find("CUDA graph 4, node 1") != std::string::npos);
    QVERIFY(said);
  }

  // The memory counters (the engine's after each step, a script's, torch.profiler's) become the strip's
  // series, one per counter, by time; other counters are not memory.
  void memoryCountersBecomeTheStripsSeries() {
    tb::prof::Trace t;
    const uint32_t train = t.track_for(tb::prof::TrackKind::CpuThread, 1, 1, "train");
    tb::prof::Event step;
    step.kind = tb::prof::EventKind::Range;
    step.name = t.intern("step");
    step.start_ns = 0;
    step.end_ns = 10000;
    t.add_event(train, step);
    auto counter = [&](const char* name, int64_t at, double v) {
      const uint32_t c = t.track_for(tb::prof::TrackKind::Counter, 1, int64_t(std::hash<std::string>{}(name) % 1000), name);
      tb::prof::Event e;
      e.kind = tb::prof::EventKind::Counter;
      e.name = t.intern(name);
      e.start_ns = e.end_ns = at;
      e.value = v;
      t.add_event(c, e);
    };
    counter("memory: device allocated", 8000, 2e9);
    counter("memory: device allocated", 2000, 1e9);
    counter("memory: host RSS", 2000, 5e8);
    counter("page faults", 2000, 12);
    t.finalize();
    auto d = toTimeline(t, nullptr);
    QCOMPARE(int(d->memory.size()), 2);
    const MemorySeries* dev = nullptr;
    for (const auto& m : d->memory)
      if (m.name == "memory: device allocated") dev = &m;
    QVERIFY(dev);
    QCOMPARE(int(dev->t.size()), 2);
    QCOMPARE(dev->t.front(), int64_t(2000));
    QCOMPARE(dev->v.back(), 2e9);
  }

  // The live compare: windows of each side, samples over wall time, Welch's t; a drifting side is flagged.
  void compareWindows() {
    using tb::measure::Window;
    auto win = [](double tp, double t) {
      Window w;
      w.steps = 5;
      w.samples = 160;
      w.wall_s = 160 / tp;
      w.start_s = t;
      return w;
    };
    std::vector<Window> a, b, c, d;
    for (int i = 0; i < 8; ++i) {
      a.push_back(win(100 + (i % 3), i));
      b.push_back(win(200 + (i % 4), 10 + i));
      c.push_back(win(100 + (i % 2), 20 + i));
      d.push_back(win(100 * (1 + 0.05 * i), 30 + i));  // +35% over the segment
    }
    const RatioCI r = tb::ui::compareWindows(a, b);
    QVERIFY(r.valid);
    QVERIFY(qAbs(r.ratio - tb::measure::pooled_throughput(b) / tb::measure::pooled_throughput(a)) < 1e-9);
    QVERIFY(r.lo <= r.ratio && r.ratio <= r.hi);
    QVERIFY(r.lo > 1.5);
    QCOMPARE(QString::fromStdString(r.verdict()), QString("faster"));
    const RatioCI same = tb::ui::compareWindows(a, c);
    QCOMPARE(QString::fromStdString(same.verdict()), QString("no effect"));
    const RatioCI drift = tb::ui::compareWindows(a, d);
    QVERIFY(QString::fromStdString(drift.verdict()).endsWith("(drifting)"));
    QVERIFY(QString::fromStdString(drift.noise_text()).contains("drifting: +"));
    const RatioCI few = tb::ui::compareWindows({a[0], a[1]}, b);
    QVERIFY(!few.valid);
    QCOMPARE(QString::fromStdString(few.verdict()), QString("too few windows"));
    QCOMPARE(median({3, 1, 2, 10}), 2.5);
  }
};

QTEST_GUILESS_MAIN(TestTimelineModel)
#include "test_timeline_model.moc"
