// Synthetic traces with known answers for every definition of docs/analysis.md,
// including the traps (annotations/syncs on GPU rows, overlapping streams, out-of-order events, launches
// without correlation, idle before the first / after the last kernel, CPU-only traces).
#include <gtest/gtest.h>

#include <algorithm>

#include "profiler/analysis.h"
#include "profiler/range_names.h"
#include "profiler/trace.h"
#include "trace_builder.h"

namespace tb::prof {
namespace {

using test_util::Builder;
using test_util::us;

void expect_partition(const AnalysisResult& r) {
  // busy + every idle class == window, always.
  EXPECT_EQ(r.gpu_busy_ns + idle_total(r), r.window.length());
  EXPECT_EQ(r.gpu_busy_ns + r.gpu_idle_ns, r.window.length());
}

TEST(Analysis, BusyIsUnionOverOverlappingStreams) {
  Builder b;
  b.kernel(0, 10, -1, 7);
  b.kernel(5, 15, -1, 13);  // overlaps the first on another stream: counted once
  b.kernel(20, 30, -1, 7);
  auto r = b.run();
  EXPECT_TRUE(r.has_gpu);
  EXPECT_FALSE(r.window_from_steps);
  EXPECT_EQ(r.window.t0, 0);
  EXPECT_EQ(r.window.t1, 30 * us);
  EXPECT_EQ(r.gpu_busy_ns, 25 * us);
  EXPECT_EQ(r.gpu_idle_ns, 5 * us);
  EXPECT_EQ(r.idle_interval_count, 1u);
  EXPECT_EQ(r.kernel_count, 3u);
  expect_partition(r);
}

TEST(Analysis, AnnotationsAndSyncRowsOnGpuAreNotActivity) {
  Builder b;
  b.kernel(10, 20);
  b.kernel(30, 40);
  b.gpu_other(EventKind::Range, "Optimizer.step#SGD.step", 0, 100);  // gpu_user_annotation
  b.gpu_other(EventKind::Sync, "Stream Sync", 20, 30);                // cuda_sync on the GPU row
  auto r = b.run();
  EXPECT_EQ(r.window.t0, 10 * us);  // first/last GPU activity, not the annotation
  EXPECT_EQ(r.window.t1, 40 * us);
  EXPECT_EQ(r.gpu_busy_ns, 20 * us);
  EXPECT_EQ(r.gpu_idle_ns, 10 * us);
  EXPECT_EQ(r.sync_count, 0u);  // shown, not counted
  expect_partition(r);
}

TEST(Analysis, OutOfOrderEventsGiveTheSameAnswer) {
  Builder a, b;
  a.range("step", 0, 100, 1);
  a.range("data_wait", 0, 30);
  a.kernel(30, 60, 29);
  a.kernel(70, 100, 65);
  // Same events, reversed insertion order.
  b.kernel(70, 100, 65);
  b.kernel(30, 60, 29);
  b.range("data_wait", 0, 30);
  b.range("step", 0, 100, 1);
  auto ra = a.run(), rb = b.run();
  EXPECT_EQ(ra.loader_stall_ns, rb.loader_stall_ns);
  EXPECT_EQ(ra.launch_gap_ns, rb.launch_gap_ns);
  EXPECT_EQ(ra.gpu_busy_ns, rb.gpu_busy_ns);
  EXPECT_EQ(ra.steps.size(), rb.steps.size());
  EXPECT_EQ(ra.loader_stall_ns, 30 * us);
  EXPECT_EQ(ra.launch_gap_ns, 10 * us);
}

TEST(Analysis, LoaderStallAndLaunchGapWithSteps) {
  Builder b;
  b.range("step", 0, 100, 4);
  b.range("data_wait", 0, 30);
  b.kernel(30, 60, 29);   // idle [0,30] is all data wait
  b.kernel(70, 100, 65);  // idle [60,70]: its kernel was launched at 65 > 60 -> host late
  auto r = b.run();
  EXPECT_TRUE(r.window_from_steps);
  EXPECT_EQ(r.window.length(), 100 * us);
  EXPECT_EQ(r.gpu_busy_ns, 60 * us);
  EXPECT_EQ(r.loader_stall_ns, 30 * us);
  EXPECT_EQ(r.loader_stall_count, 1u);
  ASSERT_EQ(r.loader_stall_intervals.size(), 1u);
  EXPECT_EQ(r.loader_stall_intervals[0].t0, 0);
  EXPECT_EQ(r.loader_stall_intervals[0].t1, 30 * us);
  EXPECT_EQ(r.launch_gap_ns, 10 * us);
  EXPECT_EQ(r.launch_gap_count, 1u);
  ASSERT_EQ(r.launch_gap_intervals.size(), 1u);
  EXPECT_EQ(r.launch_gap_intervals[0].t0, 60 * us);
  EXPECT_EQ(r.other_idle_ns, 0);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].index, 4);
  EXPECT_EQ(r.steps[0].data_wait_ns, 30 * us);
  EXPECT_EQ(r.steps[0].loader_stall_ns, 30 * us);
  EXPECT_EQ(r.steps[0].launch_gap_ns, 10 * us);
  EXPECT_EQ(r.steps[0].kernel_count, 2u);
  expect_partition(r);
  // Findings: loader stall 30% -> workers, at most 1/(1-0.3).
  ASSERT_GE(r.findings.size(), 2u);
  EXPECT_EQ(r.findings[0].kind, FindingKind::LoaderStall);
  EXPECT_EQ(r.findings[0].knob, "workers");
  EXPECT_NEAR(r.findings[0].share, 0.30, 1e-9);
  EXPECT_NEAR(r.findings[0].max_speedup, 1.0 / 0.7, 1e-9);
  EXPECT_EQ(r.findings[0].evidence.t0, 0);
  EXPECT_EQ(r.findings[0].evidence.t1, 30 * us);
  EXPECT_EQ(r.findings[1].kind, FindingKind::LaunchGap);
  EXPECT_EQ(r.findings[1].knob, "cuda_graphs");
  EXPECT_NEAR(r.findings[1].max_speedup, 1.0 / 0.9, 1e-9);
}

// The loader finding grades the step as XProf does (the device's wait for input: 20% of the step highly input-bound,
// 5% moderately) and says the other half of input time, the batches' host-to-device copies, apart from it.
TEST(Analysis, TheLoaderFindingGradesTheStepAndSaysItsCopies) {
  auto run = [](int64_t wait_us) {
    Builder b;
    for (int i = 0; i < 4; ++i) {
      const int64_t t = i * 100;
      b.range("step", t, t + 100, i);
      b.range("data_wait", t, t + wait_us);
      b.range("h2d", t + wait_us, t + wait_us + 4);
      b.kernel(t + wait_us + 5, t + 100, t + wait_us + 4);
    }
    return b.run();
  };
  auto message = [](const AnalysisResult& r) {
    for (const auto& f : r.findings)
      if (f.kind == FindingKind::LoaderStall) return f.message;
    return std::string("no loader finding");
  };
  const std::string moderate = message(run(10)), high = message(run(25)), low = message(run(3));
  EXPECT_NE(moderate.find("; moderately input-bound by XProf's grades (20% of the step highly, 5% moderately)"),
            std::string::npos) << moderate;
  EXPECT_NE(moderate.find("; host-to-device copies 4.0% more (transfer, not host)"), std::string::npos) << moderate;
  EXPECT_NE(high.find("; highly input-bound by XProf's grades"), std::string::npos) << high;
  EXPECT_EQ(low.find("input-bound"), std::string::npos) << low;  // 3%: a finding, not input-bound
  EXPECT_NE(low.find("host-to-device copies 4.0% more"), std::string::npos) << low;
}

// A first step holding a one-time cost (cuDNN's algorithm search: 900 us with the GPU idle and no launch), then
// four loader-bound steps. Marked as warm-up by the recorder, it leaves the window: the findings describe the
// steady state (the loader), not the search (a "launch gap" no knob removes).
TEST(Analysis, WarmUpStepsTheRecorderMarkedLeaveTheWindow) {
  auto make = [](const char* mark) {
    Builder b;
    b.range("step", 0, 1000, 0);
    b.kernel(1, 5, 0);
    b.kernel(950, 1000, 940);
    for (int i = 1; i <= 4; ++i) {
      const int64_t t = 1000 + (i - 1) * 100;
      b.range("step", t, t + 100, i);
      b.range("data_wait", t, t + 30);
      b.kernel(t + 30, t + 100, t + 29);
    }
    if (mark) b.t.meta().extra["warmup_steps"] = mark;
    return b.run();
  };
  const auto plain = make(nullptr);
  EXPECT_EQ(plain.warmup_steps, 0u);
  ASSERT_FALSE(plain.findings.empty());
  EXPECT_EQ(plain.findings[0].kind, FindingKind::LaunchGap);  // the search, read as launch gaps
  const auto r = make("1");
  EXPECT_EQ(r.warmup_steps, 1u);
  EXPECT_EQ(r.warmup_ns, 1000 * us);
  EXPECT_EQ(r.window.t0, 1000 * us);
  EXPECT_EQ(r.window.length(), 400 * us);
  ASSERT_EQ(r.steps.size(), 5u);  // the steps table keeps the warm-up step
  EXPECT_EQ(r.loader_stall_ns, 4 * 30 * us);
  EXPECT_EQ(r.launch_gap_ns, 0);
  expect_partition(r);
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings[0].kind, FindingKind::LoaderStall);
  EXPECT_NEAR(r.findings[0].share, 0.30, 1e-9);
  bool noted = false;
  for (const auto& n : r.notes) noted |= n.find("first 1 step(s) were warm-up") != std::string::npos;
  EXPECT_TRUE(noted);
  // A mark that numbers every step (or none) leaves the window whole: at least one measured step remains.
  EXPECT_EQ(make("9").warmup_steps, 0u);
  EXPECT_EQ(make("0").warmup_steps, 0u);
  EXPECT_EQ(make("x").warmup_steps, 0u);
}

TEST(Analysis, QueuedWorkIsNotALaunchGap) {
  Builder b;
  b.kernel(0, 10, 0);
  b.kernel(50, 60, 5);  // launched at 5, before the idle interval [10,50] began: GPU waited on something else
  auto r = b.run();
  EXPECT_EQ(r.launch_gap_ns, 0);
  EXPECT_EQ(r.other_idle_ns, 40 * us);
  expect_partition(r);
}

TEST(Analysis, LaunchWithoutCorrelationIsNotAttributed) {
  Builder b;
  b.kernel(0, 10, 0);
  b.kernel(50, 60);  // no correlation id: we cannot know when it was launched
  b.runtime("cudaLaunchKernel", 45, 46);  // a launch with no id does not count either
  auto r = b.run();
  EXPECT_EQ(r.launch_gap_ns, 0);
  EXPECT_EQ(r.other_idle_ns, 40 * us);
  expect_partition(r);
}

TEST(Analysis, MinGapThreshold) {
  Builder b;
  b.t.finalize();
  // Kernels in ns here: a 1.5 us gap.
  Event k1, k2, l2;
  k1.kind = k2.kind = EventKind::Kernel;
  k1.name = k2.name = b.t.intern("k");
  k1.start_ns = 0;
  k1.end_ns = 10000;
  k2.start_ns = 11500;
  k2.end_ns = 20000;
  k2.correlation = 9;
  l2.kind = EventKind::Runtime;
  l2.name = b.t.intern("cudaLaunchKernel");
  l2.start_ns = 10500;
  l2.end_ns = 11000;
  l2.correlation = 9;
  const uint32_t g = b.t.track_for(TrackKind::GpuStream, 0, 7);
  b.t.add_event(g, k1);
  b.t.add_event(g, k2);
  b.t.add_event(b.cpu, l2);
  auto r = b.run();  // default min_gap 2 us
  EXPECT_EQ(r.min_gap_ns, 2000);
  EXPECT_EQ(r.launch_gap_ns, 0);
  EXPECT_EQ(r.launch_overhead_ns, 1500);  // shorter than min_gap: launch overhead
  EXPECT_EQ(r.other_idle_ns, 0);
  AnalysisOptions o;
  o.min_gap_ns = 1000;
  auto r2 = analyze(b.t, o);
  EXPECT_EQ(r2.launch_gap_ns, 1500);
  EXPECT_EQ(r2.launch_gap_count, 1u);
}

TEST(Analysis, IdleBeforeFirstAndAfterLastKernelInsideSteps) {
  Builder b;
  b.range("step", 0, 100, 0);
  b.kernel(20, 50, 10);  // idle [0,20]: before the first kernel (lead-in), not a launch gap
  // idle [50,100]: after the last kernel (tail)
  auto r = b.run();
  EXPECT_EQ(r.gpu_busy_ns, 30 * us);
  EXPECT_EQ(r.lead_in_ns, 20 * us);
  EXPECT_EQ(r.tail_ns, 50 * us);
  EXPECT_EQ(r.launch_gap_ns, 0);
  EXPECT_EQ(r.other_idle_ns, 0);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].edge_idle_ns, 70 * us);
  EXPECT_EQ(r.idle_interval_count, 2u);
  expect_partition(r);
}

TEST(Analysis, IdleIntervalSplitIntoStallAndGap) {
  Builder b;
  b.range("step", 0, 100, 0);
  b.kernel(0, 60, 0);
  b.range("data_wait", 60, 80);
  b.kernel(100, 110, 85);  // outside the window: the idle [60,100] has no next activity inside it
  b.range("step", 100, 120, 1);
  b.kernel(110, 120, 105);
  auto r = b.run();
  // Window [0,120]; idle [60,100]: 20 stall + 20 rest; next kernel at 100 launched at 85 > 60 -> gap.
  EXPECT_EQ(r.loader_stall_ns, 20 * us);
  EXPECT_EQ(r.launch_gap_ns, 20 * us);
  EXPECT_EQ(r.loader_stall_count, 1u);
  EXPECT_EQ(r.launch_gap_count, 1u);
  ASSERT_EQ(r.launch_gap_intervals.size(), 1u);
  EXPECT_EQ(r.launch_gap_intervals[0].t0, 80 * us);
  EXPECT_EQ(r.launch_gap_intervals[0].t1, 100 * us);
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(r.steps[0].loader_stall_ns, 20 * us);
  EXPECT_EQ(r.steps[0].launch_gap_ns, 20 * us);
  // GPU work belongs to the step that launched it: [100,110] was launched at 85, in step 0.
  EXPECT_EQ(r.steps[0].gpu_end_ns, 110 * us);
  EXPECT_EQ(r.steps[0].gpu_busy_ns, 70 * us);
  EXPECT_EQ(r.steps[0].kernel_count, 2u);
  EXPECT_EQ(r.steps[1].gpu_start_ns, 110 * us);
  EXPECT_EQ(r.steps[1].gpu_busy_ns, 10 * us);
  EXPECT_EQ(r.steps[1].kernel_count, 1u);
  expect_partition(r);
}

TEST(Analysis, SyncPointsCountHostCallsOnly) {
  Builder b;
  b.kernel(0, 40, 0);
  b.kernel(60, 100, 55);
  b.runtime("cudaStreamSynchronize", 5, 40);
  b.runtime("cudaMemcpyAsync", 41, 42);  // async: not a sync point
  b.runtime("cudaDeviceSynchronize", 90, 100);
  b.gpu_other(EventKind::Sync, "Stream Sync", 30, 40);  // the same wait seen on the GPU row: not counted again
  auto r = b.run();
  EXPECT_EQ(r.sync_count, 2u);
  EXPECT_EQ(r.sync_ns, 45 * us);
  ASSERT_EQ(r.sync_points.size(), 2u);
  EXPECT_EQ(r.sync_points[0].name, "cudaStreamSynchronize");
  ASSERT_FALSE(r.findings.empty());
  bool found = false;
  for (const auto& f : r.findings)
    if (f.kind == FindingKind::SyncPoints) {
      found = true;
      EXPECT_EQ(f.knob, "sync_free_logging");
      // Evidence: the GPU idle the sync caused ([40,60]: the host sat in cudaStreamSynchronize until 40).
      EXPECT_EQ(f.evidence.t0, 40 * us);
      EXPECT_EQ(f.evidence.t1, 60 * us);
      EXPECT_NEAR(f.share, 0.2, 1e-9);
    }
  EXPECT_TRUE(found);
}

TEST(Analysis, OurSyncRangesStandInWhenNoRuntimeCalls) {
  Builder b;
  b.range("step", 0, 100, 0);
  b.range("sync", 90, 100);
  auto r = b.run();
  EXPECT_EQ(r.sync_count, 1u);
  EXPECT_EQ(r.sync_ns, 10 * us);
}

// A script's validation between two epochs (`## outside training ##` ranges, with forwards inside): its time
// is counted and named, and no step holds it or its forwards.
TEST(Analysis, TimeOutsideTrainingIsCountedAndNoStepHoldsIt) {
  Builder b;
  for (int i = 0; i < 4; ++i) {
    const int64_t s = i * 100 + (i >= 2 ? 300 : 0);  // epoch 2 starts after 300 us of validation
    b.range("ProfilerStep#0", s, s + 100, i);
    b.range("## forward ##", s + 20, s + 50);
  }
  for (int k = 0; k < 3; ++k) {
    b.range("## outside training ##", 200 + k * 100, 300 + k * 100);
    b.range("## forward ##", 210 + k * 100, 260 + k * 100);
  }
  auto r = b.run();
  ASSERT_EQ(r.steps.size(), 4u);
  EXPECT_EQ(r.window.length(), 700 * us);
  EXPECT_EQ(r.outside_training_ns, 300 * us);
  EXPECT_EQ(r.outside_training_count, 3u);
  ASSERT_EQ(r.outside_training_intervals.size(), 3u);  // the timeline draws them as their own class
  EXPECT_EQ(r.outside_training_intervals[0].t0, 200 * us);
  EXPECT_EQ(r.outside_training_intervals[2].t1, 500 * us);
  // All of it follows step 1 (the end of the first epoch): the step table shows it there.
  EXPECT_EQ(r.steps[1].outside_after_ns, 300 * us);
  EXPECT_EQ(r.steps[0].outside_after_ns + r.steps[2].outside_after_ns + r.steps[3].outside_after_ns, 0);
  for (const auto& st : r.steps) EXPECT_EQ(st.forward_ns, 30 * us) << st.index;
  bool said = false;
  for (const auto& n : r.notes) said |= n.find("0.300 ms of the window is outside training") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(Analysis, CpuOnlyTraceLoaderStallIsDataWait) {
  Builder b;
  for (int i = 0; i < 4; ++i) {
    const int64_t s = i * 100;
    b.range("step", s, s + 100, i);
    b.range("data_wait", s, s + 25);
    b.range("forward", s + 25, s + 50);
    b.range("backward", s + 50, s + 90);
    b.range("optimizer", s + 90, s + 100);
  }
  auto r = b.run();
  EXPECT_FALSE(r.has_gpu);
  EXPECT_EQ(r.gpu_busy_ns, 0);
  EXPECT_EQ(r.window.length(), 400 * us);
  EXPECT_EQ(r.loader_stall_ns, 100 * us);
  EXPECT_EQ(r.loader_stall_count, 4u);
  EXPECT_EQ(r.launch_gap_ns, 0);
  expect_partition(r);
  ASSERT_EQ(r.steps.size(), 4u);
  EXPECT_EQ(r.step_median_ns, 100 * us);
  EXPECT_EQ(r.steps[2].index, 2);
  EXPECT_EQ(r.steps[2].data_wait_ns, 25 * us);
  EXPECT_EQ(r.steps[2].forward_ns, 25 * us);
  EXPECT_EQ(r.steps[2].backward_ns, 40 * us);
  EXPECT_EQ(r.steps[2].optimizer_ns, 10 * us);
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings[0].kind, FindingKind::LoaderStall);
  EXPECT_NEAR(r.findings[0].max_speedup, 1.0 / 0.75, 1e-9);
}


// The loader-stall finding suggests as many workers as the training machine had cores (our traces record
// them; capped at 8), and 4 when the trace does not say (Kineto traces).
TEST(Analysis, LoaderStallWorkerSuggestionFollowsRecordedCores) {
  auto suggestion = [](const char* cores) {
    Builder b;
    if (cores) b.t.meta().extra["cpu_cores"] = cores;
    for (int i = 0; i < 4; ++i) {
      b.range("step", i * 100, i * 100 + 100, i);
      b.range("data_wait", i * 100, i * 100 + 40);
    }
    auto r = b.run();
    for (const auto& f : r.findings)
      if (f.kind == FindingKind::LoaderStall) return f.value;
    return std::string("none");
  };
  EXPECT_EQ(suggestion(nullptr), "4");
  EXPECT_EQ(suggestion("2"), "2");
  EXPECT_EQ(suggestion("64"), "8");
  EXPECT_EQ(suggestion("garbage"), "4");
}

// The page-fault counter our engine samples per step: thousands of faults in a short step are an
// allocator-bound step (at least 2 us each); a handful are not.
TEST(Analysis, AllocatorBoundStepFromThePageFaultCounter) {
  auto finding = [](double faults_per_step, const char* allocator) {
    Builder b;
    if (allocator) b.t.meta().extra["cpu_allocator"] = allocator;
    const uint32_t counter = b.t.track_for(TrackKind::Counter, 0, 0, names::kPageFaults);
    for (int i = 0; i < 4; ++i) {
      b.range("step", i * 100000, i * 100000 + 100000, i);  // 100 ms steps
      Event e;
      e.kind = EventKind::Counter;
      e.name = b.t.intern(names::kPageFaults);
      e.start_ns = e.end_ns = (i * 100000 + 99999) * us;
      e.value = faults_per_step;
      b.t.add_event(counter, e);
    }
    auto r = b.run();
    for (const auto& f : r.findings)
      if (f.kind == FindingKind::AllocatorBound) return f;
    return Finding{};
  };
  // 8000 faults per 100 ms step: at least 16 ms (16%).
  Finding f = finding(8000, "glibc");
  EXPECT_EQ(f.id, "allocator_bound");
  EXPECT_EQ(f.knob, "cpu_allocator");
  EXPECT_EQ(f.value, "glibc_tuned");
  EXPECT_NEAR(f.share, 0.16, 1e-9);
  EXPECT_NE(f.message.find("8000 page faults per step"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("at least 16.0 ms of a 100.0 ms step"), std::string::npos) << f.message;
  EXPECT_EQ(finding(8000, "glibc_tuned").value, "tcmalloc");  // already tuned: the other remedy
  EXPECT_TRUE(finding(30, "glibc").id.empty());               // 60 us of 100 ms: nothing to say
}

// Threads against cores, from what our traces record: 2 intra-op + 1 loader thread on 2 cores.
TEST(Analysis, OversubscriptionFinding) {
  auto finding = [](const char* cores, const char* intra, const char* workers) {
    Builder b;
    b.t.meta().extra["cpu_cores"] = cores;
    b.t.meta().extra["intra_op_threads"] = intra;
    b.t.meta().extra["workers"] = workers;
    for (int i = 0; i < 3; ++i) b.range("step", i * 100, i * 100 + 100, i);
    auto r = b.run();
    for (const auto& f : r.findings)
      if (f.kind == FindingKind::Oversubscribed) return f;
    return Finding{};
  };
  Finding f = finding("2", "2", "1");
  EXPECT_EQ(f.knob, "intra_op_threads");
  EXPECT_EQ(f.value, "0");
  EXPECT_NE(f.message.find("2 intra-op threads + 1 loader threads on 2 cores"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("auto: 1"), std::string::npos) << f.message;
  EXPECT_TRUE(finding("2", "1", "1").id.empty());  // the auto default: no oversubscription
  EXPECT_TRUE(finding("8", "4", "2").id.empty());
  EXPECT_TRUE(finding("2", "2", "0").id.empty());  // no loader threads
  EXPECT_TRUE(finding("2", "1", "2").id.empty());  // auto already runs 1 thread: nothing to suggest
}

TEST(Analysis, KinetoNamesForStepsAndDataWait) {
  Builder b;
  b.range("ProfilerStep#12", 0, 100);
  b.range("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 40);
  b.range("## forward ##", 40, 60);
  b.range("Optimizer.step#SGD.step", 80, 100);
  b.range("autograd::engine::evaluate_function: AddBackward0", 60, 80, kNoArg,
          b.t.track_for(TrackKind::CpuThread, 1, 2, "autograd"));
  b.kernel(40, 100, 39);
  auto r = b.run();
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].index, 12);
  EXPECT_EQ(r.loader_stall_ns, 40 * us);
  EXPECT_EQ(r.steps[0].forward_ns, 20 * us);
  EXPECT_EQ(r.steps[0].backward_ns, 20 * us);
  EXPECT_EQ(r.steps[0].optimizer_ns, 20 * us);
}

TEST(Analysis, TopKernelsAndTensorCoreFinding) {
  Builder b;
  b.kernel(0, 60, 0, 7, "volta_sgemm_128x64_nn");
  b.kernel(60, 70, 59, 7, "elementwise_kernel");
  b.kernel(70, 100, 69, 7, "volta_sgemm_128x64_nn");
  auto r = b.run();
  ASSERT_EQ(r.top_kernels.size(), 2u);
  EXPECT_EQ(r.top_kernels[0].name, "volta_sgemm_128x64_nn");
  EXPECT_EQ(r.top_kernels[0].count, 2u);
  EXPECT_EQ(r.top_kernels[0].total_ns, 90 * us);
  EXPECT_NEAR(r.top_kernels[0].share_of_kernel_time, 0.9, 1e-9);
  EXPECT_DOUBLE_EQ(r.tensor_core_share, 0.0);
  bool tc = false;
  for (const auto& f : r.findings) tc |= f.kind == FindingKind::LowTensorCore && f.knob == "amp";
  EXPECT_TRUE(tc);
  // With Tensor Core kernels: no finding.
  Builder c;
  c.kernel(0, 60, 0, 7, "sm80_xmma_gemm_f16f16_f16f32_tensorop");
  auto rc = c.run();
  EXPECT_DOUBLE_EQ(rc.tensor_core_share, 1.0);
  for (const auto& f : rc.findings) EXPECT_NE(f.kind, FindingKind::LowTensorCore);
}

TEST(Analysis, CollectorOffIsReportedAsFinding) {
  Builder b;
  b.range("step", 0, 100, 0);
  b.t.meta().collector_state = "off";
  b.t.meta().collector_reason = "no driver: cuptiActivityEnable failed";
  auto r = b.run();
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings[0].kind, FindingKind::CollectorOff);
  EXPECT_NE(r.findings[0].message.find("no driver"), std::string::npos);
}

TEST(Analysis, EmptyTraceDoesNotCrash) {
  Trace t;
  t.finalize();
  auto r = analyze(t);
  EXPECT_EQ(r.window.length(), 0);
  EXPECT_TRUE(r.findings.empty());
  const std::string j = to_json(r, &t.meta());
  EXPECT_NE(j.find("\"busy_us\""), std::string::npos);
}

TEST(Analysis, JsonHasTheContractFields) {
  Builder b;
  b.range("step", 0, 100, 0);
  b.range("data_wait", 0, 30);
  b.kernel(30, 100, 29);
  auto r = b.run();
  const std::string j = to_json(r, &b.t.meta());
  for (const char* k : {"\"gpu\"", "\"busy_us\"", "\"idle_us\"", "\"loader_stall\"", "\"total_us\"", "\"count\"",
                        "\"launch_gap\"", "\"min_gap_us\"", "\"sync\"", "\"steps\"", "\"median_us\"", "\"kernels\"",
                        "\"findings\"", "\"max_speedup\"", "\"knob\"", "\"evidence_us\""})
    EXPECT_NE(j.find(k), std::string::npos) << k;
  EXPECT_NE(j.find("\"busy_us\":70"), std::string::npos) << j;
}

}  // namespace
}  // namespace tb::prof
