// Chrome trace JSON export of a Trace (plain or gzip), with findings as instant events: what Perfetto and
// chrome://tracing open. Split from the importer (trace_io.cpp): the two share only the public types.
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "json_writer.h"
#include "profiler/trace_io.h"

namespace tb::prof {

namespace {

const char* kineto_cat(EventKind k, TrackKind tk) {
  switch (k) {
    case EventKind::Kernel: return "kernel";
    case EventKind::Memcpy: return "gpu_memcpy";
    case EventKind::Memset: return "gpu_memset";
    case EventKind::Runtime: return "cuda_runtime";
    case EventKind::Driver: return "cuda_driver";
    case EventKind::Sync: return "cuda_sync";
    case EventKind::Overhead: return "overhead";
    case EventKind::Range: return tk == TrackKind::GpuStream ? "gpu_user_annotation" : "tunebench";
    default: return "tunebench";
  }
}

// ,"pid":P,"tid":T: the process and thread (for GPU work, the device and stream) every event stands on.
void write_pid_tid(std::string& o, int64_t pid, int64_t tid) {
  o += ",\"pid\":";
  JsonWriter::append_int(o, pid);
  o += ",\"tid\":";
  JsonWriter::append_int(o, tid);
}

// ,"ts":T, in microseconds.
void write_ts(std::string& o, int64_t ns) {
  o += ",\"ts\":";
  JsonWriter::append_us(o, ns);
}

void write_meta_event(std::string& o, const char* what, int64_t pid, int64_t tid, const char* argk, std::string_view name) {
  o += "{\"ph\":\"M\",\"name\":\"";
  o += what;
  o += '"';
  write_pid_tid(o, pid, tid);
  o += ",\"args\":{\"";
  o += argk;
  o += "\":";
  JsonWriter::append_string(o, name);
  o += "}},\n";
}

// The "tunebench" object: the trace's metadata, so that load_trace reads back what was written.
void write_head(std::string& o, const TraceMetadata& m) {
  JsonWriter w;
  w.begin_object();
  w.key("format_version").value(int64_t{1});
  w.key("device").value(m.device);
  w.key("collector_state").value(m.collector_state);
  w.key("collector_reason").value(m.collector_reason);
  w.key("dropped_records").value(static_cast<uint64_t>(m.dropped_records));
  w.key("source_format").value(m.source_format);
  w.key("versions").begin_object();
  for (const auto& [k, v] : m.versions) w.key(k).value(v);
  w.end_object();
  w.key("extra").begin_object();
  for (const auto& [k, v] : m.extra) w.key(k).value(v);
  w.end_object();
  w.end_object();
  std::string head = w.take();
  if (!m.documents.empty()) {  // raw JSON objects, as they were given
    head.pop_back();
    head += ",\"documents\":{";
    bool first = true;
    for (const auto& [k, v] : m.documents) {
      if (!first) head += ',';
      first = false;
      JsonWriter::append_string(head, k);
      head += ':';
      head += v;
    }
    head += "}}";
  }
  o += "{\"displayTimeUnit\":\"ns\",\"tunebench\":";
  o += head;
  o += ",\n\"traceEvents\":[\n";
}

// Track names (Perfetto/chrome show them) and order.
void write_track_names(std::string& o, const Trace& trace) {
  std::map<int64_t, bool> gpu_pids;
  for (const Track& t : trace.tracks()) {
    if (t.kind() == TrackKind::CpuThread) {
      write_meta_event(o, "thread_name", t.pid(), t.tid(), "name", t.name());
      // A row placed apart (the step lane first) keeps its place when read back.
      if (t.sort_index() != 0) {
        o += "{\"ph\":\"M\",\"name\":\"thread_sort_index\"";
        write_pid_tid(o, t.pid(), t.tid());
        o += ",\"args\":{\"sort_index\":";
        JsonWriter::append_int(o, t.sort_index());
        o += "}},\n";
      }
    } else if (t.kind() == TrackKind::GpuStream) {
      gpu_pids[t.pid()] = true;
      write_meta_event(o, "thread_name", t.pid(), t.tid(), "name", "stream " + std::to_string(t.tid()));
    }
  }
  for (const auto& [pid, name] : trace.meta().process_names)
    if (!gpu_pids.count(pid)) write_meta_event(o, "process_name", pid, 0, "name", name);
  for (const auto& [pid, _] : gpu_pids) {
    write_meta_event(o, "process_name", pid, 0, "name", "GPU " + std::to_string(pid));
    write_meta_event(o, "process_labels", pid, 0, "labels", "GPU " + std::to_string(pid));
  }
}

// A counter sample (memory, RSS): Chrome's "C" event on its process.
void write_counter(std::string& o, const Track& t, const Event& e) {
  o += "{\"ph\":\"C\",\"name\":";
  JsonWriter::append_string(o, t.name());
  write_pid_tid(o, t.pid(), 0);
  write_ts(o, e.start_ns);
  o += ",\"args\":{\"value\":";
  JsonWriter::append_double(o, e.value);
  o += "}},\n";
}

// A span or an instant in Kineto's categories, with TuneBench's own kind and fields in its args.
void write_event(std::string& o, const Trace& trace, const Track& t, const Event& e) {
  const bool instant = e.kind == EventKind::Instant;
  o += instant ? "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"" : "{\"ph\":\"X\",\"cat\":\"";
  o += kineto_cat(e.kind, t.kind());
  o += "\",\"name\":";
  JsonWriter::append_string(o, trace.name(e.name));
  write_pid_tid(o, t.pid(), t.tid());
  write_ts(o, e.start_ns);
  if (!instant) {
    o += ",\"dur\":";
    JsonWriter::append_us(o, e.end_ns - e.start_ns);
  }
  o += ",\"args\":{\"tb_kind\":\"";
  o += to_string(e.kind);
  o += '"';
  if (e.correlation) {
    o += ",\"correlation\":";
    JsonWriter::append_int(o, static_cast<int64_t>(e.correlation & 0x7fffffffffffffffULL));
  }
  if (t.kind() == TrackKind::GpuStream) {
    o += ",\"device\":";
    JsonWriter::append_int(o, t.pid());
    o += ",\"stream\":";
    JsonWriter::append_int(o, t.tid());
  }
  if (e.graph && is_gpu_activity(e.kind)) {
    // Kineto's names, so that other tools read a graph's work from our traces as from theirs.
    o += ",\"graph id\":";
    JsonWriter::append_int(o, e.graph);
    if (const uint64_t node = e.graph_node()) {
      o += ",\"graph node id\":";
      JsonWriter::append_int(o, static_cast<int64_t>(node));
    }
  }
  if (e.arg != kNoArg && !e.graph_node()) {
    o += (e.kind == EventKind::Memcpy || e.kind == EventKind::Memset) ? ",\"bytes\":" : ",\"arg\":";
    JsonWriter::append_int(o, e.arg);
  }
  if (e.detail != kNoName) {
    o += ",\"detail\":";
    JsonWriter::append_string(o, trace.name(e.detail));
  }
  if (e.flags & kFlagUnclosed) o += ",\"unclosed\":1";
  o += "}},\n";
}

// One end of a flow: `head` (its phase and names, up to the id), then where it stands.
void write_flow_end(std::string& o, const char* head, int64_t id, const Track& t, int64_t ts_ns) {
  o += head;
  JsonWriter::append_int(o, id);
  write_pid_tid(o, t.pid(), t.tid());
  write_ts(o, ts_ns);
  o += "},\n";
}

// Flows: launch -> GPU work (ids are correlation ids, as Kineto writes them).
void write_flows(std::string& o, const Trace& trace) {
  for (const Flow& f : trace.flows()) {
    const Track& st = trace.track(f.src_track);
    const Track& dt = trace.track(f.dst_track);
    const Event& se = st.events()[f.src_event];
    const Event& de = dt.events()[f.dst_event];
    const auto id = static_cast<int64_t>(f.correlation & 0x7fffffffffffffffULL);
    write_flow_end(o, "{\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":", id, st, se.start_ns);
    write_flow_end(o, "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":", id, dt,
                   de.start_ns);
  }
}

// Findings: global instant events at the start of their evidence interval.
void write_findings(std::string& o, const std::vector<Finding>& findings) {
  for (const Finding& f : findings) {
    JsonWriter w;
    w.begin_object();
    w.key("ph").value("i").key("s").value("g").key("cat").value("tunebench_finding");
    w.key("name").value(f.message);
    w.key("pid").value(int64_t{0}).key("tid").value(int64_t{0});
    w.key("ts").raw([&] {
      std::string s;
      JsonWriter::append_us(s, f.evidence.t0);
      return s;
    }());
    w.key("args").begin_object();
    w.key("kind").value(f.id).key("knob").value(f.knob).key("value").value(f.value);
    w.key("share").value(f.share).key("max_speedup").value(f.max_speedup);
    w.key("evidence_end_us").raw([&] {
      std::string s;
      JsonWriter::append_us(s, f.evidence.t1);
      return s;
    }());
    w.end_object();
    w.end_object();
    o += w.take();
    o += ",\n";
  }
}

}  // namespace

std::string to_chrome_trace_json(const Trace& trace, const std::vector<Finding>& findings) {
  std::string o;
  o.reserve(trace.event_count() * 160 + 4096);
  write_head(o, trace.meta());
  write_track_names(o, trace);
  for (const Track& t : trace.tracks()) {
    for (const Event& e : t.events()) {
      if (e.kind == EventKind::Counter) write_counter(o, t, e);
      else write_event(o, trace, t, e);
    }
  }
  write_flows(o, trace);
  write_findings(o, findings);
  if (o.size() >= 2 && o[o.size() - 2] == ',') o.erase(o.size() - 2, 1);
  o += "]}\n";
  return o;
}

Status write_chrome_trace(const Trace& trace, const std::string& path, const std::vector<Finding>& findings) {
  const std::string json = to_chrome_trace_json(trace, findings);
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  if (gz) {
    gzFile f = gzopen(path.c_str(), "wb6");
    if (!f) return Error{"cannot write '" + path + "': " + std::strerror(errno)};
    size_t off = 0;
    while (off < json.size()) {
      const unsigned n = static_cast<unsigned>(std::min<size_t>(json.size() - off, 1u << 30));
      if (gzwrite(f, json.data() + off, n) != static_cast<int>(n)) {
        gzclose(f);
        return Error{"cannot write '" + path + "': gzip write failed"};
      }
      off += n;
    }
    if (gzclose(f) != Z_OK) return Error{"cannot write '" + path + "': gzip close failed"};
    return Status::Ok();
  }
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return Error{"cannot write '" + path + "': " + std::strerror(errno)};
  const bool ok = std::fwrite(json.data(), 1, json.size(), f) == json.size();
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) return Error{"cannot write '" + path + "': " + std::strerror(errno)};
  return Status::Ok();
}

}  // namespace tb::prof