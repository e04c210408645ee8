// Kineto / Chrome trace event import (private to the trace reader): one Importer turns the events of one
// JSON document, or of several documents that each hold a run of one file's traceEvents (trace_chunks.h),
// into the Trace model. It keeps what spans documents: "B" ranges waiting for their "E", process and
// thread names, string ids, track lookups. Views it is handed (keys, names) are not kept past one event:
// the parser's string buffer is reused by the next document. trace_importer.cpp reads an event's fields,
// trace_importer_events.cpp holds the handler of each phase and category, trace_importer_meta.cpp TuneBench's
// metadata and the finish.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "profiler/result.h"
#include "profiler/trace.h"

namespace tb::prof::import {

namespace od = simdjson::ondemand;

// The largest time the import takes, ts + dur included: 4e18 ns (~126 years).
inline constexpr int64_t kMaxAbsNs = int64_t(4) * 1000 * 1000 * 1000 * 1000 * 1000 * 1000;

// "traceEvents[i]", the start of every message about event i (built only when one is reported).
inline std::string where(uint64_t i) { return "traceEvents[" + std::to_string(i) + "]"; }

// An event's category ("cat"), which decides the kind of a complete ("X") event.
enum class Cat : uint8_t { Other, Kernel, Memcpy, Memset, Runtime, Driver, Sync, GpuAnnotation, Finding, Flow, Profiler };

// One event's fields as read from its object. The views point into the parser's buffer: valid for this event
// only.
struct Fields {
  uint64_t index = 0;  // its place in traceEvents and its byte offset, for the messages
  int64_t offset = -1;
  std::string_view ph, cat, name, scope, tb_kind, labels, meta_name, detail;
  int64_t pid = 0, tid = 0, ts = 0, dur = 0, correlation = 0, arg = kNoArg, bytes = kNoArg, sort_index = 0;
  int64_t stream = INT64_MIN, device = INT64_MIN;
  int64_t ev_idx = -1, wait_record = -1, wait_stream = -1;  // Kineto: event number; cuda_sync's wait target
  int64_t graph = 0, graph_node = 0;  // Kineto's "graph id" and "graph node id" of a CUDA graph's work (0: none)
  bool has_ts = false, has_dur = false, has_sort = false;
  std::string grid, block, shapes;  // a kernel's launch dimensions, an op's input shapes ("[64,1,28,28], [32]")
};

struct Importer {
  Trace& trace;
  const char* base;  // start of the JSON text, for byte offsets
  size_t len;
  // Chrome string pids/tids ("Traces") -> synthetic negative ids.
  std::unordered_map<std::string, int64_t> string_ids;
  std::unordered_map<int64_t, std::string> string_id_names;
  std::map<int64_t, std::string> process_names, process_labels;
  std::map<int64_t, int64_t> process_sort;
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names;
  std::map<std::pair<int64_t, int64_t>, int64_t> thread_sort;
  std::map<std::pair<int64_t, int64_t>, std::vector<Event>> open_b;  // "B" events waiting for their "E"
  std::map<std::pair<int64_t, std::string>, uint32_t> counter_tracks;
  std::vector<std::pair<uint32_t, int64_t>> gpu_tracks;  // GPU track -> device, for naming
  bool saw_kineto = false, saw_tunebench = false;
  std::vector<std::pair<std::string_view, double>> counter_scratch_;
  uint64_t event_index = 0;
  // Kineto numbers its events ("Ev Idx"); fewer kept than numbered: a sampled or filtered trace.
  uint64_t ev_idx_count = 0;
  int64_t ev_idx_min = INT64_MAX, ev_idx_max = INT64_MIN;
  // Track lookup cache.
  TrackKind last_kind = TrackKind::Counter;
  int64_t last_pid = INT64_MIN, last_tid = INT64_MIN;
  uint32_t last_track = 0;

  int64_t offset_of(const char* p) const {
    if (!p || p < base || p > base + len) return -1;
    return p - base;
  }
  int64_t last_off = -1;  // offset of the last value looked at (objects cannot report their own in 3.0)
  int64_t offset_of(od::value& v) {
    auto loc = v.current_location();
    if (loc.error()) return last_off;
    return last_off = offset_of(loc.value_unsafe());
  }
  int64_t offset_of(od::document& d) {
    auto loc = d.current_location();
    if (loc.error()) return last_off;
    return last_off = offset_of(loc.value_unsafe());
  }
  int64_t offset_of(od::object&) { return last_off; }
  int64_t offset_of(od::array&) { return last_off; }
  Status fail(std::string msg, int64_t off) { return Error{std::move(msg), off}; }

  uint32_t track(TrackKind kind, int64_t pid, int64_t tid);
  // One sample of the counter `name` of process `pid`, at `e`'s time, on that counter's own track.
  void add_counter(int64_t pid, const std::string& name, const Event& e, double value);
  int64_t string_id(std::string_view s);
  // pid/tid: integer, number, or string.
  bool read_id(od::value v, int64_t& out);
  bool read_time(od::value v, int64_t& ns);
  // One element of traceEvents: its fields read, then handed to the handler of its phase ("ph") and, for a
  // complete event, of its category.
  Status event(od::value ev_value);
  Status read_fields(od::object& obj, Fields& f);
  Status read_args(od::value v, Fields& f);
  // The handlers (trace_importer_events.cpp). `e` is the event with its time, name, correlation and detail.
  // Flows ("s", "f", "t": ac2g, fwdbwd) and our findings are not handled: the trace rebuilds flows from the
  // correlation ids, the analysis its findings.
  void metadata(const Fields& f);                        // "M": process and thread names, sort order
  Event base_event(const Fields& f);
  void begin(const Fields& f, Event& e);                 // "B": waits for its "E"
  void end(const Fields& f);                             // "E"
  void instant(const Fields& f, Event& e);               // "i", "I", "R", "n"
  void memory_sample(const Fields& f, const Event& e);   // torch.profiler's "[memory]" instants
  void counter(const Fields& f, const Event& e);         // "C"
  Status complete(const Fields& f, Cat c, Event& e);     // "X": kernel, runtime, driver, cpu_op, ... below
  void gpu_copy(const Fields& f, Event& e, EventKind k);  // gpu_memcpy, gpu_memset
  void stream_wait(const Fields& f, Event& e);           // cuda_sync
  void place(const Fields& f, const Event& e, bool gpu);  // on its GPU stream or its CPU thread
  Status tunebench_meta(od::value v);
  void finish();
};

}  // namespace tb::prof::import
