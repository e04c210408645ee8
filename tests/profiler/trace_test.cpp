// Trace model: sorting, nesting depth, blocks + binary search (checked against brute force), flows, merge.
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include <random>

#include "profiler/trace.h"

namespace tb::prof {
namespace {

TEST(TraceModel, EventFitsTheBudget) { EXPECT_LE(sizeof(Event), 64u); }

TEST(TraceModel, SortsAndNests) {
  Trace t;
  const uint32_t c = t.track_for(TrackKind::CpuThread, 1, 2);
  EXPECT_EQ(t.track(c).name(), "thread 2");
  auto add = [&](int64_t a, int64_t b, const char* n) {
    Event e;
    e.start_ns = a;
    e.end_ns = b;
    e.name = t.intern(n);
    t.add_event(c, e);
  };
  add(10, 20, "child2");
  add(0, 100, "parent");
  add(2, 8, "child1");
  add(3, 4, "grandchild");
  add(100, 110, "sibling");  // touches the parent's end: a sibling, not a child
  t.finalize();
  const auto& ev = t.track(c).events();
  ASSERT_EQ(ev.size(), 5u);
  EXPECT_EQ(t.name(ev[0].name), "parent");
  EXPECT_EQ(ev[0].depth, 0);
  EXPECT_EQ(t.name(ev[1].name), "child1");
  EXPECT_EQ(ev[1].depth, 1);
  EXPECT_EQ(ev[2].depth, 2);
  EXPECT_EQ(t.name(ev[3].name), "child2");
  EXPECT_EQ(ev[3].depth, 1);
  EXPECT_EQ(ev[4].depth, 0);
  EXPECT_EQ(t.track(c).max_depth(), 2);
  EXPECT_EQ(t.start_ns(), 0);
  EXPECT_EQ(t.end_ns(), 110);
  // Names are interned once.
  EXPECT_EQ(t.intern("parent"), ev[0].name);
  // Default names are replaced by real ones, real ones kept.
  EXPECT_EQ(t.track_for(TrackKind::CpuThread, 1, 2, "train"), c);
  EXPECT_EQ(t.track(c).name(), "train");
  t.track_for(TrackKind::CpuThread, 1, 2, "other");
  EXPECT_EQ(t.track(c).name(), "train");
}

TEST(TraceModel, VisibleRangeMatchesBruteForce) {
  std::mt19937_64 rng(42);
  Trace t;
  const uint32_t c = t.track_for(TrackKind::CpuThread, 1, 1);
  std::vector<std::pair<int64_t, int64_t>> all;
  for (int i = 0; i < 5000; ++i) {
    const int64_t a = static_cast<int64_t>(rng() % 1000000);
    // Mostly short events plus a few very long ones (the case the prefix max end exists for).
    const int64_t d = (i % 500 == 0) ? static_cast<int64_t>(rng() % 500000) : static_cast<int64_t>(rng() % 200);
    Event e;
    e.start_ns = a;
    e.end_ns = a + d;
    t.add_event(c, e);
    all.emplace_back(a, a + d);
  }
  t.finalize();
  const Track& tr = t.track(c);
  for (int q = 0; q < 200; ++q) {
    int64_t t0 = static_cast<int64_t>(rng() % 1100000) - 50000;
    int64_t t1 = t0 + static_cast<int64_t>(rng() % 20000);
    size_t expect = 0;
    for (auto& [a, b] : all) expect += (b >= t0 && a <= t1);
    size_t got = 0;
    int64_t last_start = INT64_MIN;
    tr.for_each_in(t0, t1, [&](const Event& e, uint32_t) {
      ++got;
      EXPECT_GE(e.start_ns, last_start);
      last_start = e.start_ns;
    });
    EXPECT_EQ(got, expect) << "window " << t0 << ".." << t1;
  }
  // Empty / inverted windows.
  EXPECT_EQ(tr.index_range(10, 5).first, tr.index_range(10, 5).second);
  Trace empty;
  empty.finalize();
  EXPECT_TRUE(empty.tracks().empty());
}

TEST(TraceModel, FlowsLinkLaunchesToGpuWork) {
  Trace t;
  const uint32_t cpu = t.track_for(TrackKind::CpuThread, 5, 5);
  const uint32_t gpu = t.track_for(TrackKind::GpuStream, 0, 7);
  Event launch, kernel, drv, orphan;
  launch.kind = EventKind::Runtime;
  launch.start_ns = 10;
  launch.end_ns = 12;
  launch.correlation = 77;
  drv = launch;
  drv.kind = EventKind::Driver;  // same correlation: the runtime call wins
  drv.start_ns = 11;
  kernel.kind = EventKind::Kernel;
  kernel.start_ns = 20;
  kernel.end_ns = 30;
  kernel.correlation = 77;
  orphan = kernel;
  orphan.correlation = 78;  // no launch with this id
  orphan.start_ns = 40;
  orphan.end_ns = 50;
  t.add_event(gpu, kernel);
  t.add_event(gpu, orphan);
  t.add_event(cpu, drv);
  t.add_event(cpu, launch);
  t.finalize();
  ASSERT_EQ(t.flows().size(), 1u);
  const Flow& f = t.flows()[0];
  EXPECT_EQ(f.correlation, 77u);
  EXPECT_EQ(t.track(f.src_track).events()[f.src_event].kind, EventKind::Runtime);
  EXPECT_EQ(f.dst_track, gpu);
  EXPECT_EQ(t.flow_to(gpu, f.dst_event), &f);
  EXPECT_EQ(t.flow_from(f.src_track, f.src_event), &f);
  EXPECT_EQ(t.flow_to(gpu, 1), nullptr);
}

TEST(TraceModel, MergeCombinesCpuAndGpuTraces) {
  Trace cpu_trace, gpu_trace;
  const uint32_t c = cpu_trace.track_for(TrackKind::CpuThread, 1, 1, "train");
  Event r;
  r.name = cpu_trace.intern("step");
  r.start_ns = 0;
  r.end_ns = 100;
  cpu_trace.add_event(c, r);
  const uint32_t g = gpu_trace.track_for(TrackKind::GpuStream, 0, 7);
  Event k;
  k.kind = EventKind::Kernel;
  k.name = gpu_trace.intern("gemm");
  k.start_ns = 10;
  k.end_ns = 20;
  k.correlation = 3;
  gpu_trace.add_event(g, k);
  const uint32_t c2 = gpu_trace.track_for(TrackKind::CpuThread, 1, 1);
  Event l;
  l.kind = EventKind::Runtime;
  l.name = gpu_trace.intern("cudaLaunchKernel");
  l.start_ns = 5;
  l.end_ns = 6;
  l.correlation = 3;
  gpu_trace.add_event(c2, l);
  gpu_trace.meta().collector_state = "on";
  gpu_trace.finalize();
  cpu_trace.merge(gpu_trace);
  EXPECT_EQ(cpu_trace.tracks().size(), 2u);
  EXPECT_EQ(cpu_trace.track(c).name(), "train");
  EXPECT_EQ(cpu_trace.track(c).events().size(), 2u);
  EXPECT_EQ(cpu_trace.track(c).events()[1].depth, 1);  // the launch nests in the step
  EXPECT_EQ(cpu_trace.flows().size(), 1u);
  EXPECT_EQ(cpu_trace.meta().collector_state, "on");
  EXPECT_GT(cpu_trace.memory_bytes(), 0u);
}

// Counters merge by their process and name: a chunk's memory counter and a lanes file's queue counter both
// came first in their files (tid 0), and stay two counters; the same counter in two chunks stays one.
TEST(TraceModel, MergedCountersKeepTheirNames) {
  auto one = [](const char* name, int64_t t, double v) {
    auto tr = std::make_unique<Trace>();
    Event e;
    e.kind = EventKind::Counter;
    e.name = tr->intern(name);
    e.start_ns = e.end_ns = t;
    e.value = v;
    tr->add_event(tr->track_for(TrackKind::Counter, 7, 0, name), e);
    tr->finalize();
    return tr;
  };
  Trace merged;
  merged.merge(*one("memory: host RSS", 10, 1e9));
  merged.merge(*one("loader: batches ready", 20, 3));
  merged.merge(*one("memory: host RSS", 30, 2e9));
  std::map<std::string, std::vector<double>> values;
  for (const Track& t : merged.tracks())
    for (const Event& e : t.events()) values[t.name()].push_back(e.value);
  EXPECT_EQ(values, (std::map<std::string, std::vector<double>>{{"loader: batches ready", {3}},
                                                                 {"memory: host RSS", {1e9, 2e9}}}));
}

}  // namespace
}  // namespace tb::prof
