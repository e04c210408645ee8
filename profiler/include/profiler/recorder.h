// Range recorder: the hot-path API the engine uses to mark what its threads do.
//
// Design (tracy ScopedZone: the hot path allocates nothing and takes no lock):
// - Each thread records into its own buffer (thread_local, registered with the Recorder on first use);
//   begin/end append a plain 16..24-byte record {timestamp, name pointer, kind}. No lock, no allocation on
//   the hot path once the thread's current block exists (blocks of fixed size are chained when full).
// - Names MUST have static storage duration (string literals or interned via intern()). The pointer is
//   stored, never copied, so a dangling name is a bug of the caller.
// - Every range is mirrored as an NVTX3 push/pop in the "TuneBench" domain when NVTX headers were found at
//   build time, so Nsight Systems shows our ranges next to its own. With no NVTX tool attached this costs a
//   null-pointer check.
// - Timestamps are now_ns(): CLOCK_MONOTONIC nanoseconds. Every other clock (CUPTI's) is aligned to it.
//   (On x86-64 with an invariant TSC the hot path stores raw TSC ticks and collect() maps them to
//   CLOCK_MONOTONIC by interpolating between clock pairs sampled at start() and each collect(); a collect
//   reads only records older than its own sample, so a tick maps to the same ns in every collect. Set
//   TUNEBENCH_RECORDER_NO_TSC=1 to read clock_gettime on every record instead, TUNEBENCH_RECORDER_TSC=1 to use
//   the TSC whatever the kernel's clocksource.)
// - Recording is off until start(); begin/end while off cost one relaxed atomic load.
//
// Threading: begin/end/instant/counter are called from any thread, each on its own buffer. start/stop/
// collect are called from one controlling thread; collect() may run while other threads keep recording
// (it takes what is complete and leaves open ranges for the next collect).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace tb::prof {

class Trace;  // profiler/trace.h

// CLOCK_MONOTONIC in nanoseconds: the time base of every trace the recorder produces.
int64_t now_ns();

// Names the calling thread's track ("train", "loader-0", "copy"). The string is copied. May be called
// before or after recording starts; a thread that never names itself is shown as "thread <tid>".
void set_thread_name(std::string_view name);
// Names the calling thread only when it has no name yet: for a callback that runs on a library's thread, or
// inline on the thread that attached it (c10's Future::then on a completed future), which keeps its name.
void name_thread_if_unnamed(std::string_view name);

// Interns a dynamic string and returns a pointer valid for the life of the process (for names that are
// not literals, e.g. model layer names). Not for the hot path: takes a lock.
const char* intern(std::string_view name);

class Recorder {
 public:
  static Recorder& instance();
  static bool nvtx_built();  // ranges also go to NVTX (for Nsight and CUPTI's timeline) in this build

  // Starts recording: clears what was recorded before. Cheap when already started.
  void start();
  // Stops recording; ranges still open are closed at the stop time by collect().
  void stop();
  bool enabled() const noexcept;

  // Moves everything recorded so far (all threads) into a Trace: one CPU track per thread, in time order,
  // nested ranges with depth. Safe while recording continues.
  std::unique_ptr<Trace> collect();

  // Hot path. `name` must outlive the process (literal or intern()). `arg` is an optional integer shown in
  // tooltips (step index, batch index); INT64_MIN means none.
  static void begin(const char* name, int64_t arg = INT64_MIN) noexcept;
  static void end() noexcept;
  // A range that began at `start` (a timestamp() taken earlier, possibly on another thread) and ends now,
  // recorded on the calling thread: work whose start and end happen on different threads (a collective
  // handed to a communication thread). The caller keeps such ranges from overlapping on one thread.
  static int64_t timestamp() noexcept;
  static void range_since(const char* name, int64_t start, int64_t arg = INT64_MIN) noexcept;
  // A zero-length marker (config change, OOM revert, ...).
  static void instant(const char* name, int64_t arg = INT64_MIN) noexcept;
  // A counter sample (queue depth, loss scale, ...), one counter track per name.
  static void counter(const char* name, double value) noexcept;

  // Recorded but not yet collected records, and records dropped because a thread hit the cap.
  uint64_t dropped() const noexcept;

 private:
  Recorder() = default;
};

// RAII range; use through TB_RANGE so it compiles out with TUNEBENCH_NO_PROFILING.
class ScopedRange {
 public:
  explicit ScopedRange(const char* name, int64_t arg = INT64_MIN) noexcept { Recorder::begin(name, arg); }
  ~ScopedRange() { Recorder::end(); }
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;
};

}  // namespace tb::prof

#define TB_PROF_CONCAT2(a, b) a##b
#define TB_PROF_CONCAT(a, b) TB_PROF_CONCAT2(a, b)
#ifndef TUNEBENCH_NO_PROFILING
#define TB_RANGE(name) ::tb::prof::ScopedRange TB_PROF_CONCAT(tb_range_, __LINE__)(name)
#define TB_RANGE_ARG(name, arg) ::tb::prof::ScopedRange TB_PROF_CONCAT(tb_range_, __LINE__)(name, arg)
#else
#define TB_RANGE(name) ((void)0)
#define TB_RANGE_ARG(name, arg) ((void)0)
#endif
