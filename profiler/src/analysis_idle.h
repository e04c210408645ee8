// The GPU side of analyze() and the split of GPU idle time into named causes (private): what the device did
// (busy union, compute/communication/memory classes), which work opened each busy interval and who launched
// it, and the classification of every idle interval (docs/analysis.md "Classes of GPU time").
#pragma once

#include <cstdint>
#include <vector>

#include "analysis_intervals.h"
#include "analysis_steps.h"
#include "profiler/analysis.h"

namespace tb::prof::detail {

enum class ActClass : uint8_t { Compute, Comm, Memory };

inline constexpr uint32_t kNone = UINT32_MAX;

struct Activity {
  int64_t start, end;
  uint32_t track, event;
  ActClass cls;
  uint32_t prev = kNone;  // index (in GpuSide::acts) of the previous work on the same stream
};

// A wait on a stream's timeline: a cudaStreamWaitEvent call on a host thread, or the CUPTI/Kineto "Stream
// Wait Event" record on the waiting stream (which names the event record's correlation id).
struct WaitRecord {
  int64_t t;        // host time of the call
  uint32_t track, event;
};

// Everything the GPU did on the analysed device, with its classes as merged unions.
struct GpuSide {
  std::vector<Activity> acts;  // sorted by start
  iv::Intervals busy, compute, comm, memory, htod;
  // Per busy interval: the work that opens it (of those starting first, the one whose launch call returned
  // first), the time that launch call returned (INT64_MIN: no correlated launch) and the stream track of the
  // work that ends it last.
  std::vector<uint32_t> busy_open;
  std::vector<int64_t> busy_ready;
  std::vector<uint32_t> busy_last_track;
  // Per track of the trace (empty for others): "Stream Wait Event" records on that stream, by time.
  std::vector<std::vector<WaitRecord>> stream_waits;
};

GpuSide collect_gpu(const Trace& trace, const Scope& sc, AnalysisResult& r);

// Host-side ranges and calls of the analysed process.
struct HostSide {
  iv::Intervals data_wait, h2d, fwd, bwd, optim, sync_calls, slow_runtime;
  // TuneBench's own time on any thread of the process (trace chunk boundaries, recorder and collector work,
  // CUPTI's overhead records): the profiler's class, taken out of every other.
  iv::Intervals profiler;
  // Between two chunks of a sampled trace: the steps run unrecorded. Left out of the window (and every class).
  iv::Intervals untraced;
  // Host-side collectives (Gloo) on any thread of the process, and the training thread's wait for them
  // (only while one runs: comm_wait within comm_host).
  iv::Intervals comm_host, comm_wait;
  // Per track of the trace (empty for others): cudaStreamWaitEvent / cuStreamWaitEvent calls, by time.
  std::vector<std::vector<WaitRecord>> wait_calls;
};

// The idle classes as sorted, disjoint pieces (per-step figures measure them).
struct IdlePieces {
  iv::Intervals stall, sync, runtime, edge, gap, gap_unrecorded, event_wait, overhead, other, profiler;
};

// Splits the window's idle time into the classes (fills the *_ns totals, counts and evidence of `r`).
IdlePieces classify_idle(const Trace& trace, const GpuSide& g, const HostSide& h, const AnalysisOptions& opt,
                         AnalysisResult& r);

}  // namespace tb::prof::detail
