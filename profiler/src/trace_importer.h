// Kineto / Chrome trace event import (private to the trace reader): one Importer turns the events of one
// JSON document, or of several documents that each hold a run of one file's traceEvents (trace_chunks.h),
// into the Trace model. It keeps what spans documents: "B" ranges waiting for their "E", process and
// thread names, string ids, track lookups. Views it is handed (keys, names) are not kept past one event:
// the parser's string buffer is reused by the next document.
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
  Status event(od::value ev_value);
  Status tunebench_meta(od::value v);
  void finish();
};

}  // namespace tb::prof::import
