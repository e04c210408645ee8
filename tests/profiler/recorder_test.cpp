#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "profiler/range_names.h"
#include "profiler/recorder.h"
#include "profiler/analysis.h"
#include "profiler/trace.h"
#include "profiler/trace_io.h"

namespace tb::prof {
namespace {

// The recorder is a process-wide singleton: each test starts it, records, stops and collects.

TEST(Recorder, NestedRangesOnOneThread) {
  auto& r = Recorder::instance();
  r.start();
  set_thread_name("train");
  {
    TB_RANGE_ARG(names::kStep, 7);
    { TB_RANGE(names::kDataWait); }
    { TB_RANGE(names::kForward); }
    Recorder::instant(names::kConfigChange, 3);
    Recorder::counter("queue_depth", 2.5);
  }
  r.stop();
  auto t = r.collect();
  ASSERT_TRUE(t);
  EXPECT_EQ(t->meta().source_format, "tunebench");
  // The cores of the recording machine travel with the trace (the loader-stall finding sizes workers by them).
  ASSERT_TRUE(t->meta().extra.count("cpu_cores"));
  EXPECT_EQ(std::stoul(t->meta().extra.at("cpu_cores")), std::thread::hardware_concurrency());
  const Track* train = nullptr;
  const Track* counter = nullptr;
  for (const Track& tr : t->tracks()) {
    if (tr.kind() == TrackKind::CpuThread && tr.name() == "train") train = &tr;
    if (tr.kind() == TrackKind::Counter) counter = &tr;
  }
  ASSERT_NE(train, nullptr);
  ASSERT_EQ(train->events().size(), 4u);
  const auto& ev = train->events();
  EXPECT_EQ(t->name(ev[0].name), "step");
  EXPECT_EQ(ev[0].arg, 7);
  EXPECT_EQ(ev[0].depth, 0);
  EXPECT_EQ(t->name(ev[1].name), "data_wait");
  EXPECT_EQ(ev[1].depth, 1);
  EXPECT_EQ(t->name(ev[2].name), "forward");
  EXPECT_EQ(ev[2].depth, 1);
  EXPECT_LE(ev[1].end_ns, ev[2].start_ns);
  EXPECT_EQ(ev[3].kind, EventKind::Instant);
  EXPECT_EQ(ev[3].arg, 3);
  EXPECT_LE(ev[0].start_ns, ev[1].start_ns);
  EXPECT_GE(ev[0].end_ns, ev[3].end_ns);
  ASSERT_NE(counter, nullptr);
  ASSERT_EQ(counter->events().size(), 1u);
  EXPECT_DOUBLE_EQ(counter->events()[0].value, 2.5);
  EXPECT_EQ(counter->name(), "queue_depth");
  // The process's own: merged with other ranks' traces, each rank keeps its counters apart.
  EXPECT_EQ(counter->pid(), train->pid());
}

TEST(Recorder, OffRecordsNothingAndStartClears) {
  auto& r = Recorder::instance();
  r.stop();
  (void)r.collect();
  { TB_RANGE("while_off"); }
  r.start();
  r.stop();
  auto t = r.collect();
  EXPECT_EQ(t->event_count(), 0u);
  r.start();
  { TB_RANGE("before_restart"); }
  r.stop();
  r.start();  // clears
  { TB_RANGE("after_restart"); }
  r.stop();
  t = r.collect();
  ASSERT_EQ(t->event_count(), 1u);
  for (const Track& tr : t->tracks())
    for (const Event& e : tr.events()) EXPECT_EQ(t->name(e.name), "after_restart");
}

TEST(Recorder, OpenRangeSurvivesCollectWhileRecordingAndClosesAtStop) {
  auto& r = Recorder::instance();
  r.start();
  Recorder::begin("outer");
  { TB_RANGE("inner"); }
  auto t1 = r.collect();  // still recording: "outer" stays open for the next collect
  ASSERT_EQ(t1->event_count(), 1u);
  r.stop();
  auto t2 = r.collect();  // stopped: "outer" closed at the stop time and flagged
  ASSERT_EQ(t2->event_count(), 1u);
  for (const Track& tr : t2->tracks()) {
    for (const Event& e : tr.events()) {
      EXPECT_EQ(t2->name(e.name), "outer");
      EXPECT_TRUE(e.flags & kFlagUnclosed);
    }
  }
  Recorder::end();  // after stop: ignored, must not crash
}

// A callback that names its thread (the Gloo all-reduce hook) may run inline on the training thread: that
// thread keeps its name; a thread of its own gets the callback's.
TEST(Recorder, NameIfUnnamedKeepsANameAndNamesANewThread) {
  auto& r = Recorder::instance();
  r.start();
  set_thread_name("train");
  name_thread_if_unnamed("comm (gloo)");
  { TB_RANGE(names::kStep); }
  std::thread([] {
    name_thread_if_unnamed("comm (gloo)");
    TB_RANGE(names::kGlooAllReduce);
  }).join();
  r.stop();
  auto t = r.collect();
  ASSERT_TRUE(t);
  std::multiset<std::string> names;
  for (const Track& tr : t->tracks())
    if (tr.kind() == TrackKind::CpuThread && !tr.events().empty()) names.insert(tr.name());
  EXPECT_EQ(names, (std::multiset<std::string>{"comm (gloo)", "train"}));
}

// `n` threads named PREFIXi, each recording `pairs` load_batch ranges with a decode range inside, from when
// `go` turns true.
std::vector<std::thread> nesting_workers(const std::string& prefix, int n, int pairs, std::atomic<bool>& go) {
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([prefix, i, pairs, &go] {
      set_thread_name(prefix + std::to_string(i));
      while (!go.load()) std::this_thread::yield();
      for (int k = 0; k < pairs; ++k) {
        Recorder::begin(names::kLoadBatch, k);
        Recorder::begin(names::kDecode);
        Recorder::end();
        Recorder::end();
      }
    });
  }
  return threads;
}

TEST(Recorder, ManyThreadsConcurrentWithCollect) {
  auto& r = Recorder::instance();
  r.start();
  constexpr int kThreads = 4;
  constexpr int kPairs = 30000;  // > one chunk per thread, so chunk chaining and freeing are exercised
  std::atomic<bool> go{false};
  std::vector<std::thread> threads = nesting_workers("worker-", kThreads, kPairs, go);
  go = true;
  // Collect concurrently while the workers record.
  size_t total = 0;
  std::vector<std::unique_ptr<Trace>> parts;
  for (int c = 0; c < 5; ++c) {
    auto t = r.collect();
    total += t->event_count();
    parts.push_back(std::move(t));
    std::this_thread::yield();
  }
  for (auto& th : threads) th.join();
  r.stop();
  auto last = r.collect();
  total += last->event_count();
  EXPECT_EQ(total, static_cast<size_t>(kThreads) * kPairs * 2);
  EXPECT_EQ(r.dropped(), 0u);
  // A range still open at a collect comes in a later part than the ranges it contains, so nesting is checked
  // on the merged trace (what a consumer of chunked traces does).
  parts.push_back(std::move(last));
  Trace merged;
  for (const auto& part : parts) merged.merge(*part);
  EXPECT_EQ(merged.event_count(), total);
  std::set<std::string> named;
  for (const Track& tr : merged.tracks()) {
    if (tr.name().rfind("worker-", 0) == 0) named.insert(tr.name());
    for (size_t i = 1; i < tr.events().size(); ++i) EXPECT_LE(tr.events()[i - 1].start_ns, tr.events()[i].start_ns);
    for (const Event& e : tr.events()) {
      if (merged.name(e.name) == "decode") EXPECT_EQ(e.depth, 1);
      if (merged.name(e.name) == "load_batch") EXPECT_EQ(e.depth, 0);
    }
  }
  EXPECT_EQ(named.size(), static_cast<size_t>(kThreads));
}

// Collects back to back while threads record nested ranges: the samples are microseconds apart, the pattern
// under which the TSC mapping once swapped a parent and its child. Every range must come back nested in its
// parent, in order, whichever clock path this process uses (CTest runs the Recorder tests with each).
TEST(Recorder, RapidCollectsKeepEveryRangeInsideItsParent) {
  auto& r = Recorder::instance();
  r.start();
  constexpr int kThreads = 2;
  constexpr int kPairs = 20000;
  std::atomic<bool> go{false};
  std::vector<std::thread> threads = nesting_workers("nest-", kThreads, kPairs, go);
  go = true;
  std::vector<std::unique_ptr<Trace>> parts;
  for (int c = 0; c < 300; ++c) parts.push_back(r.collect());
  for (auto& th : threads) th.join();
  r.stop();
  parts.push_back(r.collect());
  Trace merged;
  for (const auto& part : parts) merged.merge(*part);
  size_t checked = 0;
  for (const Track& tr : merged.tracks()) {
    if (tr.name().rfind("nest-", 0) != 0) continue;
    const Event* parent = nullptr;
    for (const Event& e : tr.events()) {
      if (merged.name(e.name) == "load_batch") {
        if (parent) ASSERT_LE(parent->end_ns, e.start_ns) << "load_batch ranges overlap";
        parent = &e;
      } else {
        ASSERT_NE(parent, nullptr) << "a decode range before any load_batch";
        ASSERT_GE(e.start_ns, parent->start_ns);
        ASSERT_LE(e.end_ns, parent->end_ns);
        ASSERT_EQ(e.depth, 1);
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, static_cast<size_t>(kThreads) * kPairs);
}

// What `tunebench-cli run --trace T.json` does: record, collect, export; then analyze reads it back.
TEST(Recorder, RecordedTraceExportsAndAnalysesAfterReload) {
  auto& r = Recorder::instance();
  r.start();
  set_thread_name("train");
  for (int i = 0; i < 3; ++i) {
    TB_RANGE_ARG(names::kStep, i);
    { TB_RANGE(names::kDataWait); }
    { TB_RANGE(names::kForward); }
    { TB_RANGE(names::kBackward); }
    { TB_RANGE(names::kOptimizer); }
  }
  r.stop();
  auto t = r.collect();
  const std::string path = ::testing::TempDir() + "tb_rec_" + std::to_string(now_ns()) + ".json";
  ASSERT_TRUE(write_chrome_trace(*t, path).ok());
  auto back = load_trace(path);
  std::remove(path.c_str());
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back.value()->meta().source_format, "tunebench");
  auto a = analyze(*back.value());
  ASSERT_EQ(a.steps.size(), 3u);
  EXPECT_EQ(a.steps[2].index, 2);
  EXPECT_FALSE(a.has_gpu);
  EXPECT_GT(a.loader_stall_ns, 0);
  EXPECT_EQ(a.loader_stall_ns, a.steps[0].data_wait_ns + a.steps[1].data_wait_ns + a.steps[2].data_wait_ns);
}

TEST(Recorder, InternReturnsStablePointers) {
  const char* a = intern(std::string("layer.") + "conv1");
  const char* b = intern("layer.conv1");
  EXPECT_EQ(a, b);
  EXPECT_STREQ(a, "layer.conv1");
  EXPECT_GT(now_ns(), 0);
}

}  // namespace
}  // namespace tb::prof
