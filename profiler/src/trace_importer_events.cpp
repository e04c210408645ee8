// The Importer's handlers (trace_importer.h): what each phase of event, and each category of complete event,
// becomes in the Trace model. Importer::event (trace_importer.cpp) reads the fields and picks the handler.
#include <algorithm>
#include <string>

#include "profiler/cupti_collector.h"
#include "profiler/range_names.h"
#include "profiler/trace_io.h"
#include "trace_importer.h"

namespace tb::prof::import {
namespace {

bool parse_event_kind(std::string_view s, EventKind& k) {
  for (int i = 0; i < kEventKindCount; ++i) {
    if (s == to_string(static_cast<EventKind>(i))) {
      k = static_cast<EventKind>(i);
      return true;
    }
  }
  return false;
}

MemcpyKind memcpy_kind_from_name(std::string_view n) {
  if (n.find("HtoD") != std::string_view::npos) return MemcpyKind::HtoD;
  if (n.find("DtoH") != std::string_view::npos) return MemcpyKind::DtoH;
  if (n.find("DtoD") != std::string_view::npos) return MemcpyKind::DtoD;
  if (n.find("HtoH") != std::string_view::npos) return MemcpyKind::HtoH;
  if (n.find("PtoP") != std::string_view::npos) return MemcpyKind::PtoP;
  return MemcpyKind::Unknown;
}

}  // namespace

void Importer::metadata(const Fields& f) {
  if (f.name == "process_name") process_names[f.pid] = std::string(f.meta_name);
  else if (f.name == "process_labels") process_labels[f.pid] = std::string(f.labels);
  else if (f.name == "process_sort_index" && f.has_sort) process_sort[f.pid] = f.sort_index;
  else if (f.name == "thread_name") thread_names[{f.pid, f.tid}] = std::string(f.meta_name);
  else if (f.name == "thread_sort_index" && f.has_sort) thread_sort[{f.pid, f.tid}] = f.sort_index;
}

Event Importer::base_event(const Fields& f) {
  Event e;
  e.start_ns = f.ts;
  e.end_ns = f.ts;
  e.name = trace.intern(f.name);
  e.correlation = static_cast<uint64_t>(f.correlation);
  e.arg = f.arg;
  if (!f.detail.empty()) {
    e.detail = trace.intern(f.detail);
  } else if (!f.grid.empty() || !f.block.empty()) {
    e.detail = trace.intern("grid " + f.grid + " block " + f.block);
  } else if (!f.shapes.empty()) {
    e.detail = trace.intern(f.shapes);
  }
  return e;
}

void Importer::begin(const Fields& f, Event& e) {
  e.kind = EventKind::Range;
  open_b[{f.pid, f.tid}].push_back(e);
}

void Importer::end(const Fields& f) {
  auto it = open_b.find({f.pid, f.tid});
  if (it == open_b.end() || it->second.empty()) return;  // unmatched end: ignored
  Event b = it->second.back();
  it->second.pop_back();
  b.end_ns = std::max(b.start_ns, f.ts);
  trace.add_event(track(TrackKind::CpuThread, f.pid, f.tid), b);
}

void Importer::instant(const Fields& f, Event& e) {
  if (f.name == "[memory]") {
    memory_sample(f, e);
    return;
  }
  e.kind = EventKind::Instant;
  // Global-scope instants ("s": "g", Kineto's "Iteration Start" / "Record Window End") mark the whole
  // trace, not a thread: one markers track instead of an empty row per made-up pid/tid.
  if (f.scope == "g") {
    const int64_t markers = string_id(kGlobalMarkersTrack);
    trace.add_event(track(TrackKind::CpuThread, markers, markers), e);
  } else {
    trace.add_event(track(TrackKind::CpuThread, f.pid, f.tid), e);
  }
}

// torch.profiler's profile_memory=True: one instant per allocation and free, with the allocator's totals after
// it. Kept as the memory counters TuneBench's own traces carry (allocated and reserved on the device,
// allocated on the host), not as thousands of markers.
void Importer::memory_sample(const Fields& f, const Event& e) {
  double device_type = -1, allocated = -1, reserved = -1;
  for (const auto& [k, val] : counter_scratch_) {
    if (k == "Device Type") device_type = val;
    else if (k == "Total Allocated") allocated = val;
    else if (k == "Total Reserved") reserved = val;
  }
  const bool cuda = device_type == 1;
  auto sample = [&](const char* cname, double value) {
    if (value >= 0) add_counter(f.pid, cname, e, value);
  };
  sample(cuda ? names::kDeviceAllocated : names::kHostAllocated, allocated);
  if (cuda) sample(names::kDeviceReserved, reserved);
}

void Importer::counter(const Fields& f, const Event& e) {
  for (auto& [k, val] : counter_scratch_) {
    add_counter(f.pid, counter_scratch_.size() == 1 && k == "value" ? std::string(f.name)
                                                                    : std::string(f.name) + "." + std::string(k),
                e, val);
  }
}

// A complete event: its kind by category (or our tb_kind), on a GPU stream or a CPU thread.
Status Importer::complete(const Fields& f, Cat c, Event& e) {
  const int64_t dur = f.has_dur ? f.dur : 0;
  if (f.ts > kMaxAbsNs - dur) return fail(where(f.index) + ": ts + dur out of range", f.offset);
  e.end_ns = f.ts + dur;
  bool gpu = false;
  switch (c) {
    case Cat::Kernel: e.kind = EventKind::Kernel; gpu = true; break;
    case Cat::Memcpy: gpu_copy(f, e, EventKind::Memcpy); gpu = true; break;
    case Cat::Memset: gpu_copy(f, e, EventKind::Memset); gpu = true; break;
    case Cat::Runtime: e.kind = EventKind::Runtime; break;
    case Cat::Driver: e.kind = EventKind::Driver; break;
    case Cat::Sync: stream_wait(f, e); gpu = true; break;
    // Kineto's gpu_user_annotation: a range on the GPU's row, never activity, correlated to nothing.
    case Cat::GpuAnnotation: e.kind = EventKind::Range; gpu = true; e.correlation = 0; break;
    case Cat::Profiler: e.kind = EventKind::Overhead; break;
    default: e.kind = EventKind::Range; break;  // cpu_op, python_function, user_annotation, ...
  }
  if (!f.tb_kind.empty()) {
    EventKind k;
    if (parse_event_kind(f.tb_kind, k)) e.kind = k;
  }
  if ((e.kind == EventKind::Runtime || e.kind == EventKind::Driver) && is_blocking_sync_api(f.name))
    e.flags |= kFlagBlockingSync;
  if (e.kind == EventKind::Instant || e.kind == EventKind::Counter) e.end_ns = e.start_ns;
  // A CUDA graph's work (Kineto writes "graph id": 0 for the rest): the graph, and a kernel's node in its arg.
  if (is_gpu_activity(e.kind) && f.graph > 0) {
    e.graph = static_cast<uint32_t>(f.graph);
    if (e.kind == EventKind::Kernel) e.arg = f.graph_node > 0 ? f.graph_node : kNoArg;
  }
  place(f, e, gpu);
  return Status::Ok();
}

void Importer::gpu_copy(const Fields& f, Event& e, EventKind kind) {
  e.kind = kind;
  if (kind == EventKind::Memcpy) e.flags = static_cast<uint16_t>(memcpy_kind_from_name(f.name));
  e.arg = f.bytes;
}

// Kineto's cuda_sync rows; a "Stream Wait Event" says the cudaEventRecord it waits on (its correlation id) and
// that event's stream.
void Importer::stream_wait(const Fields& f, Event& e) {
  e.kind = EventKind::Sync;
  e.correlation = 0;
  if (f.wait_record >= 0) e.arg = f.wait_record;
  if (f.wait_stream >= 0 && e.detail == kNoName)
    e.detail = trace.intern("waits on stream " + std::to_string(f.wait_stream) + ", event recorded by correlation " +
                            std::to_string(f.wait_record));
}

void Importer::place(const Fields& f, const Event& e, bool gpu) {
  if (gpu || is_gpu_activity(e.kind)) {
    const int64_t dev = f.device != INT64_MIN ? f.device : f.pid;
    // CUPTI's "no stream" (device-wide sync) arrives as uint32 -1 in args.stream and -1 in tid.
    const int64_t st = f.stream == INT64_MIN ? f.tid : f.stream == 0xFFFFFFFFLL ? -1 : f.stream;
    trace.add_event(track(TrackKind::GpuStream, dev, st), e);
  } else {
    trace.add_event(track(TrackKind::CpuThread, f.pid, f.tid), e);
  }
}

}  // namespace tb::prof::import
