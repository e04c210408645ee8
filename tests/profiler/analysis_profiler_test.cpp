// The profiler's own time as a class of its own, and findings that propose only what exists for the run the
// trace came from (docs/analysis.md "The profiler's own time", "Findings and their bounds").
#include <gtest/gtest.h>

#include "analysis_test_util.h"
#include "trace_builder.h"

using namespace tb::prof;
using namespace tb::prof::test_util;

namespace {

// TuneBench's pause as the launcher writes it into a script's trace (`cat: "tunebench"`: an Overhead event).
void own_pause(Builder& b, int64_t a, int64_t e) {
  Event ev;
  ev.kind = EventKind::Overhead;
  ev.name = b.t.intern("TuneBench: trace chunk boundary");
  ev.start_ns = a * us;
  ev.end_ns = e * us;
  b.t.add_event(b.cpu, ev);
}

// The H100's case in small: a step ends with loss.item() (a sync), then TuneBench writes a trace chunk on the
// training thread (5300 of a 5600 us gap), then the next step loads its batch and launches.
Builder chunk_boundary() {
  Builder b;
  b.range("step", 0, 1000, 20);
  b.kernel(0, 900, 0);
  b.runtime("cudaStreamSynchronize", 800, 900);
  b.range("step", 6500, 7500, 21);
  own_pause(b, 910, 6210);
  b.range("data_wait", 6210, 6400);
  b.kernel(6410, 7400, 6405);
  return b;
}

}  // namespace

TEST(ProfilerClass, AChunkBoundaryIsTheProfilersNotASync) {
  Builder b = chunk_boundary();
  auto r = b.run();
  EXPECT_EQ(r.profiler_ns, 5300 * us);
  EXPECT_EQ(r.profiler_count, 1u);
  ASSERT_EQ(r.profiler_intervals.size(), 1u);
  EXPECT_EQ(r.profiler_intervals[0].t0, 910 * us);
  // What is left of the gap: 10 us after the sync (its own), the batch's load, the launch.
  EXPECT_EQ(r.sync_idle_ns, 10 * us);
  EXPECT_EQ(r.loader_stall_ns, 190 * us);
  for (const auto& f : r.findings) {
    EXPECT_NE(f.kind, FindingKind::SyncPoints) << f.message;
    // Bounds over the program's own time: the loader's 190 us of the window less 5300 us.
    if (f.kind == FindingKind::LoaderStall)
      EXPECT_NEAR(f.share, 190.0 * us / double(r.window.length() - 5300 * us), 1e-9);
  }
  EXPECT_EQ(idle_total(r), r.gpu_idle_ns);  // still a partition
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(r.steps[0].profiler_ns + r.steps[1].profiler_ns, 5300 * us);
  // Its longest pause is stated beside the median step (1000 us and 1000 us: 5.30 steps).
  EXPECT_EQ(r.profiler_longest_ns, 5300 * us);
  bool noted = false;
  for (const auto& n : r.notes)
    noted |= n.find("profiler (TuneBench)") != std::string::npos &&
             n.find("the longest is 5.300 ms, 5.30 median steps") != std::string::npos;
  EXPECT_TRUE(noted);
  const std::string js = to_json(r);
  EXPECT_NE(js.find("\"profiler\":{\"total_us\":"), std::string::npos) << js.substr(0, 400);
  EXPECT_NE(js.find("\"longest_us\":5300"), std::string::npos);
  EXPECT_NE(js.find("\"profiler_us\":"), std::string::npos);
}

// Without the pause recorded the same gap is the sync's: the class exists because the launcher says so.
TEST(ProfilerClass, WithoutThePauseRecordedTheGapWouldReadAsASync) {
  Builder b;
  b.range("step", 0, 1000, 20);
  b.kernel(0, 900, 0);
  b.runtime("cudaStreamSynchronize", 800, 900);
  b.range("step", 6500, 7500, 21);
  b.range("data_wait", 6210, 6400);
  b.kernel(6410, 7400, 6405);
  auto r = b.run();
  EXPECT_EQ(r.profiler_ns, 0);
  EXPECT_GT(r.sync_idle_ns, 5000 * us);
}

// A CPU-only trace: the training thread's pause is the profiler's, not "other".
TEST(ProfilerClass, CpuOnlyTraceSaysItToo) {
  Builder b;
  b.range("step", 0, 100, 0);
  b.range("step", 400, 500, 1);
  own_pause(b, 100, 380);
  auto r = b.run();
  EXPECT_FALSE(r.has_gpu);
  EXPECT_EQ(r.profiler_ns, 280 * us);
  EXPECT_EQ(r.other_idle_ns, r.window.length() - 280 * us);
}

// The same sync-bound trace from three runs: the engine's names its knob; a script's names the code change
// (no script has sync_free_logging) and CUDA graphs as torch.compile; a trace from elsewhere gets words only.
TEST(FindingsByRun, AFindingProposesOnlyWhatTheRunHas) {
  auto trace_of = [](const char* run) {
    Builder b;
    if (run) b.t.meta().extra["tunebench_run"] = run;
    else b.t.meta().extra.erase("tunebench_run");
    b.range("step", 0, 100, 0);
    b.kernel(0, 40, 0);
    b.runtime("cudaStreamSynchronize", 5, 40);
    b.kernel(60, 70, 55);
    b.kernel(90, 100, 85);  // [70,90]: the host late to launch
    return b.run();
  };
  auto find = [](const AnalysisResult& r, FindingKind k) -> const Finding* {
    for (const auto& f : r.findings)
      if (f.kind == k) return &f;
    return nullptr;
  };
  const auto engine = trace_of("engine");
  ASSERT_NE(find(engine, FindingKind::SyncPoints), nullptr);
  EXPECT_EQ(find(engine, FindingKind::SyncPoints)->knob, "sync_free_logging");
  EXPECT_EQ(find(engine, FindingKind::LaunchGap)->knob, "cuda_graphs");

  const auto script = trace_of("script");
  const Finding* s = find(script, FindingKind::SyncPoints);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->knob, "");
  EXPECT_EQ(s->message.find("sync_free_logging"), std::string::npos) << s->message;
  EXPECT_NE(s->message.find("loss.item()"), std::string::npos) << s->message;
  const Finding* g = find(script, FindingKind::LaunchGap);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->knob, "compile");
  for (const auto& a : g->also) EXPECT_NE(a, "batch_size");  // not a launcher knob

  const auto other = trace_of(nullptr);
  for (const auto& f : other.findings) {
    EXPECT_EQ(f.knob, "") << f.message;
    EXPECT_TRUE(f.also.empty()) << f.message;
    EXPECT_EQ(f.message.find("sync_free_logging"), std::string::npos) << f.message;
  }
}

namespace {
// A sampled trace as the launcher writes it: two chunks of a step each, the steps between them run untraced
// ("TuneBench: untraced steps", `cat: "tunebench"`: an Overhead event), a 300 us pause at each boundary.
Builder sampled(bool mark_untraced) {
  Builder b;
  b.range("step", 0, 1000, 20);
  b.range("data_wait", 0, 200);
  b.kernel(200, 900, 150);
  own_pause(b, 1000, 1300);
  if (mark_untraced) {
    Event ev;
    ev.kind = EventKind::Overhead;
    ev.name = b.t.intern("TuneBench: untraced steps");
    ev.start_ns = 1300 * us;
    ev.end_ns = 51000 * us;
    b.t.add_event(b.cpu, ev);
  }
  own_pause(b, 51000, 51300);
  b.range("step", 51300, 52300, 71);
  b.range("data_wait", 51300, 51500);
  b.kernel(51500, 52200, 51450);
  return b;
}
}  // namespace

// The steps a sampled trace did not record are no class of time: neither the program's idle nor the profiler's.
// Every share is of the traced time (2600 us here, of 52300).
TEST(ProfilerClass, ASampledTracesUntracedStepsAreLeftOutOfTheWindow) {
  auto r = sampled(true).run();
  EXPECT_EQ(r.untraced_ns, 49700 * us);
  EXPECT_EQ(r.untraced_count, 1u);
  EXPECT_EQ(r.traced_ns(), 2600 * us);
  EXPECT_EQ(r.profiler_ns, 600 * us);
  EXPECT_EQ(r.loader_stall_ns, 400 * us);
  EXPECT_EQ(r.gpu_busy_ns, 1400 * us);
  EXPECT_EQ(r.gpu_idle_ns, r.traced_ns() - r.gpu_busy_ns);
  EXPECT_EQ(idle_total(r), r.gpu_idle_ns);  // still a partition, of the traced time
  ASSERT_EQ(r.steps.size(), 2u);
  // The step after the gap reaches back to the last GPU work before it: not its idle time.
  EXPECT_LE(r.steps[1].gpu_idle_ns, 1000 * us);
  bool noted = false;
  for (const auto& n : r.notes) noted |= n.find("sampled trace") != std::string::npos;
  EXPECT_TRUE(noted);
  for (const auto& f : r.findings) EXPECT_LE(f.share, 1.0) << f.message;
  EXPECT_NE(to_json(r).find("\"untraced_us\":49700"), std::string::npos);
}

// Unmarked, the same gap reads as 49.7 ms of idle GPU: the class exists because the launcher says so.
TEST(ProfilerClass, AnUnmarkedGapBetweenChunksWouldReadAsIdle) {
  auto r = sampled(false).run();
  EXPECT_EQ(r.untraced_ns, 0);
  EXPECT_GE(r.gpu_idle_ns, 49000 * us);
}
