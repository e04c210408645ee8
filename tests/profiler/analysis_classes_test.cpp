// The classes of time and the bounds that real traces got wrong (docs/analysis.md has the definitions), each on a
// small trace built by hand with the expected numbers worked out in the comments, then on the real
// Kineto traces of tests/testdata with figures recomputed independently from their raw JSON.
#include <gtest/gtest.h>

#include <algorithm>

#include "profiler/analysis.h"
#include "profiler/trace.h"
#include "profiler/trace_io.h"
#include "analysis_test_util.h"
#include "trace_builder.h"

namespace tb::prof {
namespace {

using test_util::Builder;
using test_util::us;
using test_util::find;
using test_util::load;

void steps(Builder& b, int n, int64_t len) {
  for (int i = 0; i < n; ++i) b.range("ProfilerStep#1", i * len, (i + 1) * len, i);
}

// Review 1: NCCL kernels are communication, never compute.
TEST(AnalysisClasses, CommunicationIsItsOwnClass) {
  Builder b;
  steps(b, 3, 100);  // window [0,300]
  // Step 0: NCCL [0,50] on stream 20 while compute runs [30,60] on stream 7: comm 50, of it [30,50] overlapped.
  b.kernel(0, 50, 0, 20, "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)");
  b.kernel(30, 60, 1, 7, "volta_sgemm_128x64_nn");
  // Steps 1, 2: compute only, [100,200] and [200,300].
  b.kernel(100, 200, 100, 7, "elementwise_kernel");
  b.kernel(200, 300, 200, 7, "elementwise_kernel");
  auto r = b.run();
  EXPECT_EQ(r.gpu_busy_ns, 260 * us);  // [0,60] + [100,300]
  EXPECT_EQ(r.comm_ns, 50 * us);
  EXPECT_EQ(r.compute_ns, 230 * us);      // [30,60] + [100,300]
  EXPECT_EQ(r.comm_exposed_ns, 30 * us);  // [0,30]
  EXPECT_NEAR(r.comm_overlap, 0.4, 1e-9);  // 20 of 50
  EXPECT_EQ(r.steps[0].comm_exposed_ns, 30 * us);
  const Finding* f = find(r, FindingKind::ExposedComm);
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->share, 0.1, 1e-9);  // 30 of 300
  EXPECT_NEAR(f->max_speedup, 1.0 / 0.9, 1e-9);
  EXPECT_TRUE(f->bounded);
  EXPECT_EQ(f->evidence.t0, 0);
  EXPECT_EQ(f->evidence.t1, 30 * us);
  ASSERT_FALSE(r.top_kernels.empty());
  for (const auto& k : r.top_kernels) EXPECT_EQ(k.communication, k.name.rfind("nccl", 0) == 0) << k.name;
}

// Review 2: "gemm" inside "fbgemm" is no GEMM; "convert" is no convolution.
TEST(AnalysisClasses, MatmulKernelsAreMatchedOnWholeTokens) {
  Builder b;
  b.kernel(0, 50, 0, 7, "void fbgemm_gpu::permute_2D_data_kernel<false, int, int>(int, int)");
  b.kernel(50, 60, 49, 7, "void convert_fp8_kernel<float>(float const*)");
  b.kernel(60, 80, 59, 7, "ampere_sgemm_128x64_nn");
  b.kernel(80, 100, 79, 7, "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x64_32x6_nt_align1>(Params)");
  auto r = b.run();
  // Matmul: sgemm 20 + cutlass 20 of 100 us compute; the cutlass one is on Tensor Cores.
  EXPECT_NEAR(r.matmul_share, 0.4, 1e-9);
  EXPECT_NEAR(r.tensor_core_share, 0.5, 1e-9);
  EXPECT_EQ(find(r, FindingKind::LowTensorCore), nullptr);  // half on Tensor Cores: nothing to say
}

// Review 9: no TF32 advice for a GPU that cannot run it (compute capability 7 = V100).
TEST(AnalysisClasses, Tf32OnlyFromAmpere) {
  for (const char* cc : {"7.0", "8.0"}) {
    Builder b;
    b.t.meta().extra["compute_capability"] = cc;
    steps(b, 3, 100);
    for (int i = 0; i < 3; ++i) b.kernel(i * 100, i * 100 + 90, i * 100, 7, "volta_sgemm_128x64_nn");
    auto r = b.run();
    const Finding* f = find(r, FindingKind::LowTensorCore);
    ASSERT_NE(f, nullptr) << cc;
    const bool tf32 = std::find(f->also.begin(), f->also.end(), "tf32") != f->also.end();
    EXPECT_EQ(tf32, std::string(cc) == "8.0") << cc;
  }
}

// Review 3: the host inside cudaMalloc/cudaFree or a first launch that loads the module is not late to
// launch; no knob is bounded without steps.
TEST(AnalysisClasses, SlowRuntimeCallsAreNotLaunchGaps) {
  Builder b;
  b.kernel(0, 10, 0);
  b.runtime("cudaMalloc", 12, 500);  // host in the allocator [12,500]
  b.kernel(510, 520, 505);           // launched at 505 > 10: the host was late for the rest
  b.runtime("cudaLaunchKernel", 530, 3530, 900);  // a 3 ms first launch (lazy loading)
  Event k;
  k.kind = EventKind::Kernel;
  k.name = b.t.intern("k");
  k.start_ns = 3540 * us;
  k.end_ns = 3550 * us;
  k.correlation = 900;
  b.t.add_event(b.t.track_for(TrackKind::GpuStream, 0, 7), k);
  auto r = b.run();
  // Idle [10,510]: 488 in cudaMalloc, [10,12] + [500,510] = 12 late. Idle [520,3540]: 3000 in the slow
  // launch [530,3530], [520,530] + [3530,3540] = 20 late.
  EXPECT_EQ(r.runtime_idle_ns, 3488 * us);
  EXPECT_EQ(r.launch_gap_ns, 32 * us);
  EXPECT_EQ(r.gpu_busy_ns + idle_total(r), r.window.length());
  const Finding* rt = find(r, FindingKind::RuntimeCalls);
  ASSERT_NE(rt, nullptr);
  EXPECT_FALSE(rt->bounded);  // no steps
  EXPECT_NE(rt->message.find("no gain bounded: the trace has no steps"), std::string::npos) << rt->message;
  EXPECT_EQ(rt->message.find("at most"), std::string::npos) << rt->message;
}

// Review 6: a sync while the GPU is busy costs the GPU nothing; the bound is the idle the sync causes.
TEST(AnalysisClasses, SyncBoundIsTheIdleItCauses) {
  Builder b;
  steps(b, 3, 1000);
  for (int i = 0; i < 3; ++i) {
    const int64_t s = i * 1000;
    b.kernel(s, s + 990, s);                             // GPU busy [s, s+990]
    b.runtime("cudaDeviceSynchronize", s + 10, s + 990);  // host waits 980 us
  }
  auto r = b.run();
  EXPECT_EQ(r.sync_count, 3u);
  EXPECT_EQ(r.sync_ns, 3 * 980 * us);
  // Idle [990,1000], [1990,2000], [2990,3000]: each began while the host waited -> sync idle 30 us.
  EXPECT_EQ(r.sync_idle_ns, 30 * us);
  EXPECT_EQ(r.gpu_busy_ns + idle_total(r), r.window.length());
  EXPECT_EQ(find(r, FindingKind::SyncPoints), nullptr);  // 30 of 3000 us: under 2%, whatever the host time
}

// Work queued before the GPU went idle was not held back by the host, whatever the host was doing: a sync
// entered with the queue still full drains it, and the gaps between the queued kernels are not the sync's
// (train_step_rank0: 1 021 such gaps, 0.976 ms, were "after a host sync"; HTA's idle breakdown calls none of
// them host wait). The same for a data wait or a cudaFree under a queued gap. A, B, C (stream 7) and E, G
// (stream 20) are queued at the start; D and F are launched late.
TEST(AnalysisClasses, QueuedWorkIsNotHeldBackByTheHost) {
  Builder b;
  b.kernel(10, 30, 0);               // A, launch [0,1]
  b.kernel(31, 50, 1);               // B, queued at 2: [30,31] launch overhead
  b.kernel(60, 70, 2);               // C, queued at 3: [50,60] other, although the host sits in the sync
  b.kernel(105, 115, 3, 20, "E");    // E, queued at 4: [100,105] other, although the host waits for data
  b.kernel(170, 180, 4, 20, "G");    // G, queued at 5: [160,170] other, although the host is in cudaFree
  b.runtime("cudaDeviceSynchronize", 5, 80);
  b.kernel(90, 100, 82);             // D, launched after the sync returned: [70,90] is the sync's
  b.range("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 100, 140);
  b.kernel(150, 160, 145);           // F: [115,140] loader stall, [140,150] launch gap
  b.runtime("cudaFree", 165, 175);
  auto r = b.run();
  // No steps: window [10,180], busy 20 + 19 + 10 + 10 + 10 + 10 + 10 = 89, idle 81.
  EXPECT_EQ(r.gpu_busy_ns, 89 * us);
  EXPECT_EQ(r.sync_idle_ns, 20 * us);        // [70,90] only; [50,60] was counted too before
  EXPECT_EQ(r.loader_stall_ns, 25 * us);     // [115,140]; not [100,105]
  EXPECT_EQ(r.runtime_idle_ns, 0);           // not [165,170]
  EXPECT_EQ(r.launch_gap_ns, 10 * us);       // [140,150]
  EXPECT_EQ(r.launch_overhead_ns, 1 * us);   // [30,31]
  EXPECT_EQ(r.other_idle_ns, 25 * us);       // [50,60] [100,105] [160,170]
  EXPECT_EQ(r.event_wait_ns, 0);
  EXPECT_EQ(r.gpu_busy_ns + idle_total(r), r.window.length());
}

// Review 4: GPU work belongs to the step that launched it when the CPU runs ahead; the idle before the
// first kernel is lead-in, not a launch gap.
TEST(AnalysisClasses, GpuWorkBelongsToTheLaunchingStep) {
  Builder b;
  steps(b, 3, 10);  // CPU steps [0,10] [10,20] [20,30]
  b.kernel(5, 25, 1);    // launched in step 0
  b.kernel(25, 45, 11);  // step 1
  b.kernel(45, 65, 21);  // step 2
  auto r = b.run();
  EXPECT_EQ(r.window.t1, 65 * us);  // to the end of the last step's GPU work
  EXPECT_EQ(r.gpu_busy_ns, 60 * us);
  EXPECT_EQ(r.lead_in_ns, 5 * us);
  EXPECT_EQ(r.launch_gap_ns, 0);
  ASSERT_EQ(r.steps.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(r.steps[i].kernel_count, 1u) << i;
    EXPECT_EQ(r.steps[i].gpu_busy_ns, 20 * us) << i;
  }
  EXPECT_EQ(r.steps[0].gpu_start_ns, 0);
  EXPECT_EQ(r.steps[0].gpu_end_ns, 25 * us);
  EXPECT_EQ(r.steps[0].edge_idle_ns, 5 * us);
  EXPECT_EQ(r.steps[2].gpu_start_ns, 45 * us);
}

// Review 7: a step that starts 1 ns before the previous ends is clamped, not dropped; nested steps fold.
TEST(AnalysisClasses, OverlappingAndNestedSteps) {
  Builder b;
  Event e;
  e.kind = EventKind::Range;
  e.name = b.t.intern("ProfilerStep#7");
  e.start_ns = 0;
  e.end_ns = 100 * us;
  b.t.add_event(b.cpu, e);
  e.name = b.t.intern("ProfilerStep#8");
  e.start_ns = 100 * us - 1;  // 1 ns of rounding
  e.end_ns = 200 * us;
  b.t.add_event(b.cpu, e);
  b.range("ProfilerStep#9", 200, 300);
  b.range("ProfilerStep#10", 210, 250);  // inside #9
  auto r = b.run();
  ASSERT_EQ(r.steps.size(), 3u);
  EXPECT_EQ(r.steps[1].index, 8);
  EXPECT_EQ(r.steps[1].start_ns, 100 * us);
  EXPECT_EQ(r.step_median_ns, 100 * us);
  bool clamped = false, nested = false;
  for (const auto& n : r.notes) {
    clamped |= n.find("began before the previous one ended") != std::string::npos;
    nested |= n.find("nested inside another step") != std::string::npos;
  }
  EXPECT_TRUE(clamped);
  EXPECT_TRUE(nested);
}

// Review 8: launches with no kernels are a trace without its GPU side, not a clean CPU-only run.
TEST(AnalysisClasses, LaunchesWithoutGpuActivityWarn) {
  Builder b;
  steps(b, 3, 100);
  for (int i = 0; i < 5; ++i) b.runtime("cudaLaunchKernel", i * 10, i * 10 + 2, 500 + i);
  auto r = b.run();
  EXPECT_FALSE(r.has_gpu);
  EXPECT_EQ(r.launches, 5u);
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings[0].kind, FindingKind::GpuNotRecorded);
  EXPECT_NE(r.findings[0].message.find("5 kernel launches"), std::string::npos);
}

// Review 5: two processes with their own devices in one file are analysed apart; a correlation id used by
// both processes links each kernel to its own process.
TEST(AnalysisClasses, ProcessesAndDevicesAreNotMerged) {
  Builder b;
  const uint32_t cpu2 = b.t.track_for(TrackKind::CpuThread, 2, 1, "rank1");
  steps(b, 3, 100);
  for (int i = 0; i < 2; ++i) b.range("ProfilerStep#1", i * 100, (i + 1) * 100, i, cpu2);
  auto add = [&](uint32_t cpu, int64_t device, uint64_t corr, int64_t a, int64_t z) {
    Event l;
    l.kind = EventKind::Runtime;
    l.name = b.t.intern("cudaLaunchKernel");
    l.start_ns = (a - 1) * us;
    l.end_ns = a * us;
    l.correlation = corr;
    b.t.add_event(cpu, l);
    Event k;
    k.kind = EventKind::Kernel;
    k.name = b.t.intern("k");
    k.start_ns = a * us;
    k.end_ns = z * us;
    k.correlation = corr;
    b.t.add_event(b.t.track_for(TrackKind::GpuStream, device, 7), k);
  };
  add(b.cpu, 0, 1, 10, 60);  // process 1 -> device 0, ids 1..3
  add(b.cpu, 0, 2, 110, 160);
  add(b.cpu, 0, 3, 210, 260);
  add(cpu2, 1, 1, 20, 90);  // process 2 -> device 1, id 1 again
  add(cpu2, 1, 7, 120, 190);
  auto r = b.run();
  EXPECT_EQ(r.pid, 1);  // the process with the most steps
  EXPECT_EQ(r.device, 0);
  EXPECT_EQ(r.devices.size(), 2u);
  EXPECT_EQ(r.gpu_busy_ns, 150 * us);  // device 0 only
  EXPECT_EQ(r.kernel_count, 3u);
  for (const Flow& f : b.t.flows())
    EXPECT_EQ(b.t.track(f.src_track).pid(), b.t.track(f.dst_track).pid() + 1) << "corr " << f.correlation;
  EXPECT_EQ(b.t.flows().size(), 5u);
  AnalysisOptions o;
  o.device = 1;
  auto r1 = analyze(b.t, o);
  EXPECT_EQ(r1.pid, 2);  // the process launching to device 1
  EXPECT_EQ(r1.steps.size(), 2u);
  EXPECT_EQ(r1.gpu_busy_ns, 140 * us);
}

// Fewer than 3 steps: findings keep their share, promise nothing.
TEST(AnalysisClasses, FewStepsPromiseNoGain) {
  Builder b;
  steps(b, 2, 100);
  b.range("data_wait", 0, 50);
  b.kernel(50, 100, 49);
  b.range("data_wait", 100, 150);
  b.kernel(150, 200, 149);
  auto r = b.run();
  EXPECT_FALSE(r.trusted);
  const Finding* f = find(r, FindingKind::LoaderStall);
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->share, 0.5, 1e-9);
  EXPECT_FALSE(f->bounded);
  EXPECT_NE(f->message.find("no gain bounded: 2 step(s), need 3"), std::string::npos) << f->message;
  const std::string j = to_json(r);
  EXPECT_NE(j.find("\"max_speedup\":null"), std::string::npos);
}

// An LBFGS step: Optimizer.step runs the closure, whose forward and backward lie inside it. They are the
// closure's; the optimizer's own time is the rest (before, an LBFGS step's optimizer phase was the whole step on
// top of its forward and backward).
TEST(AnalysisClasses, AClosureInsideTheOptimizerStepIsForwardAndBackward) {
  Builder b;
  steps(b, 1, 100);
  b.range("Optimizer.step#LBFGS.step", 5, 95);
  for (int k = 0; k < 3; ++k) {
    b.range("## forward ##", 10 + 25 * k, 20 + 25 * k);
    b.range("## backward ##", 20 + 25 * k, 30 + 25 * k);
  }
  b.kernel(10, 90, 9);
  auto r = b.run();
  EXPECT_EQ(r.steps[0].forward_ns, 30 * us);
  EXPECT_EQ(r.steps[0].backward_ns, 30 * us);
  EXPECT_EQ(r.steps[0].optimizer_ns, 30 * us);  // 90 - the closures' 60
  EXPECT_LE(r.steps[0].forward_ns + r.steps[0].backward_ns + r.steps[0].optimizer_ns, r.steps[0].duration_ns());
}

// Review 9: torch.compile's forward and `## data_load ##` are recognised.
TEST(AnalysisClasses, CompiledForwardAndDataLoadAnnotation) {
  Builder b;
  steps(b, 1, 100);
  b.range("## data_load ##", 0, 30);
  b.range("CompiledFunction", 30, 80);
  b.kernel(30, 100, 29);
  auto r = b.run();
  EXPECT_EQ(r.steps[0].forward_ns, 50 * us);
  EXPECT_EQ(r.loader_stall_ns, 30 * us);
}

// No step ranges: PyTorch's own Optimizer.step# calls delimit the steps (end of one to end of the next).
TEST(AnalysisClasses, StepsInferredFromOptimizerCalls) {
  Builder b;
  // Four iterations of 100 us: forward/backward [s, s+80], optimizer [s+80, s+100].
  for (int i = 0; i < 4; ++i) {
    const int64_t s = i * 100;
    b.range("## forward ##", s, s + 40);
    b.range("Optimizer.step#SGD.step", s + 80, s + 100);
    b.kernel(s + 5, s + 95, s + 1);
  }
  auto r = b.run();
  EXPECT_TRUE(r.steps_inferred);
  ASSERT_EQ(r.steps.size(), 3u);  // between the 4 optimizer ends: [100,200], [200,300], [300,400]
  EXPECT_EQ(r.steps[0].start_ns, 100 * us);
  EXPECT_EQ(r.steps[2].end_ns, 400 * us);
  EXPECT_EQ(r.step_median_ns, 100 * us);
  EXPECT_TRUE(r.trusted);
  bool said = false;
  for (const auto& n : r.notes) said |= n.find("inferred from the optimizer") != std::string::npos;
  EXPECT_TRUE(said);
  // Two calls are not enough to infer anything.
  Builder c;
  c.range("Optimizer.step#SGD.step", 0, 10);
  c.range("Optimizer.step#SGD.step", 20, 30);
  c.kernel(0, 30, 0);
  EXPECT_TRUE(c.run().steps.empty());
}

// Host ops by self time: aten::conv2d [0,50] holds aten::convolution [5,45], which holds a 10 us launch.
TEST(AnalysisClasses, OpSelfTime) {
  Builder b;
  steps(b, 1, 100);
  b.range("aten::conv2d", 0, 50);
  b.range("aten::convolution", 5, 45);
  b.kernel(60, 90, 20);  // its cudaLaunchKernel runs [20,21]
  b.range("aten::conv2d", 60, 70);
  auto r = b.run();
  auto op = [&](const char* n) {
    for (const auto& o : r.top_ops)
      if (o.name == n) return o;
    return OpStat{};
  };
  EXPECT_EQ(op("aten::conv2d").count, 2u);
  EXPECT_EQ(op("aten::conv2d").total_ns, 60 * us);
  EXPECT_EQ(op("aten::conv2d").self_ns, 20 * us);      // 50 - 40 + 10
  EXPECT_EQ(op("aten::convolution").self_ns, 39 * us);  // 40 - the 1 us launch
  EXPECT_TRUE(op("cudaLaunchKernel").runtime);
  EXPECT_EQ(op("ProfilerStep#1").count, 0u);  // the step itself is not an op
}

// 30 launches of 1 us each, kernels starting 2 us after their launch; one launch call of 500 us (lazy
// loading) and one kernel starting 3 ms after its launch on an idle GPU are named.
TEST(AnalysisClasses, LaunchOutliersAreNamed) {
  Builder b;
  for (int i = 0; i < 30; ++i) b.kernel(i * 20 + 2, i * 20 + 10, i * 20, 7, "k");  // launch [t, t+1]
  b.runtime("cudaLaunchKernel", 700, 1200, 9001);  // a 500 us call
  Event k;
  k.kind = EventKind::Kernel;
  k.name = b.t.intern("slow_to_launch");
  k.start_ns = 1202 * us;
  k.end_ns = 1210 * us;
  k.correlation = 9001;
  b.t.add_event(b.t.track_for(TrackKind::GpuStream, 0, 7), k);
  b.kernel(5000, 5010, 1990, 7, "late");  // launched at 1990, starts 3010 us later on an idle GPU
  auto r = b.run();
  EXPECT_EQ(r.launch_median_ns, 1 * us);
  EXPECT_EQ(r.delay_median_ns, 2 * us);
  ASSERT_EQ(r.launch_outliers.size(), 2u);
  EXPECT_TRUE(r.launch_outliers[0].slow_call);
  EXPECT_EQ(r.launch_outliers[0].kernel, "slow_to_launch");
  EXPECT_EQ(r.launch_outliers[0].launch_ns, 500 * us);
  EXPECT_FALSE(r.launch_outliers[1].slow_call);
  EXPECT_EQ(r.launch_outliers[1].kernel, "late");
  EXPECT_EQ(r.launch_outliers[1].delay_ns, 3010 * us);
}

// On an H100 the collector's first callback default kept a runtime launch's own driver call (same correlation
// id) beside it: a launch is counted once. A CUDA graph's one launch runs many kernels: its call counts once in
// the median launch call (counted per kernel, its 7 ms became the "typical" launch) and is no slow-call outlier.
TEST(AnalysisClasses, ALaunchIsCountedOnceAndAGraphLaunchOnce) {
  Builder b;
  for (int i = 0; i < 30; ++i) {
    b.kernel(i * 20 + 2, i * 20 + 10, i * 20, 7, "k");  // cudaLaunchKernel [t, t+1]
    Event d;
    d.kind = EventKind::Driver;
    d.name = b.t.intern("cuLaunchKernel");
    d.start_ns = i * 20 * us;
    d.end_ns = d.start_ns + 1 * us;
    d.correlation = b.next_corr;  // the kernel's, as the runtime call's
    b.t.add_event(b.cpu, d);
  }
  b.runtime("cudaGraphLaunch", 700, 707, 9001);  // one 7 ms launch of 40 kernels
  for (int i = 0; i < 40; ++i) {
    Event k;
    k.kind = EventKind::Kernel;
    k.name = b.t.intern("graph_kernel");
    k.start_ns = (710 + i * 10) * us;
    k.end_ns = k.start_ns + 8 * us;
    k.correlation = 9001;
    b.t.add_event(b.t.track_for(TrackKind::GpuStream, 0, 7), k);
  }
  auto r = b.run();
  EXPECT_EQ(r.launches, 31u);
  EXPECT_EQ(r.launch_median_ns, 1 * us);
  for (const auto& o : r.launch_outliers) EXPECT_FALSE(o.slow_call) << o.kernel;
}

// train_step_rank0 (V100, 5 ProfilerSteps, 4350 kernels): every step launches 870 kernels; the profiler's
// GPU work runs 66-90 ms behind the CPU (figures recomputed from the raw JSON, review 4).
TEST(AnalysisRealTraces, TrainStepKernelsBelongToTheirSteps) {
  auto t = load("kineto_train_step_rank0.json.gz");
  ASSERT_TRUE(t);
  auto r = analyze(*t);
  ASSERT_EQ(r.steps.size(), 5u);
  for (const auto& s : r.steps) EXPECT_EQ(s.kernel_count, 870u) << s.index;
  EXPECT_EQ(r.kernel_count, 4350u);
  EXPECT_GT(r.window.t1, r.steps.back().end_ns + 60'000'000);  // the last step's GPU work ends > 60 ms later
  // The lead-in (3.488423 ms from the first step's start, ts 1712195495502094.565, to the first kernel,
  // 1712195495505582.988) is not a launch gap. The launch gap is HTA's "host wait" on the same trace
  // (1.347 ms: the next launch call started after the GPU went idle) plus the gaps that began while the host
  // was still inside the next kernel's launch call (126 gaps, 0.744 ms; the raw JSON gives 1.259 + 0.836 ms =
  // 2.095 ms over the idle intervals >= 2 us of the window before the runtime-call split).
  EXPECT_EQ(r.lead_in_ns, 3'488'423);
  EXPECT_NEAR(static_cast<double>(r.launch_gap_ns), 2.091e6, 0.001e6);
  // Other was 1.035 ms before that split, 0.292 ms until the gaps between queued kernels while the host sat
  // in the final cudaDeviceSynchronize stopped counting as the sync's (1 021 gaps, 0.976 ms: 0.084 ms of
  // them >= 2 us are other now, the rest launch overhead).
  EXPECT_NEAR(static_cast<double>(r.other_idle_ns), 0.376e6, 0.001e6);
  EXPECT_EQ(r.sync_idle_ns, 0);
  EXPECT_EQ(r.gpu_busy_ns + idle_total(r), r.window.length());
  EXPECT_EQ(t->meta().extra.at("compute_capability"), "7.0");
}

// alexnet (A100, no steps, a warm-up forward): the 12.85 s "launch gap" was cudaMalloc/cudaFree/stream
// creation and lazy loading in the first launches; no cuda_graphs promise.
TEST(AnalysisRealTraces, AlexnetWarmupIsRuntimeNotLaunchGap) {
  auto t = load("kineto_alexnet_a100.json.gz");
  ASSERT_TRUE(t);
  auto r = analyze(*t);
  EXPECT_TRUE(r.steps.empty());
  EXPECT_GT(r.runtime_idle_ns, r.gpu_idle_ns * 9 / 10);  // review: 71.5% + 23.6% of the idle
  for (const auto& f : r.findings) EXPECT_FALSE(f.bounded) << f.message;
  const Finding* gap = find(r, FindingKind::LaunchGap);
  if (gap) EXPECT_LT(gap->share, 0.05);
}

// nccl_sampled_rank0 (A100, 2 steps, 128-rank job): NCCL is 396.2 ms of communication, not compute; the
// fbgemm kernels are no GEMMs, so no Tensor Core finding (review 1, 2).
TEST(AnalysisRealTraces, NcclRankCommunicationAndNoFbgemmMatmul) {
  auto t = load("kineto_nccl_sampled_rank0.json.gz");
  ASSERT_TRUE(t);
  auto r = analyze(*t);
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_FALSE(r.trusted);
  EXPECT_NEAR(static_cast<double>(r.comm_ns), 396.2e6, 0.5e6);
  EXPECT_EQ(find(r, FindingKind::LowTensorCore), nullptr);
  const Finding* c = find(r, FindingKind::ExposedComm);
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(c->bounded);
  EXPECT_EQ(r.gpu_busy_ns + idle_total(r), r.window.length());
}

}  // namespace
}  // namespace tb::prof
