// What the Importer does besides the events (trace_importer.h): TuneBench's own metadata object, and the
// finish after the last document (open ranges, process and thread names, the tracks' order).
#include "trace_importer.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "profiler/cupti_collector.h"
#include "profiler/range_names.h"
#include "profiler/trace_io.h"

namespace tb::prof::import {

Status Importer::tunebench_meta(od::value v) {
  od::object o;
  if (v.get_object().get(o)) return fail("\"tunebench\" is not an object", offset_of(v));
  saw_tunebench = true;
  TraceMetadata& m = trace.meta();
  for (auto f_r : o) {
    od::field f;
    if (std::move(f_r).get(f)) return fail("\"tunebench\": invalid", offset_of(o));
    std::string_view k;
    if (f.unescaped_key().get(k)) return fail("\"tunebench\": bad key", offset_of(o));
    od::value fv = f.value();
    std::string_view s;
    if (k == "device" && !fv.get_string().get(s)) m.device = std::string(s);
    else if (k == "collector_state" && !fv.get_string().get(s)) m.collector_state = std::string(s);
    else if (k == "collector_reason" && !fv.get_string().get(s)) m.collector_reason = std::string(s);
    else if (k == "dropped_records") {
      uint64_t u;
      if (!fv.get_uint64().get(u)) m.dropped_records = u;
    } else if (k == "documents") {
      od::object sub;
      if (fv.get_object().get(sub)) continue;
      for (auto sf_r : sub) {
        od::field sf;
        if (std::move(sf_r).get(sf)) break;
        std::string_view sk, raw;
        if (sf.unescaped_key().get(sk)) break;
        od::object doc;
        if (sf.value().get_object().get(doc) || doc.raw_json().get(raw)) continue;
        m.documents[std::string(sk)] = std::string(raw);
      }
    } else if (k == "versions" || k == "extra") {
      od::object sub;
      if (fv.get_object().get(sub)) continue;
      auto& dst = k == "versions" ? m.versions : m.extra;
      for (auto sf_r : sub) {
        od::field sf;
        if (std::move(sf_r).get(sf)) break;
        std::string_view sk, sv;
        if (sf.unescaped_key().get(sk)) break;
        if (!sf.value().get_string().get(sv)) dst[std::string(sk)] = std::string(sv);
      }
    }
  }
  return Status::Ok();
}

void Importer::finish() {
  // Unclosed "B" ranges: closed at their start (zero length) and flagged.
  for (auto& [key, stack] : open_b) {
    for (Event& e : stack) {
      e.flags |= kFlagUnclosed;
      trace.add_event(track(TrackKind::CpuThread, key.first, key.second), e);
    }
  }
  // Names and order from metadata.
  for (uint32_t i = 0; i < trace.tracks().size(); ++i) {
    const Track& t = trace.track(i);
    if (t.kind() == TrackKind::CpuThread) {
      if (auto pn = process_names.find(t.pid()); pn != process_names.end() && !pn->second.empty())
        trace.meta().process_names[t.pid()] = pn->second;
      auto tn = thread_names.find({t.pid(), t.tid()});
      std::string name;
      if (tn != thread_names.end() && !tn->second.empty()) name = tn->second;
      else if (auto sn = string_id_names.find(t.tid()); sn != string_id_names.end()) name = sn->second;
      else if (t.tid() < -1 && t.tid() >= INT32_MIN) {
        // Kineto writes a thread it saw no system tid for as its pthread id cut to int32 (negative):
        // "thread -247463936" reads like a bug, the hex of the 32 bits reads like the id it is.
        char buf[48];
        std::snprintf(buf, sizeof buf, "unnamed thread 0x%08x", static_cast<uint32_t>(t.tid()));
        name = buf;
      } else name = "thread " + std::to_string(t.tid());
      if (auto pn = string_id_names.find(t.pid()); pn != string_id_names.end()) {
        // Kineto's own "Spans" process holds the profiler's collection window, not a thread of the program.
        if (pn->second == kGlobalMarkersTrack) name = kGlobalMarkersTrack;
        else if (pn->second == "Spans") name = "profiler span: " + name;
        else name = pn->second + " / " + name;
      }
      trace.set_track_name(i, name);
      int64_t sort = 0;
      if (auto ps = process_sort.find(t.pid()); ps != process_sort.end()) sort = ps->second << 20;
      if (auto ts = thread_sort.find({t.pid(), t.tid()}); ts != thread_sort.end()) sort += ts->second;
      trace.set_track_sort_index(i, sort);
    } else if (t.kind() == TrackKind::GpuStream) {
      // Kineto puts device-wide work (cudaDeviceSynchronize waits) on "stream" -1.
      trace.set_track_name(i, "GPU " + std::to_string(t.pid()) +
                                  (t.tid() == -1 ? std::string(" device-wide") : " stream " + std::to_string(t.tid())));
      trace.set_track_sort_index(i, (int64_t(1) << 40) + (t.pid() << 20) + t.tid());
    }
  }
  TraceMetadata& m = trace.meta();
  if (ev_idx_count > 0) {
    m.extra["ev_idx_events"] = std::to_string(ev_idx_count);
    m.extra["ev_idx_span"] = std::to_string(ev_idx_max - ev_idx_min + 1);
  }
  if (m.source_format.empty()) m.source_format = saw_tunebench ? "tunebench" : (saw_kineto ? "kineto" : "chrome");
}

}  // namespace tb::prof::import
