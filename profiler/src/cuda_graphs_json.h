// AnalysisResult::cuda_graphs as JSON (private): analyze's "cuda_graphs" object (docs/analysis.md, "CUDA
// graphs"), left out when no graph ran and none was captured.
#pragma once

#include "json_writer.h"
#include "profiler/cuda_graphs.h"

namespace tb::prof {

inline void write_cuda_graphs(JsonWriter& w, const CudaGraphs& c) {
  if (c.empty()) return;
  auto us = [](int64_t ns) { return static_cast<double>(ns) / 1000.0; };
  w.key("cuda_graphs").begin_object();
  w.key("steps").value(static_cast<int64_t>(c.steps)).key("steps_us").value(us(c.base_ns));
  w.key("node_ids").value(c.node_ids);
  const CudaGraphCaptures& k = c.capture;
  w.key("capture").begin_object();
  w.key("captures").value(k.captures).key("instantiations").value(k.instantiations).key("updates").value(k.updates);
  w.key("elsewhere").value(k.elsewhere).key("steps_with").value(static_cast<int64_t>(k.steps_with));
  w.key("late_steps_with").value(static_cast<int64_t>(k.late_steps_with));
  w.key("host_us").value(us(k.host_ns));
  w.key("host_us_per_step").value(c.steps ? us(k.host_ns) / static_cast<double>(c.steps) : 0.0);
  w.key("share").value(c.base_ns > 0 ? static_cast<double>(k.host_ns) / static_cast<double>(c.base_ns) : 0.0);
  w.key("from_ranges").value(k.from_ranges);
  w.end_object();
  w.key("graphs").begin_array();
  for (const CudaGraphStat& g : c.graphs) {
    w.begin_object().key("graph").value(static_cast<int64_t>(g.graph));
    w.key("replays").value(g.replays).key("replays_elsewhere").value(g.replays_elsewhere);
    w.key("replays_per_step").value(g.replays_per_step).key("kernels_per_replay").value(static_cast<int64_t>(g.kernels_per_replay));
    w.key("busy_us").value(us(g.busy_ns)).key("median_busy_us").value(us(g.median_busy_ns));
    w.key("median_span_us").value(us(g.median_span_ns)).key("launch_us").value(us(g.launch_ns)).key("share").value(g.share);
    w.key("nodes").begin_array();
    for (const CudaGraphNodeStat& n : g.nodes) {
      w.begin_object().key("node").value(n.node).key("name").value(n.name).key("runs").value(n.runs);
      w.key("total_us").value(us(n.total_ns)).key("mean_us").value(us(n.mean_ns()));
      w.key("min_us").value(us(n.min_ns)).key("max_us").value(us(n.max_ns)).key("share").value(n.share);
      w.end_object();
    }
    w.end_array();
    w.key("replays_list").begin_array();
    for (const CudaGraphReplay& x : g.replay_list) {
      w.begin_object().key("correlation").value(x.correlation).key("step").value(x.step).key("measured").value(x.measured);
      w.key("launch_start_us").value(us(x.launch_start_ns));
      if (x.launch_ns >= 0) w.key("launch_call_us").value(us(x.launch_ns));
      else w.key("launch_call_us").null();
      w.key("gpu_start_us").value(us(x.gpu_start_ns)).key("gpu_end_us").value(us(x.gpu_end_ns));
      w.key("busy_us").value(us(x.busy_ns)).key("kernels").value(static_cast<int64_t>(x.kernels));
      w.key("copies").value(static_cast<int64_t>(x.copies));
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

}  // namespace tb::prof
