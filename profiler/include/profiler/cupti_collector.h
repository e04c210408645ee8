// CUPTI activity collector: GPU kernels, memcpy/memset, runtime/driver API calls, synchronization and
// overhead records of this process, aligned to the recorder's clock and delivered as a Trace.
//
// No cupti.h here (vendor headers stay out of public headers): CUPTI is dlopen'ed at start() ("libcupti.so.13", probed with
// RTLD_NOLOAD first so the process keeps the copy LibTorch/Kineto may already have loaded), never linked.
// When it cannot run, start() returns an Error and state() is "off" (or "not built") with a one-line reason:
// library not found, symbol/version mismatch, no driver, no device, another CUPTI subscriber (e.g. the torch
// profiler: never start both in one process). The caller then records a CPU-only trace and stores the
// reason in TraceMetadata (annotate()).
//
// Buffers: fixed kBufferBytes (4 MiB) buffers handed to CUPTI, at most max_buffers outstanding; when the cap
// is hit CUPTI gets no buffer and drops records, which dropped() reports. The completion callback only queues
// the buffer (never calls CUPTI under our lock); flush() decodes queued buffers on the caller's thread.
//
// Clock: CUPTI timestamps are CLOCK_REALTIME-based; each flush() re-measures the offset to now_ns()
// (CLOCK_MONOTONIC) by bracketing cuptiGetTimestamp() between two now_ns() reads, and records are mapped
// with ClockAlignment (piecewise-linear between samples).
//
// Threading: start/flush/collect/stop from one controlling thread (the trainer, at step boundaries after a
// device synchronize). CUPTI calls the buffer callbacks on its own threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "profiler/result.h"
#include "profiler/trace.h"

namespace tb::prof {

// Maps CUPTI timestamps (ns) to the recorder's clock (now_ns()) from bracketed samples.
class ClockAlignment {
 public:
  // One measurement: mono_before <= (the instant CUPTI read cupti_ns) <= mono_after.
  void add_sample(int64_t mono_before, int64_t cupti_ns, int64_t mono_after);
  // cupti_ns -> mono ns. No samples: identity. One sample: constant offset. More: linear interpolation
  // between the two samples around t (by CUPTI time), constant offset of the nearest sample outside them.
  // Never decreasing: a sample that would make it map a later CUPTI time earlier than another sample's is
  // dropped, the wider bracket of the two (add_sample).
  int64_t to_mono(int64_t cupti_ns) const;
  size_t sample_count() const { return samples_.size(); }
  // Offset (cupti - mono) of the latest sample and the half-width of its bracket (the uncertainty).
  int64_t last_offset_ns() const;
  int64_t last_uncertainty_ns() const;

 private:
  struct Sample {
    int64_t cupti_ns;
    int64_t offset_ns;       // cupti - mono at the bracket midpoint
    int64_t uncertainty_ns;  // half the bracket width
  };
  std::vector<Sample> samples_;  // sorted by cupti_ns
};

struct DecodeStats {
  uint64_t records = 0;
  uint64_t kernels = 0, memcpys = 0, memsets = 0, runtime = 0, driver = 0, syncs = 0, overhead = 0;
  uint64_t external_correlations = 0;
  uint64_t unknown = 0;   // kinds we do not decode (skipped)
  uint64_t invalid = 0;   // records with end < start or zero timestamps (skipped)
};

// Turns raw CUPTI activity records into trace events. Separate from the collector so it can be tested with
// records crafted in memory (no GPU): decode() takes a pointer to a CUpti_Activity record of one of the
// kinds CONCURRENT_KERNEL/KERNEL (CUpti_ActivityKernel10), MEMCPY (CUpti_ActivityMemcpy6), MEMSET
// (CUpti_ActivityMemset4), RUNTIME/DRIVER (CUpti_ActivityAPI), SYNCHRONIZATION (CUpti_ActivitySynchronization2),
// EXTERNAL_CORRELATION (CUpti_ActivityExternalCorrelation), OVERHEAD (CUpti_ActivityOverhead3), as laid out by
// the cupti.h this file was built against. Without CUPTI headers at build time decode() counts unknown.
class CuptiDecoder {
 public:
  // Resolves a runtime (runtime=true) or driver API callback id to its name ("cudaLaunchKernel"); may be null.
  using ApiNameFn = const char* (*)(bool runtime, uint32_t cbid);

  explicit CuptiDecoder(int64_t pid = 0);
  void set_api_name_fn(ApiNameFn fn) { api_name_ = fn; }
  void set_clock(const ClockAlignment& clock) { clock_ = clock; }
  const ClockAlignment& clock() const { return clock_; }

  void decode(const void* record);
  // Moves what was decoded into a finalized Trace: GPU tracks (device, stream) named "GPU d stream s" and
  // API calls on CPU tracks (pid, thread id). Runtime calls that block on the GPU get kFlagBlockingSync.
  std::unique_ptr<Trace> take();
  const DecodeStats& stats() const { return stats_; }

 private:
  std::unique_ptr<Trace> trace_;
  ClockAlignment clock_;
  ApiNameFn api_name_ = nullptr;
  int64_t pid_;
  DecodeStats stats_;
  std::unordered_map<uint32_t, uint32_t> gpu_tracks_;  // (device << 24 ^ stream) -> track
  std::unordered_map<uint32_t, uint64_t> external_;  // CUPTI correlation -> external id
};

// Strips CUPTI's version suffix ("cudaStreamSynchronize_v3020" -> "cudaStreamSynchronize").
std::string strip_api_version(const char* name);
// True for the host API calls docs/analysis.md counts as sync points (runtime or driver spelling).
bool is_blocking_sync_api(std::string_view name);

// The activity kinds the collector can record, as a bit set. Each costs the traced program time per API call
// or per GPU operation (on an H200, all of them together took a launch-bound ResNet-50 from 1265 to 756
// samples/s), so they can be chosen: by name, comma-separated, "all" for every one.
enum CuptiKind : uint32_t {
  kCuptiKernel = 1u << 0,    // "kernel": concurrent kernel records (the timeline's GPU rows)
  kCuptiMemcpy = 1u << 1,    // "memcpy"
  kCuptiMemset = 1u << 2,    // "memset"
  kCuptiRuntime = 1u << 3,   // "runtime": runtime API calls (launches linked to their kernels, syncs)
  kCuptiDriver = 1u << 4,    // "driver": driver API calls (launches that bypass the runtime: cuBLAS, Triton)
  kCuptiSync = 1u << 5,      // "sync": synchronization records (event and stream waits)
  kCuptiExternal = 1u << 6,  // "external": external correlation ids
  kCuptiOverhead = 1u << 7,  // "overhead": CUPTI's own buffer and instrumentation time
  kCuptiAll = (1u << 8) - 1,  // every activity kind (the collector's default before the callback API)
  // "queries": also the API calls that only read state (cudaGetDevice, cudaGetLastError,
  // cuDevicePrimaryCtxGetState, cuKernelGetName, ...). Left out unless named: in 8 steps of ResNet-50 on an
  // H200 they were 250 000 of the 326 000 API records (6 cudaGetDevice per kernel), and no analysis reads them.
  kCuptiQueries = 1u << 8,
  // "callbacks": the launches, copies, memsets, syncs and allocations among the runtime and driver API calls,
  // from CUPTI's callback API (ApiCallLog) for the domains whose activity kind is off. Only those calls are
  // instrumented, each with two timestamps and an append; the RUNTIME/DRIVER activity kinds make CUPTI write a
  // record for every API call of the process. Their correlation id is CUPTI's, as in the kernels' records.
  kCuptiCallbacks = 1u << 9,
  // What a trace records unless told otherwise: the GPU's work and the launches and syncs that caused it.
  kCuptiDefault = kCuptiKernel | kCuptiMemcpy | kCuptiMemset | kCuptiCallbacks,
};
// "kernel,memcpy,runtime" -> the bit set; an empty string or "default" -> kCuptiDefault; "all" -> kCuptiAll
// (every activity kind); an unknown name -> an error that lists the names. "queries" alone means "all,queries".
Result<uint32_t> parse_cupti_kinds(std::string_view names);
std::string cupti_kinds_text(uint32_t kinds);  // the bit set back as names ("all" for every one)

// The API calls CUPTI's callback API reports (kCuptiCallbacks), kept as the activity records they stand for.
// on_call() is the body of the CUpti_CallbackFunc for the runtime and driver domains: at the call's entry it
// stores the entry time in the call's own correlationData slot (no lookup, no lock), at its exit it appends
// one ApiCall. replay() hands them to a decoder as CUpti_ActivityAPI records, so they become the same events,
// with the same names, blocking-sync flags and kernel correlations, as the RUNTIME/DRIVER kinds give.
struct ApiCall {
  uint64_t start = 0, end = 0;  // CUPTI timestamps (ns)
  uint32_t thread = 0;          // gettid()
  uint32_t cbid = 0;
  uint32_t correlation = 0;
  int32_t result = 0;           // the call's cudaError_t / CUresult
  bool runtime = true;          // runtime or driver domain
};
class ApiCallLog {
 public:
  using Clock = uint64_t (*)();  // cuptiGetTimestamp, or a test's clock
  explicit ApiCallLog(Clock clock, size_t max_calls = size_t(8) << 20) : clock_(clock), max_calls_(max_calls) {}
  // `callback_data` is CUPTI's CUpti_CallbackData for (domain, cbid).
  void on_call(bool runtime, uint32_t cbid, const void* callback_data);
  std::vector<ApiCall> drain();
  uint64_t dropped() const;  // calls past max_calls since the start (kept calls are drained, never lost)
  // Decodes `calls` as CUpti_ActivityAPI records of process `pid` (no-op without CUPTI's headers).
  static void replay(const std::vector<ApiCall>& calls, uint32_t pid, CuptiDecoder& decoder);
  // The callback ids worth a record: launches (kernels, graphs), copies and memsets, syncs and waits, and the
  // allocations that can synchronize. Empty without CUPTI's headers.
  static const std::vector<uint32_t>& runtime_ids();
  static const std::vector<uint32_t>& driver_ids();

 private:
  Clock clock_;
  size_t max_calls_;
  mutable std::mutex mu_;
  std::vector<ApiCall> calls_;
  uint64_t dropped_ = 0;
};

class CuptiCollector {
 public:
  static constexpr size_t kBufferBytes = size_t(4) << 20;
  struct Options {
    size_t max_buffers = 64;         // cap on buffers outstanding (64 x 4 MiB = 256 MiB)
    const char* library = nullptr;   // override the dlopen name/path (tests); default "libcupti.so.13"
    const char* kinds = nullptr;     // parse_cupti_kinds names; default: $TUNEBENCH_CUPTI_KINDS, else all
  };

  static CuptiCollector& instance();
  static bool built();  // compiled with CUPTI's headers (else start() always says "not built")

  Status start(const Options& options);
  Status start() { return start(Options{}); }
  // Forces CUPTI to hand over its buffers and decodes them; re-samples the clock. Call after a device sync.
  void flush();
  // flush() + move everything decoded so far into a Trace (GPU tracks + API calls), metadata filled in.
  // API calls carry (getpid(), gettid()) like the recorder's tracks: Trace::merge() puts them on the same rows.
  std::unique_ptr<Trace> collect();
  void stop();
  // Tags GPU work launched by this thread until the matching pop with an external id (CUPTI external
  // correlation kind CUSTOM2; Kineto uses 0/1): the id lands in Event::arg of the runtime calls. No-ops when off.
  void push_external_id(uint64_t id);
  void pop_external_id();

  bool running() const;
  std::string state() const;   // "on", "off", "not built"; "" before start() was ever tried
  std::string reason() const;  // why it is off ("" when on)
  uint64_t dropped() const;    // records CUPTI reports dropped + buffer requests refused at the cap
  // Writes state/reason/dropped/version into a trace's metadata (for CPU-only traces too). Nothing when start()
  // was never tried. After a successful run that was stopped, the state written is "on" (its data is there).
  // Recorder::collect() calls this, so every recorded trace carries the collector's state and reason.
  void annotate(TraceMetadata& meta) const;

  CuptiCollector(const CuptiCollector&) = delete;
  CuptiCollector& operator=(const CuptiCollector&) = delete;

  struct Impl;  // private implementation (public only so CUPTI's C callbacks can reach it)

 private:
  CuptiCollector();
  ~CuptiCollector();
  std::unique_ptr<Impl> impl_;
};

}  // namespace tb::prof
