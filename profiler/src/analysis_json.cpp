// to_json(AnalysisResult): the fields docs/analysis.md lists plus the classes, steps and kernels. One function per
// part of the object, written in the object's order, so a part reads as the JSON it makes.
#include "cuda_graphs_json.h"
#include "finding_json.h"
#include "json_writer.h"
#include "profiler/analysis.h"
#include "profiler/time_classes.h"

namespace tb::prof {
namespace {
double us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

void write_intervals(JsonWriter& w, const std::vector<Interval>& v) {
  w.begin_array();
  for (const auto& i : v) w.begin_array().value(us(i.t0)).value(us(i.t1)).end_array();
  w.end_array();
}

// The trace it came from, what was analysed (scope, window) and the GPU's totals.
void write_header(JsonWriter& w, const AnalysisResult& r, const TraceMetadata* meta, double wl) {
  if (meta) {
    w.key("trace").begin_object();
    w.key("source_format").value(meta->source_format);
    w.key("path").value(meta->source_path);
    w.key("device").value(meta->device);
    w.key("collector_state").value(meta->collector_state);
    w.key("collector_reason").value(meta->collector_reason);
    w.key("dropped_records").value(static_cast<int64_t>(meta->dropped_records));
    w.end_object();
  }
  w.key("scope").begin_object();
  w.key("device").value(r.device).key("pid").value(r.pid);
  w.key("devices").begin_array();
  for (int64_t d : r.devices) w.value(d);
  w.end_array();
  w.key("trusted").value(r.trusted);
  w.end_object();
  w.key("window").begin_object();
  w.key("start_us").value(us(r.window.t0)).key("end_us").value(us(r.window.t1));
  w.key("duration_us").value(us(r.window.length()));
  w.key("untraced_us").value(us(r.untraced_ns));  // a sampled trace: between its chunks, not analysed
  w.key("from_steps").value(r.window_from_steps);
  w.end_object();
  w.key("gpu").begin_object();
  w.key("present").value(r.has_gpu);
  w.key("busy_us").value(us(r.gpu_busy_ns)).key("idle_us").value(us(r.gpu_idle_ns));
  w.key("busy_share").value(r.gpu_busy_ns / wl);
  w.key("compute_us").value(us(r.compute_ns));
  w.key("idle_intervals").value(static_cast<int64_t>(r.idle_interval_count));
  w.key("other_idle_us").value(us(r.other_idle_ns));
  w.key("memory_exposed_us").value(us(r.memory_exposed_ns));
  w.key("launches").value(static_cast<int64_t>(r.launches));
  w.end_object();
}

// The idle time by cause, the window by class and communication's overlap.
void write_classes(JsonWriter& w, const AnalysisResult& r) {
  w.key("idle").begin_object();
  const std::pair<const char*, int64_t> classes[] = {
      {"loader_stall_us", r.loader_stall_ns}, {"sync_us", r.sync_idle_ns},          {"runtime_us", r.runtime_idle_ns},
      {"lead_in_us", r.lead_in_ns},           {"tail_us", r.tail_ns},               {"launch_gap_us", r.launch_gap_ns},
      {"launch_overhead_us", r.launch_overhead_ns}, {"event_wait_us", r.event_wait_ns}, {"other_us", r.other_idle_ns},
      {"profiler_us", r.profiler_ns}};
  for (const auto& [k, v] : classes) w.key(k).value(us(v));
  // The share of the idle time no named cause explains (0 when there is no idle time).
  w.key("other_share_of_idle").value(r.gpu_idle_ns > 0 ? static_cast<double>(r.other_idle_ns) / r.gpu_idle_ns : 0.0);
  w.end_object();
  // The window by class in display order, the GUI's bar (profiler/time_classes.h): they sum to the traced window.
  w.key("time_classes").begin_array();
  for (const auto& c : time_classes(r)) {
    w.begin_object().key("id").value(c.id).key("label").value(c.label);
    w.key("us").value(us(c.ns)).key("busy").value(c.busy).end_object();
  }
  w.end_array();
  w.key("communication").begin_object();
  w.key("total_us").value(us(r.comm_ns)).key("exposed_us").value(us(r.comm_exposed_ns));
  if (r.comm_overlap >= 0) w.key("overlap").value(r.comm_overlap);
  else w.key("overlap").null();
  w.end_object();
}

// Each cause with its count, share and intervals; memory and the profiler's own time beside them.
// A class of time's object opened with its total, its count and its share of the window (the caller adds what
// is its own and closes it).
void open_total(JsonWriter& w, const char* key, int64_t ns, uint32_t count, double wl) {
  w.key(key).begin_object();
  w.key("total_us").value(us(ns)).key("count").value(static_cast<int64_t>(count));
  w.key("share").value(ns / wl);
}

void write_causes(JsonWriter& w, const AnalysisResult& r, double wl) {
  open_total(w, "loader_stall", r.loader_stall_ns, r.loader_stall_count, wl);
  w.key("intervals_us");
  write_intervals(w, r.loader_stall_intervals);
  w.end_object();
  // Memory beside time: the peaks from the trace's memory counters (bytes; -1 unknown).
  w.key("memory").begin_object();
  w.key("present").value(r.memory.present);
  w.key("device_allocated_peak").value(r.memory.device_allocated_peak);
  w.key("device_reserved_peak").value(r.memory.device_reserved_peak);
  w.key("device_step_peak").value(r.memory.device_step_peak);
  w.key("peak_step").value(r.memory.peak_step);
  w.key("device_total").value(r.memory.device_total);
  w.key("headroom").value(r.memory.headroom);
  w.key("alloc_retries").value(r.memory.alloc_retries);
  w.key("host_rss_peak").value(r.memory.host_rss_peak);
  w.key("host_allocated_peak").value(r.memory.host_allocated_peak);
  w.end_object();
  // The profiler's own time (TuneBench's pauses, CUPTI's overhead records): its own class.
  open_total(w, "profiler", r.profiler_ns, r.profiler_count, wl);
  // Of the whole run, a sampled trace's untraced steps included: what watching cost the program.
  w.key("share_of_run").value(r.window.length() > 0 ? r.profiler_ns / static_cast<double>(r.window.length()) : 0.0);
  w.key("longest_us").value(us(r.profiler_longest_ns));
  w.key("intervals_us");
  write_intervals(w, r.profiler_intervals);
  w.end_object();
  open_total(w, "outside_training", r.outside_training_ns, r.outside_training_count, wl);
  w.end_object();
  w.key("launch_gap").begin_object();
  w.key("total_us").value(us(r.launch_gap_ns)).key("count").value(static_cast<int64_t>(r.launch_gap_count));
  w.key("min_gap_us").value(us(r.min_gap_ns));
  w.key("share").value(r.launch_gap_ns / wl);
  // Of total_us: the launching thread recorded nothing (host time not recorded).
  w.key("unrecorded_us").value(us(r.launch_gap_unrecorded_ns));
  w.key("unrecorded_count").value(static_cast<int64_t>(r.launch_gap_unrecorded_count));
  w.key("intervals_us");
  write_intervals(w, r.launch_gap_intervals);
  w.end_object();
  open_total(w, "event_wait", r.event_wait_ns, r.event_wait_count, wl);
  w.key("waits").begin_array();
  for (const auto& e : r.event_waits) {
    w.begin_object().key("start_us").value(us(e.idle.t0)).key("dur_us").value(us(e.idle.length()));
    w.key("stream").value(e.stream).key("after_stream").value(e.after_stream);
    w.key("wait").value(e.wait).key("wait_us").value(us(e.wait_ns));
    if (e.event_record >= 0) w.key("event_record_correlation").value(e.event_record);
    else w.key("event_record_correlation").null();
    w.key("work").value(e.work).end_object();
  }
  w.end_array();
  w.end_object();
  w.key("sync").begin_object();
  w.key("count").value(static_cast<int64_t>(r.sync_count)).key("total_us").value(us(r.sync_ns));
  w.key("share").value(r.sync_ns / wl);
  w.key("idle_us").value(us(r.sync_idle_ns));
  w.key("points").begin_array();
  for (const auto& s : r.sync_points) {
    w.begin_object().key("name").value(s.name).key("start_us").value(us(s.interval.t0));
    w.key("dur_us").value(us(s.interval.length())).end_object();
  }
  w.end_array();
  w.end_object();
}

void write_steps(JsonWriter& w, const AnalysisResult& r) {
  w.key("steps").begin_object();
  w.key("count").value(static_cast<int64_t>(r.steps.size())).key("median_us").value(us(r.step_median_ns));
  w.key("inferred").value(r.steps_inferred);
  w.key("warmup").value(static_cast<int64_t>(r.warmup_steps)).key("warmup_us").value(us(r.warmup_ns));
  w.key("items").begin_array();
  for (const auto& s : r.steps) {
    w.begin_object();
    w.key("index").value(s.index).key("start_us").value(us(s.start_ns)).key("duration_us").value(us(s.duration_ns()));
    w.key("data_wait_us").value(us(s.data_wait_ns)).key("h2d_us").value(us(s.h2d_ns));
    w.key("forward_us").value(us(s.forward_ns)).key("backward_us").value(us(s.backward_ns));
    w.key("optimizer_us").value(us(s.optimizer_ns));
    if (s.outside_after_ns > 0) w.key("outside_after_us").value(us(s.outside_after_ns));
    w.key("gpu_start_us").value(us(s.gpu_start_ns)).key("gpu_end_us").value(us(s.gpu_end_ns));
    w.key("gpu_busy_us").value(us(s.gpu_busy_ns)).key("compute_us").value(us(s.compute_ns));
    w.key("comm_us").value(us(s.comm_ns)).key("comm_exposed_us").value(us(s.comm_exposed_ns));
    w.key("gpu_idle_us").value(us(s.gpu_idle_ns)).key("loader_stall_us").value(us(s.loader_stall_ns));
    w.key("sync_idle_us").value(us(s.sync_idle_ns)).key("runtime_idle_us").value(us(s.runtime_idle_ns));
    w.key("edge_idle_us").value(us(s.edge_idle_ns));
    w.key("launch_gap_us").value(us(s.launch_gap_ns)).key("launch_overhead_us").value(us(s.launch_overhead_ns));
    w.key("event_wait_us").value(us(s.event_wait_ns));
    w.key("other_idle_us").value(us(s.other_idle_ns));
    w.key("profiler_us").value(us(s.profiler_ns));
    w.key("memory_peak_bytes").value(s.memory_peak_bytes);
    w.key("sync_us").value(us(s.sync_ns)).key("sync_count").value(static_cast<int64_t>(s.sync_count));
    w.key("kernel_count").value(static_cast<int64_t>(s.kernel_count));
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

// The top kernels, the launch outliers and the top ops.
void write_kernels_and_ops(JsonWriter& w, const AnalysisResult& r) {
  w.key("kernels").begin_object();
  w.key("count").value(static_cast<int64_t>(r.kernel_count));
  w.key("memcpy_count").value(static_cast<int64_t>(r.memcpy_count));
  w.key("memset_count").value(static_cast<int64_t>(r.memset_count));
  if (r.tensor_core_share >= 0) w.key("tensor_core_share").value(r.tensor_core_share);
  else w.key("tensor_core_share").null();
  w.key("matmul_share").value(r.matmul_share);
  w.key("top").begin_array();
  for (const auto& k : r.top_kernels) {
    w.begin_object().key("name").value(k.name).key("count").value(static_cast<int64_t>(k.count));
    w.key("total_us").value(us(k.total_ns)).key("min_us").value(us(k.min_ns)).key("max_us").value(us(k.max_ns));
    w.key("share_of_kernel_time").value(k.share_of_kernel_time).key("tensor_core").value(k.tensor_core);
    w.key("communication").value(k.communication).key("launched").value(static_cast<int64_t>(k.launched));
    w.key("launch_mean_us").value(us(k.launch_mean_ns)).key("delay_mean_us").value(us(k.delay_mean_ns));
    w.key("delay_max_us").value(us(k.delay_max_ns)).end_object();
  }
  w.end_array();
  w.end_object();
  w.key("launches").begin_object();
  w.key("median_call_us").value(us(r.launch_median_ns)).key("median_delay_us").value(us(r.delay_median_ns));
  w.key("outliers").begin_array();
  for (const auto& o : r.launch_outliers) {
    w.begin_object().key("kernel").value(o.kernel).key("launch_start_us").value(us(o.launch_start_ns));
    w.key("launch_us").value(us(o.launch_ns)).key("delay_us").value(us(o.delay_ns));
    w.key("kind").value(o.slow_call ? "slow_call" : "late_start").end_object();
  }
  w.end_array().end_object();
  w.key("ops").begin_object().key("top").begin_array();
  for (const auto& o : r.top_ops) {
    w.begin_object().key("name").value(o.name).key("count").value(static_cast<int64_t>(o.count));
    w.key("total_us").value(us(o.total_ns)).key("self_us").value(us(o.self_ns)).key("runtime").value(o.runtime);
    w.end_object();
  }
  w.end_array().end_object();
}

// Inductor's kernels as they ran, the top ones with their ops and user lines: left out when none ran.
void write_compiled_kernels(JsonWriter& w, const CompiledKernels& k) {
  if (k.rows.empty()) return;
  w.key("compiled_kernels").begin_object();
  w.key("steps").value(static_cast<int64_t>(k.steps)).key("steps_us").value(us(k.base_ns));
  w.key("kernels").value(static_cast<int64_t>(k.kernels)).key("calls").value(static_cast<int64_t>(k.calls));
  w.key("total_us").value(us(k.total_ns)).key("share").value(k.share);
  w.key("top").begin_array();
  for (const auto& x : k.rows) {
    w.begin_object().key("name").value(x.name).key("kernel").value(x.kernel).key("gpu").value(x.gpu);
    w.key("calls").value(static_cast<int64_t>(x.calls));
    w.key("calls_elsewhere").value(static_cast<int64_t>(x.calls_elsewhere));
    w.key("calls_per_step").value(x.calls_per_step).key("total_us").value(us(x.total_ns));
    w.key("mean_us").value(us(x.mean_ns())).key("share").value(x.share);
    w.key("ops").begin_array();
    for (const auto& op : x.ops) w.value(op);
    w.end_array().key("ops_from").value(x.ops_from_name ? "name" : x.ops.empty() ? "" : "code");
    w.key("lines").begin_array();
    for (const auto& l : x.lines)
      w.begin_object().key("file").value(l.file).key("line").value(l.line).key("code").value(l.code).end_object();
    w.end_array().end_object();
  }
  w.end_array().end_object();
}

// torch.compile's regions as they ran: left out when none ran.
void write_compiled_regions(JsonWriter& w, const CompiledRegions& c) {
  write_compiled_kernels(w, c.kernels);
  if (c.rows.empty()) return;
  w.key("compiled_regions").begin_object();
  w.key("steps").value(static_cast<int64_t>(c.steps)).key("steps_us").value(us(c.base_ns));
  w.key("regions").begin_array();
  for (const auto& x : c.rows) {
    w.begin_object().key("id").value(x.id).key("frame").value(x.frame).key("compile").value(x.compile);
    w.key("label").value(x.label).key("backward").value(x.backward);
    w.key("runs").value(static_cast<int64_t>(x.runs)).key("runs_elsewhere").value(static_cast<int64_t>(x.runs_elsewhere));
    w.key("runs_per_step").value(x.runs_per_step).key("total_us").value(us(x.total_ns));
    w.key("compile_us").value(us(x.compile_ns));
    w.key("mean_us").value(us(x.mean_ns())).key("median_us").value(us(x.median_ns)).key("share").value(x.share);
    w.end_object();
  }
  w.end_array().end_object();
}

}  // namespace

std::string to_json(const AnalysisResult& r, const TraceMetadata* meta) {
  JsonWriter w;
  const double wl = r.traced_ns() > 0 ? static_cast<double>(r.traced_ns()) : 1.0;
  w.begin_object();
  w.key("version").value(int64_t{2});
  write_header(w, r, meta, wl);
  write_classes(w, r);
  write_causes(w, r, wl);
  write_steps(w, r);
  write_kernels_and_ops(w, r);
  write_compiled_regions(w, r.compiled_regions);
  write_cuda_graphs(w, r.cuda_graphs);
  write_findings_and_notes(w, r.findings, r.notes);
  w.end_object();
  return w.take();
}

}  // namespace tb::prof
