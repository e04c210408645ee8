// Builds small traces for the analysis tests, in microseconds: one training thread (pid 1, tid 1) and
// GPU 0's streams; kernel() can add the correlated cudaLaunchKernel that queued it.
#pragma once

#include <cstdint>

#include "profiler/analysis.h"
#include "profiler/trace.h"

namespace tb::prof::test_util {

constexpr int64_t us = 1000;  // the tests think in microseconds

struct Builder {
  Trace t;
  uint32_t cpu = t.track_for(TrackKind::CpuThread, 1, 1, "train");
  uint64_t next_corr = 100;

  // A trace of the engine's (its findings name the engine's knobs) unless a test says otherwise.
  Builder() { t.meta().extra["tunebench_run"] = "engine"; }

  void range(const char* name, int64_t a, int64_t b, int64_t arg = kNoArg, uint32_t track = UINT32_MAX) {
    Event e;
    e.kind = EventKind::Range;
    e.name = t.intern(name);
    e.start_ns = a * us;
    e.end_ns = b * us;
    e.arg = arg;
    t.add_event(track == UINT32_MAX ? cpu : track, e);
  }
  void runtime(const char* name, int64_t a, int64_t b, uint64_t corr = 0) {
    Event e;
    e.kind = EventKind::Runtime;
    e.name = t.intern(name);
    e.start_ns = a * us;
    e.end_ns = b * us;
    e.correlation = corr;
    t.add_event(cpu, e);
  }
  // A kernel on `stream`; when launch_at >= 0 a cudaLaunchKernel at launch_at (1 us long) correlates to it.
  void kernel(int64_t a, int64_t b, int64_t launch_at = -1, int64_t stream = 7, const char* name = "k",
              EventKind kind = EventKind::Kernel) {
    Event e;
    e.kind = kind;
    e.name = t.intern(name);
    e.start_ns = a * us;
    e.end_ns = b * us;
    if (launch_at >= 0) {
      e.correlation = ++next_corr;
      runtime("cudaLaunchKernel", launch_at, launch_at + 1, e.correlation);
    }
    t.add_event(t.track_for(TrackKind::GpuStream, 0, stream), e);
  }
  void gpu_other(EventKind kind, const char* name, int64_t a, int64_t b, int64_t stream = 7) {
    Event e;
    e.kind = kind;
    e.name = t.intern(name);
    e.start_ns = a * us;
    e.end_ns = b * us;
    t.add_event(t.track_for(TrackKind::GpuStream, 0, stream), e);
  }
  AnalysisResult run(AnalysisOptions o = {}) {
    t.finalize();
    return analyze(t, o);
  }
};


}  // namespace tb::prof::test_util
