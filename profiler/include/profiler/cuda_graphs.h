// CUDA graphs as they ran (docs/analysis.md, "CUDA graphs"): one cudaGraphLaunch runs every kernel, copy and
// memset of a graph, all under the launch's correlation id; CUPTI (and Kineto, as "graph id" / "graph node id")
// names the graph and the node of each. Per graph: its replays, what each ran and how long, each node's time
// across the replays; and the captures and instantiations, which cost a whole step's host work each time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tb::prof {

// One node of a graph (a kernel; CUPTI's graph node id) over the measured replays.
struct CudaGraphNodeStat {
  uint64_t node = 0;
  std::string name;   // the kernel it runs
  uint64_t runs = 0;  // its kernels in the measured replays (one a replay, unless a replay was cut off)
  int64_t total_ns = 0, min_ns = 0, max_ns = 0;
  double share = 0;   // of the graph's kernel time over those replays
  int64_t mean_ns() const { return runs ? total_ns / int64_t(runs) : 0; }
};

// One replay: one launch call and the work it ran on the GPU.
struct CudaGraphReplay {
  uint64_t correlation = 0;  // the launch's correlation id, every piece of the replay's work carries it
  int64_t step = -1;         // the step it was launched in (StepBreakdown::index), -1 none
  bool measured = false;     // launched in a measured step (a trace without steps: in the window)
  int64_t launch_start_ns = 0;
  int64_t launch_ns = -1;    // host time in the launch call; -1: no launch recorded
  int64_t gpu_start_ns = 0, gpu_end_ns = 0;  // its first work's start, its last work's end
  int64_t busy_ns = 0;       // the union of its work: the GPU time the replay took
  uint32_t kernels = 0, copies = 0;  // copies: memcpy and memset nodes
};

struct CudaGraphStat {
  uint32_t graph = 0;  // CUPTI's graph id; 0: the kernels carry none (replays known by their launch calls only)
  uint64_t replays = 0;            // launched in the measured steps
  uint64_t replays_elsewhere = 0;  // launched outside them (warm-up, between steps)
  double replays_per_step = 0;     // replays / the measured steps (0 without steps)
  uint32_t kernels_per_replay = 0; // the median replay's
  int64_t busy_ns = 0;             // the measured replays' GPU time
  int64_t median_busy_ns = 0;      // a replay's GPU time, the median one
  int64_t median_span_ns = 0;      // a replay's first start to last end: less its busy time, the gaps inside it
  int64_t launch_ns = 0;           // host time in the measured replays' launch calls
  double share = 0;                // busy_ns / the steps' time (no steps: the window's traced time)
  std::vector<CudaGraphNodeStat> nodes;  // by total time, the largest first; empty without node ids
  std::vector<CudaGraphReplay> replay_list;  // every replay in time order (capped by AnalysisOptions::max_intervals)
};

// The calls that make a graph: a capture (cudaStreamBeginCapture .. cudaStreamEndCapture: the host runs the
// captured code once, recording it), an instantiation (cudaGraphInstantiate*), an update (cudaGraphExecUpdate).
// A trace without those calls (CPU-only, or recorded before the collector asked for them) counts TuneBench's own
// `cuda_graph_capture` ranges as captures.
struct CudaGraphCaptures {
  uint64_t captures = 0, instantiations = 0, updates = 0;  // started in the measured steps
  uint64_t elsewhere = 0;     // those outside the measured steps (the warm-up's first capture)
  int64_t host_ns = 0;        // host time in them inside the measured steps (the captures' spans, the calls)
  size_t steps_with = 0;      // measured steps holding at least one
  size_t late_steps_with = 0; // of them, in the later half of the measured steps (the captures go on)
  bool from_ranges = false;   // counted from TuneBench's capture ranges, not the runtime calls
};

struct CudaGraphs {
  size_t steps = 0;       // the measured steps (0: none, the window instead)
  int64_t base_ns = 0;    // their time (or the window's traced time): what `share` is of
  bool node_ids = false;  // some graph kernel carries a node id (else no node table: an older CUPTI or Kineto)
  std::vector<CudaGraphStat> graphs;  // by graph id. Empty: no graph ran
  CudaGraphCaptures capture;
  bool empty() const { return graphs.empty() && capture.captures + capture.instantiations + capture.updates +
                                                        capture.elsewhere == 0; }
};

}  // namespace tb::prof
