// Range recorder: per-thread single-producer chunk chains, drained by collect() (single consumer).
#include "profiler/recorder.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "profiler/cupti_collector.h"
#include "profiler/trace.h"

#if defined(TUNEBENCH_HAVE_NVTX)
#include <nvtx3/nvToolsExt.h>
#endif

namespace tb::prof {
namespace {

enum class RecType : uint8_t { Begin = 0, End = 1, Instant = 2, Counter = 3 };

struct Record {
  int64_t ts;
  const char* name;
  union {
    int64_t arg;
    double value;
  };
  RecType type;
};

struct ClockPair {
  int64_t tick;
  int64_t ns;
};

constexpr uint32_t kChunkRecords = 8192;               // 256 KiB per chunk
constexpr uint32_t kMaxChunksPerThread = 1024;         // cap: 8 Mi records (256 MiB) not yet collected

// Written by exactly one thread (the owner); `committed` publishes how many records are complete.
struct Chunk {
  std::atomic<uint32_t> committed{0};
  std::atomic<Chunk*> next{nullptr};
  Record records[kChunkRecords];
};

struct OpenRange {
  int64_t start;
  const char* name;
  int64_t arg;
};

struct ThreadBuffer {
  // Producer side (owner thread only).
  Chunk* tail = nullptr;
  uint32_t write = 0;  // == tail->committed, kept locally to avoid an atomic load on the hot path
  // Shared.
  std::atomic<uint32_t> live_chunks{0};
  std::atomic<uint64_t> dropped{0};
  std::atomic<bool> exited{false};
  // Consumer side (collect() only, under the registry lock).
  Chunk* head = nullptr;
  uint32_t read = 0;
  std::vector<OpenRange> open;
  // Identity.
  int64_t tid = 0;
  std::string name;  // guarded by the registry lock
};

struct Registry {
  std::mutex mu;
  std::vector<ThreadBuffer*> buffers;  // owned; freed by collect() once exited and drained
  std::atomic<int64_t> start_ts{0};  // ticks
  std::atomic<int64_t> stop_ts{0};   // ticks
  std::vector<ClockPair> clock_samples;  // since the latest start(), sorted; guarded by mu
  std::atomic<uint64_t> dropped_total{0};
  // What one record costs the recording thread (a begin or an end: the clock, the buffer, NVTX when a tool
  // listens), measured at the first start(); 0 before.
  std::atomic<int64_t> record_ns{0};
};

// The hot path's only shared read: a constant-initialized global (no function-local-static guard).
constinit std::atomic<bool> g_enabled{false};

Registry& registry() {
  static Registry* r = new Registry();  // leaked on purpose: threads may record during static destruction
  return *r;
}

// ---- Hot-path clock ----
// On x86-64 with an invariant TSC that the kernel itself uses as clocksource, records carry raw TSC ticks
// (a few ns to read, vs. 20-70 ns for clock_gettime on a loaded VM) and collect() maps them to CLOCK_MONOTONIC
// ns by piecewise-linear interpolation between (tick, ns) pairs sampled at start() and at every collect().
// Elsewhere, ticks are CLOCK_MONOTONIC ns and the mapping is the identity.
std::atomic<bool> g_use_tsc{false};
std::once_flag g_tsc_once;

void decide_clock() {
#if defined(__x86_64__)
  std::call_once(g_tsc_once, [] {
    if (std::getenv("TUNEBENCH_RECORDER_NO_TSC")) return;
    // Forced on (tests: the TSC path is checked on machines whose kernel clocksource is another one).
    if (const char* f = std::getenv("TUNEBENCH_RECORDER_TSC"); f && *f == '1') {
      g_use_tsc.store(true, std::memory_order_release);
      return;
    }
    FILE* f = std::fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (!f) return;
    char buf[32] = {0};
    const bool tsc = std::fgets(buf, sizeof buf, f) && std::strncmp(buf, "tsc", 3) == 0;
    std::fclose(f);
    g_use_tsc.store(tsc, std::memory_order_release);
  });
#endif
}

inline int64_t ticks() noexcept {
#if defined(__x86_64__)
  if (g_use_tsc.load(std::memory_order_relaxed)) {
    // RDTSCP, not RDTSC: it waits for the instructions before it, so a range's end is never read before the
    // work inside it. With plain RDTSC a child's end came out up to ~30 ns after its parent's on an AMD EPYC
    // VM, and nested ranges swapped depths (Recorder tests, 3 of 3 runs); RDTSCP costs a few more cycles.
    unsigned aux;
    return static_cast<int64_t>(__builtin_ia32_rdtscp(&aux));
  }
#endif
  return now_ns();
}

ClockPair sample_clock() {
  if (!g_use_tsc.load(std::memory_order_acquire)) {
    const int64_t n = now_ns();
    return {n, n};
  }
  // Narrowest of 3 brackets.
  ClockPair best{0, 0};
  int64_t best_w = INT64_MAX;
  for (int i = 0; i < 3; ++i) {
    const int64_t a = ticks();
    const int64_t n = now_ns();
    const int64_t b = ticks();
    if (b - a < best_w) {
      best_w = b - a;
      best = {a + (b - a) / 2, n};
    }
  }
  return best;
}

// Appends a fresh sample to `samples` and returns the tick up to which records may be mapped now. Samples stay
// strictly increasing in both tick and ns, so the mapping never runs backwards: a sample whose bracket came
// out no later than the previous one (two collects within the clocks' read error) is not kept.
int64_t push_clock_sample(std::vector<ClockPair>& samples) {
  const ClockPair s = sample_clock();
  if (!samples.empty() && (s.tick <= samples.back().tick || s.ns <= samples.back().ns)) return samples.back().tick;
  samples.push_back(s);
  return s.tick;
}

// Maps ticks to ns given samples sorted by tick (>= 1 sample when TSC is in use).
struct TickMap {
  std::vector<ClockPair> s;
  bool tsc = false;
  int64_t operator()(int64_t t) const {
    if (!tsc || s.empty()) return t;
    if (s.size() == 1) return s[0].ns + (t - s[0].tick);  // unreachable in practice: collect adds a sample
    size_t hi = 1;
    if (t >= s.back().tick) {
      hi = s.size() - 1;
    } else {
      auto it = std::upper_bound(s.begin(), s.end(), t, [](int64_t x, const ClockPair& p) { return x < p.tick; });
      hi = std::max<size_t>(1, static_cast<size_t>(it - s.begin()));
    }
    const ClockPair& a = s[hi - 1];
    const ClockPair& b = s[hi];
    if (b.tick == a.tick) return a.ns;
    const long double slope = static_cast<long double>(b.ns - a.ns) / static_cast<long double>(b.tick - a.tick);
    return a.ns + static_cast<int64_t>(std::llround(slope * static_cast<long double>(t - a.tick)));
  }
};

#if defined(TUNEBENCH_HAVE_NVTX)
std::atomic<nvtxDomainHandle_t> g_domain{nullptr};
nvtxDomainHandle_t nvtx_domain() {
  nvtxDomainHandle_t d = g_domain.load(std::memory_order_acquire);
  if (!d) {
    d = nvtxDomainCreateA("TuneBench");
    nvtxDomainHandle_t expected = nullptr;
    if (!g_domain.compare_exchange_strong(expected, d)) d = expected;
  }
  return d;
}
#endif

int64_t current_tid() { return static_cast<int64_t>(::syscall(SYS_gettid)); }

struct ThreadExitMarker {
  ThreadBuffer* buf = nullptr;
  ~ThreadExitMarker();
};

// initial-exec: the library is PIC (it may end up in a shared object), and the default TLS model would call
// __tls_get_addr on every record.
__attribute__((tls_model("initial-exec"))) thread_local ThreadBuffer* t_buf = nullptr;
thread_local ThreadExitMarker t_exit_marker;

ThreadExitMarker::~ThreadExitMarker() {
  if (buf) {
    t_buf = nullptr;  // a record made after this point (another TLS destructor) starts a fresh buffer
    buf->exited.store(true, std::memory_order_release);
  }
}

// The head chunk `c` of `b` has had its first `n` records read. When it is full and the producer has moved on
// to a next chunk, frees it and makes the next one the head: returns true (the caller continues reading).
// Registry lock held.
bool release_drained_head(ThreadBuffer* b, Chunk* c, uint32_t n) {
  Chunk* next = c->next.load(std::memory_order_acquire);
  if (n != kChunkRecords || !next) return false;
  b->head = next;
  b->read = 0;
  delete c;
  b->live_chunks.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

// Skips every committed record of `b` and frees drained chunks. Registry lock held.
void discard_committed(ThreadBuffer* b) {
  while (b->head) {
    Chunk* c = b->head;
    const uint32_t n = c->committed.load(std::memory_order_acquire);
    b->read = n;
    if (release_drained_head(b, c, n)) continue;
    break;
  }
  b->open.clear();
}

ThreadBuffer* make_buffer() {
  auto* b = new ThreadBuffer();
  b->tid = current_tid();
  Registry& r = registry();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    r.buffers.push_back(b);
  }
  t_exit_marker.buf = b;
  t_buf = b;
  return b;
}

inline ThreadBuffer* buffer() {
  ThreadBuffer* b = t_buf;
  return b ? b : make_buffer();
}

// Slow path: the current chunk is full (or there is none). Allocates outside the hot path.
[[gnu::noinline]] bool grow(ThreadBuffer* b) {
  if (b->live_chunks.load(std::memory_order_relaxed) >= kMaxChunksPerThread) return false;
  auto* c = new (std::nothrow) Chunk();
  if (!c) return false;
  b->live_chunks.fetch_add(1, std::memory_order_relaxed);
  if (b->tail) {
    b->tail->next.store(c, std::memory_order_release);
  } else {
    // First chunk: the consumer picks it up as head under the registry lock.
    std::lock_guard<std::mutex> lock(registry().mu);
    b->head = c;
    b->read = 0;
  }
  b->tail = c;
  b->write = 0;
  return true;
}

inline void push(RecType type, const char* name, int64_t arg, int64_t ts = INT64_MIN) noexcept {
  ThreadBuffer* b = buffer();
  if (__builtin_expect(b->tail == nullptr || b->write == kChunkRecords, 0)) {
    if (!grow(b)) {
      b->dropped.fetch_add(1, std::memory_order_relaxed);
      registry().dropped_total.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  Record& rec = b->tail->records[b->write];
  rec.ts = ts == INT64_MIN ? ticks() : ts;
  rec.name = name;
  rec.arg = arg;
  rec.type = type;
  ++b->write;
  b->tail->committed.store(b->write, std::memory_order_release);
}

}  // namespace

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

void set_thread_name(std::string_view name) {
  ThreadBuffer* b = buffer();
  {
    std::lock_guard<std::mutex> lock(registry().mu);
    b->name.assign(name.data(), name.size());
  }
#if defined(TUNEBENCH_HAVE_NVTX)
  std::string n(name);
  nvtxNameOsThreadA(static_cast<uint32_t>(b->tid), n.c_str());
#endif
}

void name_thread_if_unnamed(std::string_view name) {
  ThreadBuffer* b = buffer();
  {
    std::lock_guard<std::mutex> lock(registry().mu);
    if (!b->name.empty()) return;
  }
  set_thread_name(name);
}

const char* intern(std::string_view name) {
  static std::mutex* mu = new std::mutex();
  static auto* set = new std::unordered_set<std::string>();  // node-based: element addresses are stable
  std::lock_guard<std::mutex> lock(*mu);
  auto it = set->emplace(name).first;
  return it->c_str();
}

bool Recorder::nvtx_built() {
#if defined(TUNEBENCH_HAVE_NVTX)
  return true;
#else
  return false;
#endif
}

Recorder& Recorder::instance() {
  static Recorder* r = new Recorder();
  return *r;
}

void Recorder::start() {
  Registry& r = registry();
  if (g_enabled.load(std::memory_order_acquire)) return;
#if defined(TUNEBENCH_HAVE_NVTX)
  (void)nvtx_domain();
#endif
  decide_clock();
  if (r.record_ns.load(std::memory_order_relaxed) == 0) {
    // What a record costs the traced program, for the trace to say (recording_record_ns): 2000 real
    // begin/end pairs on this thread, before start_ts, so the next collect() discards them.
    g_enabled.store(true, std::memory_order_release);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 2000; ++i) {
      begin("tunebench.calibration");
      end();
    }
    const auto t1 = std::chrono::steady_clock::now();
    g_enabled.store(false, std::memory_order_release);
    const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count() / 4000;
    r.record_ns.store(std::max<int64_t>(1, ns), std::memory_order_relaxed);
  }
  {
    // Clear what was recorded before: records older than start_ts are discarded by the next collect();
    // open ranges from an earlier session are forgotten.
    std::lock_guard<std::mutex> lock(r.mu);
    for (ThreadBuffer* b : r.buffers) discard_committed(b);
    r.clock_samples.clear();
    push_clock_sample(r.clock_samples);
  }
  r.start_ts.store(ticks(), std::memory_order_release);
  g_enabled.store(true, std::memory_order_release);
}

void Recorder::stop() {
  Registry& r = registry();
  if (!g_enabled.load(std::memory_order_acquire)) return;
  r.stop_ts.store(ticks(), std::memory_order_release);
  g_enabled.store(false, std::memory_order_release);
}

bool Recorder::enabled() const noexcept { return g_enabled.load(std::memory_order_relaxed); }

uint64_t Recorder::dropped() const noexcept { return registry().dropped_total.load(std::memory_order_relaxed); }

#if defined(TUNEBENCH_HAVE_NVTX)
// The attributes of one NVTX range or mark: an ASCII message (our static name) and the optional integer arg.
inline nvtxEventAttributes_t nvtx_attributes(const char* name, int64_t arg) noexcept {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = name;
  if (arg != kNoArg) {
    a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
    a.payload.llValue = arg;
  }
  return a;
}

// A range's start or a mark, handed to NVTX while a domain is open: `emit` is nvtxDomainRangePushEx or
// nvtxDomainMarkEx, which take the same attributes.
template <class Emit>
inline void nvtx_event(Emit emit, const char* name, int64_t arg) noexcept {
  if (nvtxDomainHandle_t d = g_domain.load(std::memory_order_relaxed)) {
    const nvtxEventAttributes_t a = nvtx_attributes(name, arg);
    emit(d, &a);
  }
}
#endif

void Recorder::begin(const char* name, int64_t arg) noexcept {
  if (!g_enabled.load(std::memory_order_relaxed)) return;
#if defined(TUNEBENCH_HAVE_NVTX)
  nvtx_event(nvtxDomainRangePushEx, name, arg);
#endif
  push(RecType::Begin, name, arg);
}

void Recorder::end() noexcept {
  if (!g_enabled.load(std::memory_order_relaxed)) return;
#if defined(TUNEBENCH_HAVE_NVTX)
  if (nvtxDomainHandle_t d = g_domain.load(std::memory_order_relaxed)) nvtxDomainRangePop(d);
#endif
  push(RecType::End, nullptr, kNoArg);
}

int64_t Recorder::timestamp() noexcept { return ticks(); }

void Recorder::range_since(const char* name, int64_t start, int64_t arg) noexcept {
  if (!g_enabled.load(std::memory_order_relaxed)) return;
  const int64_t end = ticks();
  push(RecType::Begin, name, arg, std::min(start, end));
  push(RecType::End, nullptr, kNoArg, end);
}

void Recorder::instant(const char* name, int64_t arg) noexcept {
  if (!g_enabled.load(std::memory_order_relaxed)) return;
#if defined(TUNEBENCH_HAVE_NVTX)
  nvtx_event(nvtxDomainMarkEx, name, kNoArg);
#endif
  push(RecType::Instant, name, arg);
}

void Recorder::counter(const char* name, double value) noexcept {
  if (!g_enabled.load(std::memory_order_relaxed)) return;
  int64_t bits;
  static_assert(sizeof(bits) == sizeof(value));
  std::memcpy(&bits, &value, sizeof(bits));
  push(RecType::Counter, name, bits);
}

std::unique_ptr<Trace> Recorder::collect() {
  Registry& r = registry();
  auto trace = std::make_unique<Trace>();
  trace->meta().source_format = "tunebench";
  // The analysis sizes its loader-worker suggestion by the cores of the machine that trained; every trace
  // recorded here carries them (CLI runs, serve chunks and the tuner's snapshots alike).
  if (unsigned cores = std::thread::hardware_concurrency(); cores > 0)
    trace->meta().extra["cpu_cores"] = std::to_string(cores);
  // What recording cost the program, as far as the recorder knows it: its records' count (below) times what
  // one costs (docs/analysis.md "What recording cost").
  if (const int64_t ns = r.record_ns.load(std::memory_order_relaxed); ns > 0)
    trace->meta().extra["recording_record_ns"] = std::to_string(ns);
  const bool recording = g_enabled.load(std::memory_order_acquire);
  const int64_t start_ts = r.start_ts.load(std::memory_order_acquire);
  const int64_t close_ts = recording ? 0 : r.stop_ts.load(std::memory_order_acquire);
  const int64_t pid = static_cast<int64_t>(::getpid());
  std::unordered_map<const char*, uint32_t> counter_tracks;

  std::lock_guard<std::mutex> lock(r.mu);
  // Only records older than this sample are read now; younger ones wait for the next collect. So every tick is
  // mapped between two samples, and since samples are only ever appended, a tick maps to the same ns in every
  // collect: read past the sample, the youngest records would be extrapolated from the last (possibly very
  // short) interval, while a range still open then would be interpolated one collect later.
  const int64_t cutoff = push_clock_sample(r.clock_samples);
  TickMap to_ns{r.clock_samples, g_use_tsc.load(std::memory_order_acquire)};
  for (auto it = r.buffers.begin(); it != r.buffers.end();) {
    ThreadBuffer* b = *it;
    // Read `exited` before draining: if set, the owner wrote its last record before setting it.
    const bool exited = b->exited.load(std::memory_order_acquire);
    const std::string tname = b->name.empty() ? "thread " + std::to_string(b->tid) : b->name;
    uint32_t track = UINT32_MAX;
    auto cpu_track = [&]() {
      if (track == UINT32_MAX) track = trace->track_for(TrackKind::CpuThread, pid, b->tid, tname);
      return track;
    };
    // One of the thread's ranges or instants, on its track (span in ns, name interned).
    auto add_event = [&](EventKind kind, int64_t start_ns, int64_t end_ns, const char* name, int64_t arg,
                         uint16_t flags) {
      Event e;
      e.start_ns = start_ns;
      e.end_ns = end_ns;
      e.arg = arg;
      e.name = trace->intern(name ? name : "");
      e.kind = kind;
      e.flags = flags;
      trace->add_event(cpu_track(), e);
    };
    bool younger_left = false;  // records after the sample remain: this buffer is not drained
    while (b->head) {
      Chunk* c = b->head;
      const uint32_t n = c->committed.load(std::memory_order_acquire);
      for (; b->read < n; ++b->read) {
        const Record& rec = c->records[b->read];
        if (rec.ts > cutoff) {  // a thread's records are in tick order: the rest are younger too
          younger_left = true;
          break;
        }
        if (rec.ts < start_ts) continue;  // recorded before the latest start(): cleared
        switch (rec.type) {
          case RecType::Begin:
            b->open.push_back({rec.ts, rec.name, rec.arg});
            break;
          case RecType::End: {
            if (b->open.empty()) break;  // its begin happened before start(): dropped
            OpenRange o = b->open.back();
            b->open.pop_back();
            add_event(EventKind::Range, to_ns(o.start), to_ns(rec.ts), o.name, o.arg, 0);
            break;
          }
          case RecType::Instant: {
            const int64_t at = to_ns(rec.ts);
            add_event(EventKind::Instant, at, at, rec.name, rec.arg, 0);
            break;
          }
          case RecType::Counter: {
            auto [ct, inserted] = counter_tracks.try_emplace(rec.name, 0u);
            if (inserted) {
              // The process's own counter (its pid): the ranks of a merged group trace each keep theirs.
              ct->second = trace->track_for(TrackKind::Counter, pid, static_cast<int64_t>(counter_tracks.size()),
                                            rec.name ? rec.name : "counter");
            }
            Event e;
            e.start_ns = e.end_ns = to_ns(rec.ts);
            e.value = rec.value;
            e.name = trace->intern(rec.name ? rec.name : "");
            e.kind = EventKind::Counter;
            trace->add_event(ct->second, e);
            break;
          }
        }
      }
      if (!younger_left && release_drained_head(b, c, n)) continue;
      break;
    }
    // Ranges still open: kept for the next collect while recording; closed at the stop time otherwise.
    if ((!recording || exited) && !younger_left && !b->open.empty()) {
      const int64_t t_close = recording ? ticks() : close_ts;
      while (!b->open.empty()) {
        OpenRange o = b->open.back();
        b->open.pop_back();
        const int64_t start_ns = to_ns(o.start);
        add_event(EventKind::Range, start_ns, std::max(start_ns, to_ns(t_close)), o.name, o.arg, kFlagUnclosed);
      }
    }
    if (track == UINT32_MAX && !b->name.empty() && recording) cpu_track();  // named threads show even if idle
    if (exited && !younger_left) {
      // The thread is gone and everything it wrote has been read: free its buffer.
      for (Chunk* c = b->head; c;) {
        Chunk* next = c->next.load(std::memory_order_acquire);
        delete c;
        c = next;
      }
      delete b;
      it = r.buffers.erase(it);
      continue;
    }
    ++it;
  }
  trace->meta().dropped_records = r.dropped_total.load(std::memory_order_relaxed);
  // Record whether GPU data could be collected and why not (DESIGN: a CPU-only trace says why).
  // (Only state and reason: CUPTI's dropped records belong to the GPU trace CuptiCollector::collect() returns.)
  TraceMetadata cupti;
  CuptiCollector::instance().annotate(cupti);
  trace->meta().collector_state = cupti.collector_state;
  trace->meta().collector_reason = cupti.collector_reason;
  for (const auto& [k, v] : cupti.versions) trace->meta().versions.emplace(k, v);
  for (const auto& [k, v] : cupti.extra) trace->meta().extra.emplace(k, v);
  trace->meta().extra["recording_events"] = std::to_string(trace->event_count());
  trace->finalize();
  return trace;
}

}  // namespace tb::prof
