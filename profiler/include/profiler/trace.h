// Trace model: what the recorder, the CUPTI collector and the importers produce, and what the analyses and
// the GUI timeline read. Plain C++; no Qt, no LibTorch, no vendor headers.
//
// Shape (tracy/orbit style; the analyses: docs/analysis.md):
// - A Trace owns Tracks: CPU threads, GPU streams, counters. A track owns its events in one contiguous,
//   time-sorted array (sorted by start ascending, then by end descending so a parent range precedes the
//   ranges it contains). index_range() finds the events of a time window by binary search over a small
//   index (per kIndexEvents events, the largest end so far). The GUI timeline draws from its own per-depth
//   lanes (ui/timeline_model.h), built once from these events: it needs rows by depth, which one index per
//   track cannot give, so the model keeps no drawing summaries of its own.
// - Events are 56 bytes (static_assert'ed <= 64): an AoS record rather than one array per field because
//   every consumer (timeline tooltip, analyses, export) reads all fields of an event together; the per-track
//   array of events is the "column" the timeline scans, and Blocks summarize it for level of detail.
// - Names are interned once per trace (NameId into the trace's string table).
// - Correlation ids link a launch (runtime/driver API call on a CPU track) to the GPU work it queued; finalize()
//   resolves them into Flows (launch -> kernel/memcpy/memset), which the timeline draws as arrows.
//
// Lifecycle and threading: a Trace is built by one thread (add_track/add_event in any order), then
// finalize() sorts, nests and indexes it. After finalize() it is immutable by convention and safe to read
// from any number of threads at once (the GUI builds its draw lists off the UI thread). Calling add_event
// after finalize() requires another finalize() before reading.
//
// Time: int64 nanoseconds. Recorded traces use CLOCK_MONOTONIC (recorder now_ns()); imported Kineto/Chrome
// traces keep their own epoch (microseconds since the Unix epoch * 1000). Only differences matter; the GUI
// shows times relative to Trace::start_ns().
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace tb::prof {

using NameId = uint32_t;
inline constexpr NameId kNoName = 0;  // the string table's entry 0 is always ""
inline constexpr int64_t kNoArg = std::numeric_limits<int64_t>::min();

// Linux's PID_MAX_LIMIT: no real pid reaches it. A group trace merged from ranks on several hosts can hold
// two processes with the same pid (or two ranks' GPU 0); the later rank's are moved up by rank * kPidSpace
// (Trace::move_pids), and os_pid() gives the pid the process had on its host back.
inline constexpr int64_t kPidSpace = int64_t(1) << 22;
constexpr int64_t os_pid(int64_t trace_pid) { return trace_pid >= 0 ? trace_pid % kPidSpace : trace_pid; }

enum class TrackKind : uint8_t {
  CpuThread = 0,  // a host thread: our ranges, Kineto cpu_op/user_annotation, runtime/driver API calls
  GpuStream = 1,  // one CUDA stream of one device: kernels, memcpy, memset, plus Kineto's gpu_user_annotation
                  // and cuda_sync rows (which are NOT GPU activity, see EventKind)
  Counter = 2,    // one named counter: EventKind::Counter samples
};

enum class EventKind : uint8_t {
  Range = 0,    // ours (recorder), NVTX, Kineto cpu_op / user_annotation / gpu_user_annotation / python_function
  Kernel = 1,   // GPU activity; Event::arg = its CUDA graph node id when Event::graph is set
  Memcpy = 2,   // GPU activity; Event::arg = bytes, Event::flags = MemcpyKind
  Memset = 3,   // GPU activity; Event::arg = bytes
  Runtime = 4,  // CUDA runtime API call on a host thread (cudaLaunchKernel, cudaStreamSynchronize, ...)
  Driver = 5,   // CUDA driver API call on a host thread (cuLaunchKernel, ...)
  Sync = 6,     // CUPTI SYNCHRONIZATION / Kineto cuda_sync: a wait shown on a GPU row; not GPU activity and
                // not counted as a sync point (the host API call that caused it is)
  Instant = 7,  // zero-length marker (config change, finding, Kineto "i" events); end == start
  Counter = 8,  // counter sample on a Counter track; Event::value holds the value, end == start
  Overhead = 9, // CUPTI/profiler overhead on a host thread
};
constexpr int kEventKindCount = 10;
const char* to_string(EventKind k);
const char* to_string(TrackKind k);

// True for the kinds that make the GPU busy (docs/analysis.md, "Classes of GPU time").
constexpr bool is_gpu_activity(EventKind k) {
  return k == EventKind::Kernel || k == EventKind::Memcpy || k == EventKind::Memset;
}

enum class MemcpyKind : uint8_t { Unknown = 0, HtoD = 1, DtoH = 2, DtoD = 3, HtoH = 4, PtoP = 5 };

// Event::flags bits (the low 4 bits hold MemcpyKind for Memcpy events).
inline constexpr uint16_t kFlagMemcpyKindMask = 0x000f;
inline constexpr uint16_t kFlagUnclosed = 0x0010;       // range still open when collected/stopped; end is a clamp
inline constexpr uint16_t kFlagBlockingSync = 0x0020;   // host API call that blocks on the GPU (a sync point)
inline constexpr uint16_t kFlagTensorCore = 0x0040;     // kernel name indicates Tensor Core math (heuristic)

struct Event {
  int64_t start_ns = 0;
  int64_t end_ns = 0;                // >= start_ns; == start_ns for Instant/Counter
  int64_t arg = kNoArg;              // step index, batch index, bytes for memcpy/memset; kNoArg when none
  double value = 0.0;                // Counter value; 0 otherwise
  uint64_t correlation = 0;          // CUPTI/Kineto correlation id; 0 = none
  NameId name = kNoName;
  EventKind kind = EventKind::Range;
  uint8_t depth = 0;                 // nesting depth within its track, set by finalize() (saturates at 255)
  uint16_t flags = 0;
  uint32_t detail = kNoName;         // optional second string (kernel grid/block, args summary); kNoName none
  // GPU work a CUDA graph's launch ran: the graph's id (CUPTI graphId, Kineto's "graph id"); 0 = none. Its node
  // (CUPTI graphNodeId) is a kernel's `arg`: a kernel has no other arg, and the event stays 56 bytes. A graph's
  // copies and memsets keep their bytes there and no node.
  uint32_t graph = 0;

  int64_t duration_ns() const { return end_ns - start_ns; }
  MemcpyKind memcpy_kind() const { return static_cast<MemcpyKind>(flags & kFlagMemcpyKindMask); }
  // The CUDA graph node that ran this kernel; 0 for none (not a graph's, or a copy or memset of one).
  uint64_t graph_node() const { return kind == EventKind::Kernel && graph && arg > 0 ? static_cast<uint64_t>(arg) : 0; }
};
static_assert(sizeof(Event) <= 64, "trace events must stay <= 64 bytes");

namespace detail {
// Memory for big arrays (a track's events, a trace's text): from 4 MiB on an anonymous mapping advised for
// transparent huge pages where the system allows them, the heap below. A million-event trace page-faulted
// its event arrays in 4 KiB at a time: a fifth of `analyze`'s wall time on a virtual machine.
inline constexpr size_t kBigBytes = size_t(4) << 20;
void* big_allocate(size_t bytes);  // throws std::bad_alloc like operator new
void big_deallocate(void* p, size_t bytes);

template <class T>
struct BigAllocator {
  using value_type = T;
  BigAllocator() = default;
  template <class U>
  BigAllocator(const BigAllocator<U>&) noexcept {}
  T* allocate(size_t n) { return static_cast<T*>(big_allocate(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { big_deallocate(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const BigAllocator<U>&) const noexcept { return true; }
};
}  // namespace detail

// A track's events: one contiguous array (see Track).
using EventVector = std::vector<Event, detail::BigAllocator<Event>>;

// A run of consecutive events of one track, for binary search and level of detail.
// A launch -> GPU work arrow (or any correlation pair). Indices refer to Trace::tracks() and Track::events().
struct Flow {
  uint64_t correlation = 0;
  uint32_t src_track = 0, src_event = 0;  // the runtime/driver call
  uint32_t dst_track = 0, dst_event = 0;  // the kernel/memcpy/memset
};

class Track {
 public:
  static constexpr uint32_t kIndexEvents = 256;

  TrackKind kind() const { return kind_; }
  const std::string& name() const { return name_; }
  // CPU: process id / thread id. GPU: device / stream. Counter: its process (0 in older traces) / counter index.
  int64_t pid() const { return pid_; }
  int64_t tid() const { return tid_; }
  const EventVector& events() const { return events_; }
  uint8_t max_depth() const { return max_depth_; }
  bool empty() const { return events_.empty(); }
  // Display order hint (lower first); importers copy Chrome's sort_index metadata here.
  int64_t sort_index() const { return sort_index_; }

  // Half-open index range [first, last) of the events that overlap [t0, t1] (end >= t0 and start <= t1),
  // plus possibly some earlier events that do not overlap (those that started before t0 and ended before
  // it but sit after a long range in start order); callers filter with overlaps(). O(log n).
  std::pair<uint32_t, uint32_t> index_range(int64_t t0, int64_t t1) const;
  // Calls fn(const Event&, uint32_t index) for every event overlapping [t0, t1], in start order.
  template <class Fn>
  void for_each_in(int64_t t0, int64_t t1, Fn&& fn) const {
    auto [a, b] = index_range(t0, t1);
    for (uint32_t i = a; i < b; ++i) {
      const Event& e = events_[i];
      if (e.end_ns >= t0 && e.start_ns <= t1) fn(e, i);
    }
  }

 private:
  friend class Trace;
  TrackKind kind_ = TrackKind::CpuThread;
  std::string name_;
  int64_t pid_ = 0, tid_ = 0;
  int64_t sort_index_ = 0;
  EventVector events_;
  // index_range's index: per kIndexEvents events, the first one and the largest end up to its last one
  // (monotone, so a binary search finds the first event that can reach a window's start).
  struct IndexEntry {
    uint32_t first = 0;
    int64_t max_end_prefix_ns = 0;
  };
  std::vector<IndexEntry> index_;
  uint8_t max_depth_ = 0;
  bool sorted_ = true;
  bool default_name_ = true;
};

// What produced the trace and whether GPU data is in it.
struct TraceMetadata {
  std::string source_format;       // "tunebench" (recorder), "kineto", "chrome"
  std::string source_path;         // file it was loaded from, if any
  std::string device;              // "NVIDIA A100-PG509-200", "cpu", ... ("" unknown)
  std::map<std::string, std::string> versions;  // "tunebench", "libtorch", "cuda", "cupti", "kineto schema", ...
  // GPU collector state: "on", "off", "not built" or "" (unknown/imported). When not "on", collector_reason
  // says why in one line (e.g. "cuptiActivityEnable failed: CUPTI_ERROR_NO_DEVICE"), and the trace is CPU-only.
  std::string collector_state;
  std::string collector_reason;
  uint64_t dropped_records = 0;    // recorder + CUPTI records lost to caps
  std::map<std::string, std::string> extra;  // anything else worth showing (host, rank, model, config)
  // JSON objects a TuneBench run attaches to its trace by name, kept as their text: "loader", the loader's
  // verdict (client/loader_verdict.h) that `run --script --trace` printed, so that `analyze` and the GUI show
  // the same figures. Written under "tunebench"."documents"; a value that is not an object is not kept.
  std::map<std::string, std::string> documents;
  // A CPU process's name by pid ("rank 1"): from the Chrome trace's process_name metadata, or set by whoever
  // recorded it. Merged traces keep every process's; the GUI names a process's row group with it.
  std::map<int64_t, std::string> process_names;
};

class Trace {
 public:
  Trace();
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;
  Trace(Trace&&) noexcept;
  Trace& operator=(Trace&&) noexcept;
  ~Trace();

  // --- building ---
  NameId intern(std::string_view s);
  // Returns the track with this (kind, pid, tid), creating it with `name` if needed. `name` of an existing
  // track is replaced only when the new one is non-empty and the old one was a default.
  uint32_t track_for(TrackKind kind, int64_t pid, int64_t tid, std::string_view name = {});
  void set_track_name(uint32_t track, std::string_view name);
  // The counter track named `name` of process `pid`, made (with a tid of its own) if it has none.
  uint32_t counter_track(int64_t pid, const std::string& name);
  void set_track_sort_index(uint32_t track, int64_t sort_index);
  void add_event(uint32_t track, const Event& e);  // end < start is clamped to start
  void reserve_events(uint32_t track, size_t n);
  // Direct access for second-pass fix-ups (importers, CUPTI external ids). Changing start/end requires
  // finalize() again (the trace is marked dirty).
  EventVector& mutable_events(uint32_t track);
  // Sorts every track, computes depths, blocks and flows. Idempotent; cheap when nothing changed.
  void finalize();
  // Appends all tracks/events of `other` (re-interning names, merging tracks with the same key); then
  // finalize() again. Used to merge the recorder's CPU trace with the CUPTI collector's GPU trace.
  void merge(const Trace& other);
  // Adds `delta_ns` to every event: a rank on another host puts its events on rank 0's clock before they are
  // merged (CLOCK_MONOTONIC counts from each host's boot). finalize() again.
  void shift_time(int64_t delta_ns);
  // As above with a delta that changes linearly with time: `delta_a` at time `at_a`, `delta_b` at `at_b`
  // (two measurements of the offset to rank 0's clock; clocks of two hosts run at slightly different rates),
  // interpolated between them and extended beyond. at_a == at_b: delta_b everywhere.
  void shift_time(int64_t at_a, int64_t delta_a, int64_t at_b, int64_t delta_b);
  // Adds `offset` to every track's pid (CPU processes, GPU devices, counters) and to process_names' keys; a
  // pseudo-process (a negative pid: Kineto's rows, the step lane) goes down by it instead, and stays one.
  void move_pids(int64_t offset);
  // Whether a process or GPU of this trace has the same pid as one of `other`'s: merging them would mix two
  // processes' rows.
  bool shares_pids_with(const Trace& other) const;

  // --- reading ---
  std::string_view name(NameId id) const;
  const std::vector<Track>& tracks() const { return tracks_; }
  const Track& track(uint32_t i) const { return tracks_[i]; }
  const std::vector<Flow>& flows() const { return flows_; }
  TraceMetadata& meta() { return meta_; }
  const TraceMetadata& meta() const { return meta_; }
  size_t event_count() const;
  size_t name_count() const;
  // Earliest start / latest end over all events (0/0 when empty).
  int64_t start_ns() const { return start_ns_; }
  int64_t end_ns() const { return end_ns_; }
  // Approximate heap bytes held (events, blocks, flows, names): the bench's bytes/event figure.
  size_t memory_bytes() const;
  // Finds the flow whose src (O(log flows)) or dst (O(1)) is (track, event); nullptr if none.
  const Flow* flow_from(uint32_t track, uint32_t event) const;
  const Flow* flow_to(uint32_t track, uint32_t event) const;

 private:
  struct Names;
  std::unique_ptr<Names> names_;
  std::vector<Track> tracks_;
  std::map<std::tuple<int, int64_t, int64_t>, uint32_t> track_index_;  // (kind, pid, tid) -> track
  std::vector<Flow> flows_;
  std::vector<std::vector<uint32_t>> flow_of_dst_;  // [track][event] -> index into flows_ (GPU tracks only)
  TraceMetadata meta_;
  int64_t start_ns_ = 0, end_ns_ = 0;
  bool dirty_ = true;
};

}  // namespace tb::prof
