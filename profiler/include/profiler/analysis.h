// Analyses over a finalized Trace, exactly as DESIGN.md "Trace model and analyses" defines them:
// analysed window, GPU busy/idle, loader stall, CPU launch gap, sync points, steps with a per-step
// breakdown, top kernels, and findings mapped to knobs with the most they could gain.
//
// Pure function of (trace, options): no globals, no I/O; safe to run off the UI thread on a trace that is
// not being modified. Times are int64 ns on the trace's clock; shares are fractions of the analysed window
// (or, for per-step figures, of the step).
//
// Rules worth knowing when reading the numbers:
// - GPU activity is kernel/memcpy/memset only (EventKind Kernel/Memcpy/Memset), the union over all streams of
//   the device; Kineto's gpu_user_annotation and cuda_sync rows are never activity.
// - "Training thread" = the CPU track holding the step ranges (ours `step`, Kineto `ProfilerStep#N`); without
//   steps, the CPU track with the most data-wait time, else the one with the most launches.
// - Idle is split per idle interval: loader stall = idle time during which the training thread is in a
//   data-wait range; the rest is a CPU launch gap when it is >= min_gap and the next GPU activity's launch
//   call began after the interval began; otherwise it is other idle. busy + stall + gap + other == window.
// - A CPU-only trace (no GPU activity): gpu busy = 0, idle = window, loader stall = the training thread's
//   data-wait time inside the window, launch gap = 0, the rest other idle.
// - Sync points: host runtime calls that block on the GPU (cudaDeviceSynchronize, cudaStreamSynchronize,
//   cudaEventSynchronize, synchronous cudaMemcpy) inside the window, counted with their host time; in a
//   trace with no runtime calls at all (CPU-only recordings), our `sync` ranges stand for them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/trace.h"

namespace tb::prof {

struct AnalysisOptions {
  int64_t min_gap_ns = 2000;  // launch gaps shorter than this are other idle (2 us default)
  size_t top_kernels = 10;    // how many kernels (by total time) to list
  size_t max_intervals = 100000;  // cap on the intervals kept for highlighting (totals are never capped)
  double finding_min_share = 0.02;  // a class under this share of the window gives no finding
};

struct Interval {
  int64_t t0 = 0;
  int64_t t1 = 0;
  int64_t length() const { return t1 - t0; }
};

struct SyncPoint {
  uint32_t track = 0;  // CPU track and event index of the blocking call (Trace::track(track).events()[event])
  uint32_t event = 0;
  Interval interval;
  std::string name;
};

// One step: all *_ns are time inside [start_ns, end_ns] of that step.
struct StepBreakdown {
  int64_t index = 0;           // step number (our arg, Kineto's #N), else the ordinal
  int64_t start_ns = 0, end_ns = 0;
  int64_t duration_ns() const { return end_ns - start_ns; }
  // Host ranges of the training thread (ours; Kineto: enumerate(DataLoader)...__next__, ## forward ## /
  // DistributedDataParallel.forward, ## backward ## / autograd engine on any thread, Optimizer.step*).
  int64_t data_wait_ns = 0;
  int64_t h2d_ns = 0;          // our h2d range; Kineto: HtoD memcpy GPU time
  int64_t forward_ns = 0;
  int64_t backward_ns = 0;
  int64_t optimizer_ns = 0;
  // GPU side (0 on a CPU-only trace, where idle == duration).
  int64_t gpu_busy_ns = 0;
  int64_t gpu_idle_ns = 0;
  int64_t loader_stall_ns = 0;
  int64_t launch_gap_ns = 0;
  int64_t other_idle_ns = 0;
  int64_t sync_ns = 0;         // host time in sync points that start in this step
  uint32_t sync_count = 0;
  uint32_t kernel_count = 0;
};

struct KernelStat {
  std::string name;
  uint64_t count = 0;
  int64_t total_ns = 0;
  int64_t min_ns = 0;
  int64_t max_ns = 0;
  double share_of_busy = 0;  // total_ns / GPU busy
  bool tensor_core = false;  // name suggests Tensor Core math (heuristic on cuDNN/cuBLAS kernel names)
};

enum class FindingKind {
  LoaderStall, LaunchGap, SyncPoints, LowTensorCore, CollectorOff, DroppedRecords,
  AllocatorBound,  // our traces: page faults per step cost a visible share of it (the cpu_allocator knob)
  Oversubscribed,  // our traces: intra-op threads + loader threads > cores
};
const char* to_string(FindingKind k);

struct Finding {
  FindingKind kind = FindingKind::LoaderStall;
  std::string id;          // stable machine id: "loader_stall", "launch_gap", "sync_points", "low_tensor_core", ...
  std::string message;     // one readable line with the numbers
  std::string knob;        // the knob that addresses it (knob catalog id), "" if none
  std::string value;       // the value to set it to ("4", "on", "fp16", ...)
  std::vector<std::string> also;  // other knobs that help ("prefetch", "pin_memory", ...)
  double share = 0;        // fraction of the analysed window (or step time) it accounts for
  double max_speedup = 1;  // upper bound on the throughput gain from removing it: 1 / (1 - share)
  Interval evidence;       // where to look on the timeline (the largest such interval)
};

struct AnalysisResult {
  Interval window;           // analysed window
  bool window_from_steps = false;
  bool has_gpu = false;      // any GPU activity in the trace
  int64_t gpu_busy_ns = 0;
  int64_t gpu_idle_ns = 0;   // window - busy
  int64_t loader_stall_ns = 0;
  uint32_t loader_stall_count = 0;   // idle intervals holding loader-stall time
  std::vector<Interval> loader_stall_intervals;  // for highlighting (capped by max_intervals)
  int64_t launch_gap_ns = 0;
  uint32_t launch_gap_count = 0;     // idle intervals holding launch-gap time
  int64_t min_gap_ns = 0;            // the option used
  std::vector<Interval> launch_gap_intervals;
  int64_t other_idle_ns = 0;
  uint32_t idle_interval_count = 0;
  uint32_t sync_count = 0;
  int64_t sync_ns = 0;
  std::vector<SyncPoint> sync_points;  // capped by max_intervals
  std::vector<StepBreakdown> steps;
  int64_t step_median_ns = 0;
  uint64_t kernel_count = 0;       // kernels inside the trace (all, not only the window)
  uint64_t memcpy_count = 0;
  uint64_t memset_count = 0;
  std::vector<KernelStat> top_kernels;
  double tensor_core_share = 0;    // share of GEMM/conv kernel time in Tensor Core kernels (-1: no GEMM/conv)
  int32_t training_track = -1;     // index into Trace::tracks(), -1 none
  std::vector<Finding> findings;   // most important first
  std::vector<std::string> notes;  // caveats ("no correlation ids: launch gaps cannot be attributed", ...)
};

// `trace` must be finalized (load_trace, Recorder::collect and CuptiCollector::collect return finalized traces;
// call Trace::finalize() after building or merging one by hand).
AnalysisResult analyze(const Trace& trace, const AnalysisOptions& options = {});

// JSON object with the fields DESIGN.md's CLI contract lists (gpu.busy_us, gpu.idle_us,
// loader_stall.total_us/count, launch_gap.total_us/count/min_gap_us, sync.count/total_us, steps.count/
// median_us, kernels.count, findings[]) plus the window, per-step breakdown, top kernels and intervals.
std::string to_json(const AnalysisResult& result, const TraceMetadata* meta = nullptr);

}  // namespace tb::prof
