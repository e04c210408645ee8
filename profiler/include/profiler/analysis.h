// Analyses over a finalized Trace, exactly as docs/analysis.md defines them:
// analysed window, GPU busy/idle, loader stall, CPU launch gap, sync points, steps with a per-step
// breakdown, top kernels, and findings mapped to knobs with the most they could gain.
//
// Pure function of (trace, options): no globals, no I/O; safe to run off the UI thread on a trace that is
// not being modified. Times are int64 ns on the trace's clock; shares are fractions of the analysed window
// (or, for per-step figures, of the step).
//
// Rules worth knowing when reading the numbers (docs/analysis.md has the long form):
// - Scope: one GPU and one process. A file holding several devices or processes (concatenated ranks) is
//   analysed for the process holding the most steps and the device it launches to (AnalysisOptions::device
//   picks another); the others are named in a note, never mixed in.
// - GPU activity is kernel/memcpy/memset only (EventKind Kernel/Memcpy/Memset), the union over all streams of
//   the device; Kineto's gpu_user_annotation and cuda_sync rows are never activity. Activity is split into
//   compute (kernels), communication (NCCL/Gloo collective and send/recv kernels, never compute) and memory
//   (memcpy/memset); exposed communication = communication time not overlapped by compute.
// - "Training thread" = the CPU track holding the step ranges (ours `step`, Kineto `ProfilerStep#N`); without
//   steps, the CPU track with the most data-wait time, else the one with the most launches.
// - Without step ranges, steps are inferred from PyTorch's `Optimizer.step#` calls when there are at least 3
//   (end of one to end of the next), with a note; else there are none.
// - Steps: overlaps up to step_overlap_tolerance_ns are clamped, nested steps fold into the outer one, both
//   with a note. GPU work belongs to the step that launched it (correlation ids); a step's GPU span runs from
//   the end of the previous step's GPU work to the end of its own, and the window from the first step's start
//   to the end of the last step's GPU work (the CPU runs ahead of the GPU).
// - Every idle interval first gives up the profiler's own time (TuneBench's pauses, CUPTI's overhead records:
//   its own class, "profiler (TuneBench)"); the rest is split, in this order of precedence, into: loader stall (training thread in a
//   data-wait range); sync (the interval began while a host thread was blocked in a sync call: the queue
//   ran dry because the host waited); runtime (a host thread inside a slow CUDA runtime call: allocation,
//   stream creation, module loading, a launch taking >= 1 ms); lead-in / tail (before the first / after the
//   last GPU activity of the window); launch gap (>= min_gap and the next activity was launched after the
//   GPU went idle: the host was late); launch overhead (< min_gap); event wait (the next work was queued,
//   its stream was free before the GPU went idle, the last work ran on another stream, and a wait on its
//   stream is recorded: cudaStreamWaitEvent / Kineto's "Stream Wait Event"); other (the next work was queued
//   and nothing recorded says why the GPU waited: same-stream start latency, events missing from the trace).
//   The host's classes (loader stall, sync, runtime) take only an interval whose next work was not queued
//   yet (its launch call had not returned when the GPU went idle): queued work was held on the GPU side.
//   Launch-gap time during which the launching thread recorded nothing (no op, no runtime call; steps and
//   profiler spans aside) is also counted as "host time not recorded". busy + all of these == window.
// - A CPU-only trace (no GPU activity): gpu busy = 0, idle = window, loader stall = the training thread's
//   data-wait time inside the window, the rest other idle.
// - Sync points: host runtime calls that block on the GPU (cudaDeviceSynchronize, cudaStreamSynchronize,
//   cudaEventSynchronize, synchronous cudaMemcpy) inside the window, counted with their host time; in a
//   trace with no runtime calls at all (CPU-only recordings), our `sync` ranges stand for them.
// - Findings are bounded by the time their class really takes (Amdahl: 1 / (1 - share)); with fewer than
//   min_trusted_steps steps they carry a caveat and promise no gain.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/cuda_graphs.h"
#include "profiler/compile_lane.h"
#include "profiler/trace.h"

namespace tb::prof {

struct AnalysisOptions {
  int64_t min_gap_ns = 2000;  // launch gaps shorter than this are other idle (2 us default)
  size_t top_kernels = 10;    // how many kernels (by total time) to list
  size_t top_ops = 20;        // how many host ops (by self time) to list
  size_t max_intervals = 100000;  // cap on the intervals kept for highlighting (totals are never capped)
  double finding_min_share = 0.02;  // a class under this share of the window gives no finding
  int64_t device = -1;               // GPU device to analyse; -1: the one the analysed process launches to
  int64_t pid = -1;                  // process to analyse (one rank of a merged trace); -1: the one with the steps
  int64_t step_overlap_tolerance_ns = 10000;  // adjacent steps overlapping by at most this are clamped (10 us)
  size_t min_trusted_steps = 3;      // fewer steps: findings say so and promise no gain
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
  // Outside training right after this step, before the next (a script's validation or checkpoint at the
  // end of an epoch): not in the step's duration, shown beside it.
  int64_t outside_after_ns = 0;
  // GPU side (0 on a CPU-only trace, where idle == duration).
  // GPU side, over the step's GPU span [gpu_start_ns, gpu_end_ns] (= the step itself when the trace has no
  // correlation ids); busy + the idle classes == span. 0 on a CPU-only trace, where idle == duration.
  int64_t gpu_start_ns = 0, gpu_end_ns = 0;
  int64_t gpu_busy_ns = 0;
  int64_t compute_ns = 0;      // union of compute kernels
  int64_t comm_ns = 0;         // union of communication kernels
  int64_t comm_exposed_ns = 0; // communication not overlapped by compute
  int64_t gpu_idle_ns = 0;
  int64_t loader_stall_ns = 0;
  int64_t sync_idle_ns = 0;
  int64_t runtime_idle_ns = 0;
  int64_t edge_idle_ns = 0;    // lead-in + tail of the window falling in this step
  int64_t launch_gap_ns = 0;
  int64_t launch_overhead_ns = 0;
  int64_t event_wait_ns = 0;   // cross-stream / event waits
  int64_t other_idle_ns = 0;
  int64_t profiler_ns = 0;     // TuneBench's own time in this step (a trace chunk boundary): not the program's
  // The most memory in use during the step (bytes): the device's peak allocation when the trace has it, else
  // its allocated counter's highest sample, else the host's; -1 when the trace has no memory counters.
  int64_t memory_peak_bytes = -1;
  int64_t sync_ns = 0;         // host time in sync points that start in this step
  uint32_t sync_count = 0;
  uint32_t kernel_count = 0;   // kernels this step launched (by time when there are no correlation ids)
};

struct KernelStat {
  std::string name;
  uint64_t count = 0;
  int64_t total_ns = 0;
  int64_t min_ns = 0;
  int64_t max_ns = 0;
  double share_of_kernel_time = 0;  // total_ns / summed duration of all kernels (never > 1 with overlap)
  bool tensor_core = false;  // name suggests Tensor Core math (heuristic on cuDNN/cuBLAS kernel names)
  bool communication = false;  // NCCL/Gloo collective or send/recv
  // Launch statistics over the kernels with a correlated launch of their own (launched == 0: none); a CUDA
  // graph's kernels have none: their replay's launch is in AnalysisResult::cuda_graphs.
  uint64_t launched = 0;
  int64_t launch_mean_ns = 0;  // host time in the launch call
  int64_t delay_mean_ns = 0;   // launch call start -> kernel start
  int64_t delay_max_ns = 0;
};

// A host op (CPU range: aten::*, user annotations, our phases) or CUDA runtime/driver call of the analysed
// process inside the window, aggregated by name. Self time = its duration minus its direct children's.
struct OpStat {
  std::string name;
  uint64_t count = 0;
  int64_t total_ns = 0;
  int64_t self_ns = 0;
  bool runtime = false;  // a CUDA runtime/driver call
};

// A kernel launch far slower than the trace's typical one (launch call >= 10x the median and >= 100 us), or
// a kernel that started far later after its launch call returned than usual (>= 10x the median delay and
// >= 1 ms, while the GPU was idle): named with where to look.
struct LaunchOutlier {
  std::string kernel;
  int64_t launch_start_ns = 0;
  int64_t launch_ns = 0;  // host time in the launch call
  int64_t delay_ns = 0;   // launch call start -> kernel start
  bool slow_call = false; // else a late start
};

// One idle interval explained by a cross-stream wait, with its evidence: the work that waited was queued
// before the GPU went idle, its stream was free, the work that had just ended ran on another stream, and a
// wait on the waiting stream was recorded between the launch of that stream's previous work and its own.
struct EventWait {
  Interval idle;            // the idle time it explains (first to last piece of the interval)
  int64_t stream = -1;      // the stream that waited (its work opened the busy interval after the gap)
  int64_t after_stream = -1;  // the stream whose work ended when the GPU went idle
  int64_t wait_ns = 0;      // host time of the wait call (or of the "Stream Wait Event" record)
  int64_t event_record = -1;  // correlation id of the cudaEventRecord waited on (Kineto cuda_sync), -1 unknown
  std::string wait;         // "cudaStreamWaitEvent", "Stream Wait Event", ...
  std::string work;         // the kernel/memcpy/memset that waited
  uint32_t track = 0, event = 0;  // the wait record (Trace::track(track).events()[event])
};

enum class FindingKind {
  LoaderStall, LaunchGap, SyncPoints, LowTensorCore, CollectorOff, DroppedRecords,
  AllocatorBound,  // our traces: page faults per step cost a visible share of it (the cpu_allocator knob)
  Oversubscribed,  // our traces: intra-op threads + loader threads > cores
  ExposedComm,     // communication kernels not overlapped by compute
  GpuNotRecorded,  // kernel launches on the host, no GPU activity in the trace
  RuntimeCalls,    // GPU idle while the host sits in allocation / setup runtime calls
  EventWait,       // GPU idle while queued work waited on another stream (cross-stream event waits)
  Straggler,       // across ranks (profiler/ranks.h): the others wait for one rank at the collectives
  MemoryFragmentation,  // the caching allocator holds far more than the tensors need, or retried cudaMalloc
  MemoryGrowth,         // the step's peak memory rises window after window (a tensor kept across steps)
  OutsideTraining,      // the step lane: much of the run passed between the steps (validation, checkpoints)
  StepTimeDrift,        // the step lane: the late steps take longer than the early ones
  CompileTime,          // the compile lane: torch.compile took a large share of the run (or a compile failed)
  Recompiles,           // the compile lane: a frame compiled again and again (a guard failing)
  GraphBreak,           // the compile lane: the compiled code stops at a line of the user's and Python runs on
  GraphRecapture,       // a CUDA graph captured and instantiated again in most steps, instead of replayed
};
const char* to_string(FindingKind k);

struct Finding {
  FindingKind kind = FindingKind::LoaderStall;
  std::string id;          // stable machine id: "loader_stall", "launch_gap", "sync_points", "low_tensor_core", ...;
                           // a finding from the step lane's timings alone ends "_steps" ("loader_stall_steps")
  std::string message;     // one readable line with the numbers
  std::string knob;        // the knob that addresses it (knob catalog id), "" if none
  std::string value;       // the value to set it to ("4", "on", "fp16", ...)
  std::vector<std::string> also;  // other knobs that help ("prefetch", "pin_memory", ...)
  double share = 0;        // fraction of the analysed window (or step time) it accounts for
  double max_speedup = 1;  // upper bound on the throughput gain from removing it: 1 / (1 - share)
  bool bounded = true;     // false: too few steps to promise max_speedup (the message says why)
  Interval evidence;       // where to look on the timeline (the largest such interval)
};

// Memory beside time (docs/analysis.md "Memory"): from the counters TuneBench's traces carry after every step
// (host RSS; the CUDA caching allocator's allocated, reserved and per-step peak) or torch.profiler's
// profile_memory events. -1 where the trace says nothing.
struct MemorySummary {
  bool present = false;
  int64_t device_allocated_peak = -1, device_reserved_peak = -1, device_step_peak = -1;
  int64_t host_rss_peak = -1, host_allocated_peak = -1;
  int64_t device_total = -1;     // the device's memory (the run's metadata), for the headroom
  int64_t headroom = -1;         // device_total - the largest of the peaks
  int64_t alloc_retries = -1;    // cudaMalloc retries the allocator made (the run's last count)
  int64_t peak_step = -1;        // the step whose peak is the largest
};

// torch.compile's compiled code as it ran (docs/analysis.md, "Compiled regions"): torch.profiler's
// `Torch-Compiled Region: F/C` ranges (each run of frame F's C-th compile) and `CompiledFunctionBackward` (each
// run of a compiled backward), counted over the measured steps. A run's time is its range's less the compiles
// inside it, so a region that calls another (the code Dynamo resumes after a graph break) holds that one's time
// too: shares do not add up.
struct CompiledRegionStat {
  std::string id;         // "F/C"; "backward" for the compiled backward's row
  int64_t frame = -1;     // F (-1: the backward's row, or an id not of the form F/C)
  int64_t compile = -1;   // C
  std::string label;      // the compile lane's frame label ("forward at /abs/train.py:14"), else "region F/C"
  bool backward = false;  // the compiled backward (CompiledFunctionBackward of every frame together)
  uint64_t runs = 0;      // runs that started in the measured steps (no steps: in the window)
  uint64_t runs_elsewhere = 0;  // runs outside them: warm-up steps, between steps, outside the window
  double runs_per_step = 0;     // runs / the steps (0 without steps)
  int64_t total_ns = 0;         // the runs' time, less the compiles inside them (compile_ns)
  int64_t compile_ns = 0;       // the compile lane's compiles inside the runs: a frame the region called compiling
  int64_t median_ns = 0;        // the median run: the first run (cold, autotuning under Inductor) moves the mean
  double share = 0;             // total_ns / the steps' time (no steps: the window's traced time)
  int64_t mean_ns() const { return runs ? total_ns / int64_t(runs) : 0; }
};

// Inductor's generated kernels as they ran (docs/analysis.md, "Compiled kernels"): a C++ kernel's range
// `graph_G_cpp_fused_*` (Inductor's kernel profiling) on the analysed process's threads, a Triton kernel
// `triton_*` on its device, by name, counted over the measured steps as the regions are; with the ops each fuses
// and the user's lines the compile lane gives (profiler/compiled_kernels.h).
struct CompiledKernelStat {
  std::string name;        // as its runs are named ("graph_0_cpp_fused_add_relu_0", "triton_poi_fused_add_0")
  std::string kernel;      // Inductor's ("cpp_fused_add_relu_0")
  bool gpu = false;        // a kernel on the device; else a range on a CPU thread
  uint64_t calls = 0;      // in the measured steps (no steps: the window)
  uint64_t calls_elsewhere = 0;
  double calls_per_step = 0;
  int64_t total_ns = 0;
  double share = 0;        // total_ns / the steps' time
  std::vector<std::string> ops;  // the ATen ops it fuses
  bool ops_from_name = false;    // read from its name (sorted by name): the lane said none
  std::vector<SourceLine> lines; // the user's lines (empty: the lane has none, Inductor's provenance was off)
  int64_t mean_ns() const { return calls ? total_ns / int64_t(calls) : 0; }
};

struct CompiledKernels {
  size_t steps = 0;        // as CompiledRegions'
  int64_t base_ns = 0;
  size_t kernels = 0;      // distinct kernels that ran in the steps
  uint64_t calls = 0;      // theirs together
  int64_t total_ns = 0;
  double share = 0;
  std::vector<CompiledKernelStat> rows;  // the top kernels by total time (kTopCompiledKernels). Empty: none ran
};
inline constexpr size_t kTopCompiledKernels = 20;

struct CompiledRegions {
  size_t steps = 0;      // the measured steps the runs are counted over (0: none, the window instead)
  int64_t base_ns = 0;   // their time (or the window's traced time): what `share` is of
  std::vector<CompiledRegionStat> rows;  // by frame, then compile; the backward last. Empty: none ran
  CompiledKernels kernels;  // the kernels Inductor generated for them, as they ran
};

struct AnalysisResult {
  Interval window;           // analysed window
  // A sampled trace (a script's chunks with untraced steps between them): the time between chunks that
  // recorded nothing. It is inside `window` but no part of it: every share is of traced_ns().
  int64_t untraced_ns = 0;
  uint32_t untraced_count = 0;
  int64_t traced_ns() const { return window.length() - untraced_ns; }
  // The program's own time, every finding's share is of: traced, less the profiler's own (profiler_ns).
  int64_t own_ns() const { return traced_ns() - profiler_ns; }
  // The steps' host-to-device copies (StepBreakdown::h2d_ns): XProf's "transfer" half of the input time, which
  // the loader-stall finding and a script's loader verdict (over own_ns()) state as one figure.
  int64_t input_copy_ns() const;
  bool window_from_steps = false;
  bool steps_inferred = false;  // no step ranges: steps from the optimizer's calls (a note says so)
  // Leading steps the recorder marked as warm-up (TraceMetadata::extra "warmup_steps": steps numbered below
  // it): they stay in `steps`, but the window starts after them. One-time costs (cuDNN's algorithm search,
  // lazy initialisation, the allocator growing) would otherwise read as a launch bound or a stall.
  size_t warmup_steps = 0;
  int64_t warmup_ns = 0;       // their wall time
  bool has_gpu = false;      // any GPU activity in the trace
  int64_t gpu_busy_ns = 0;
  int64_t gpu_idle_ns = 0;   // window - busy
  int64_t loader_stall_ns = 0;
  uint32_t loader_stall_count = 0;   // idle intervals holding loader-stall time
  // Of the window: the training thread between training iterations (validation, checkpoints, logging; a
  // script's `## outside training ##` ranges), which no step holds.
  int64_t outside_training_ns = 0;
  uint32_t outside_training_count = 0;
  std::vector<Interval> outside_training_intervals;  // for the timeline's own class (capped by max_intervals)
  std::vector<Interval> loader_stall_intervals;  // for highlighting (capped by max_intervals)
  int64_t launch_gap_ns = 0;
  uint32_t launch_gap_count = 0;     // idle intervals holding launch-gap time
  int64_t min_gap_ns = 0;            // the option used
  std::vector<Interval> launch_gap_intervals;
  int64_t sync_idle_ns = 0;          // idle after a host sync drained the queue
  int64_t runtime_idle_ns = 0;       // idle while the host sits in a slow runtime call
  int64_t lead_in_ns = 0;            // idle before the first GPU activity of the window
  int64_t tail_ns = 0;               // idle after the last one
  int64_t launch_overhead_ns = 0;    // idle intervals shorter than min_gap
  // Of launch_gap_ns: the time the thread that launched the next work recorded no event at all (no op, no
  // runtime call; steps and profiler spans aside): the host was busy with something the profiler did not
  // record (Python, code outside instrumented ops), so no CPU op can be blamed.
  int64_t launch_gap_unrecorded_ns = 0;
  uint32_t launch_gap_unrecorded_count = 0;  // launch gaps holding some of it
  Interval launch_gap_unrecorded_largest;
  int64_t event_wait_ns = 0;         // queued work held by a wait on another stream's work
  uint32_t event_wait_count = 0;
  std::vector<EventWait> event_waits;  // one per interval, by time (capped by max_intervals)
  int64_t other_idle_ns = 0;
  // The profiler's own time (docs/analysis.md "The profiler's own time"): TuneBench's pauses on the host
  // (a script's trace chunk boundaries, the recorder's and collector's work) and CUPTI's overhead records.
  // Its own class, first in the order of precedence: never a cause of the program's, never a finding, and
  // left out of the window every finding's bound is taken over.
  int64_t profiler_ns = 0;
  uint32_t profiler_count = 0;
  int64_t profiler_longest_ns = 0;  // the longest of them (a chunk boundary's pause), stated beside a step
  std::vector<Interval> profiler_intervals;  // for the timeline's own band (capped by max_intervals)
  uint32_t idle_interval_count = 0;
  int64_t compute_ns = 0;            // union of compute kernels in the window
  int64_t comm_ns = 0;               // union of communication kernels in the window
  int64_t comm_exposed_ns = 0;       // communication not overlapped by compute
  int64_t memory_exposed_ns = 0;     // memcpy/memset not overlapped by kernels
  double comm_overlap = -1;          // share of communication overlapped by compute (-1: no communication)
  int64_t device = -1;               // analysed GPU device (-1: none)
  int64_t pid = -1;                  // analysed process (-1: unknown)
  std::vector<int64_t> devices;      // every device with GPU activity in the trace
  uint64_t launches = 0;             // kernel launch calls of the analysed process
  uint32_t sync_count = 0;
  int64_t sync_ns = 0;
  std::vector<SyncPoint> sync_points;  // capped by max_intervals
  std::vector<StepBreakdown> steps;
  int64_t step_median_ns = 0;
  uint64_t kernel_count = 0;       // kernels inside the trace (all, not only the window)
  uint64_t memcpy_count = 0;
  uint64_t memset_count = 0;
  std::vector<KernelStat> top_kernels;
  std::vector<OpStat> top_ops;
  std::vector<LaunchOutlier> launch_outliers;  // the worst 10 of each kind (slow calls first), worst first
  int64_t launch_median_ns = 0;    // median launch-call duration over the correlated kernel launches
  int64_t delay_median_ns = 0;     // median launch -> start delay     // by self time, AnalysisOptions::top_ops of them (steps and spans left out)
  double tensor_core_share = 0;    // share of GEMM/conv kernel time in Tensor Core kernels (-1: no GEMM/conv)
  double matmul_share = 0;         // share of compute kernel time in GEMM/conv kernels
  int32_t training_track = -1;     // index into Trace::tracks(), -1 none
  MemorySummary memory;
  CompiledRegions compiled_regions;
  CudaGraphs cuda_graphs;          // CUDA graphs' replays, nodes and captures (profiler/cuda_graphs.h)
  std::vector<Finding> findings;   // most important first
  std::vector<std::string> notes;  // caveats ("no correlation ids: launch gaps cannot be attributed", ...)
  bool trusted = false;            // enough steps to bound a knob's gain (AnalysisOptions::min_trusted_steps)
};

// Sum of every idle class (equals gpu_idle_ns).
inline int64_t idle_total(const AnalysisResult& r) {
  return r.loader_stall_ns + r.sync_idle_ns + r.runtime_idle_ns + r.lead_in_ns + r.tail_ns + r.launch_gap_ns +
         r.launch_overhead_ns + r.event_wait_ns + r.other_idle_ns + r.profiler_ns;
}

// `trace` must be finalized (load_trace, Recorder::collect and CuptiCollector::collect return finalized traces;
// call Trace::finalize() after building or merging one by hand).
AnalysisResult analyze(const Trace& trace, const AnalysisOptions& options = {});

// JSON object with the fields docs/analysis.md lists (gpu.busy_us, gpu.idle_us,
// loader_stall.total_us/count, launch_gap.total_us/count/min_gap_us, sync.count/total_us, steps.count/
// median_us, kernels.count, findings[]) plus the window, per-step breakdown, top kernels and intervals.
std::string to_json(const AnalysisResult& result, const TraceMetadata* meta = nullptr);

}  // namespace tb::prof
