// CUDA graphs as they ran (docs/analysis.md, "CUDA graphs"). A graph's replay is one launch call on the host and
// all of the graph's work on the GPU, every piece of it under the launch's correlation id; CUPTI names the graph
// and the node of each piece (Kineto writes them as "graph id" and "graph node id"), so the replays of one graph,
// and one node across its replays, can be told apart. Graph kernels without ids (an older CUPTI or Kineto) are
// still a replay of their launch: counted as graph 0, without nodes.
// A graph captured once costs its capture once; captured (or instantiated) again every step, the host runs the
// whole step's code once more each time, recording it, and the graph saves nothing: the recapture finding.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <unordered_map>
#include <vector>

#include "analysis_findings.h"
#include "analysis_graphs.h"
#include "analysis_intervals.h"
#include "profiler/range_names.h"

namespace tb::prof::detail {

namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// The measured steps (the warm-up left out) in time order with their numbers; without steps, the window is one
// that carries no number.
struct Steps {
  struct Span {
    Interval t;
    int64_t index;
  };
  std::vector<Span> spans;
  size_t count = 0;
  int64_t base_ns = 0;

  explicit Steps(const AnalysisResult& r) {
    for (size_t i = std::min(r.warmup_steps, r.steps.size()); i < r.steps.size(); ++i) {
      spans.push_back({{r.steps[i].start_ns, r.steps[i].end_ns}, r.steps[i].index});
      base_ns += r.steps[i].duration_ns();
    }
    count = spans.size();
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.t.t0 < b.t.t0; });
    if (spans.empty()) {
      spans.push_back({r.window, -1});
      base_ns = r.traced_ns();
    }
  }
  // The span holding t (its position), -1 none.
  int64_t at(int64_t t) const {
    auto it = std::upper_bound(spans.begin(), spans.end(), t, [](int64_t x, const Span& s) { return x < s.t.t0; });
    if (it == spans.begin() || t >= std::prev(it)->t.t1) return -1;
    return std::prev(it) - spans.begin();
  }
};

// One piece of a replay's work.
struct Piece {
  int64_t start, end;
  uint64_t node;  // 0: none (a copy, a memset, or no node ids)
  NameId name;
  bool kernel;
};

struct Building {
  uint32_t graph;
  uint64_t correlation;
  const Event* launch = nullptr;
  std::vector<Piece> pieces;
};

int64_t median(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  auto mid = v.begin() + std::ptrdiff_t(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

// Every graph's work on the analysed device, by replay: (graph, correlation) in the order first seen.
std::vector<Building> collect_replays(const Trace& trace, const Scope& sc, bool& ids_missing) {
  std::vector<Building> out;
  std::map<std::pair<uint32_t, uint64_t>, size_t> slot;
  const std::vector<uint8_t> launches = graph_launch_names(trace);
  for (uint32_t ti = 0; ti < trace.tracks().size(); ++ti) {
    const Track& t = trace.track(ti);
    if (t.kind() != TrackKind::GpuStream || t.pid() != sc.device) continue;
    const auto& ev = t.events();
    for (uint32_t i = 0; i < ev.size(); ++i) {
      const Event& e = ev[i];
      if (!is_gpu_activity(e.kind) || e.correlation == 0 || (!e.graph && launches.empty())) continue;
      const Flow* f = trace.flow_to(ti, i);
      const Event* launch = f ? &trace.track(f->src_track).events()[f->src_event] : nullptr;
      if (!e.graph) {
        if (!launch || !is_graph_launch(launches, launch->name)) continue;
        ids_missing = true;
      }
      auto [s, fresh] = slot.try_emplace(std::make_pair(e.graph, e.correlation), out.size());
      if (fresh) out.push_back({e.graph, e.correlation, launch, {}});
      Building& b = out[s->second];
      if (!b.launch) b.launch = launch;
      b.pieces.push_back({e.start_ns, e.end_ns, e.graph_node(), e.name, e.kind == EventKind::Kernel});
    }
  }
  return out;
}

CudaGraphReplay replay_of(Building& b, const Steps& steps) {
  CudaGraphReplay x;
  x.correlation = b.correlation;
  std::sort(b.pieces.begin(), b.pieces.end(), [](const Piece& p, const Piece& q) { return p.start < q.start; });
  x.gpu_start_ns = b.pieces.front().start;
  int64_t cur0 = b.pieces.front().start, cur1 = b.pieces.front().start;
  for (const Piece& p : b.pieces) {
    x.gpu_end_ns = std::max(x.gpu_end_ns, p.end);
    (p.kernel ? x.kernels : x.copies) += 1;
    if (p.start > cur1) x.busy_ns += cur1 - cur0, cur0 = p.start;  // the pieces' union, in start order
    cur1 = std::max(cur1, p.end);
  }
  x.busy_ns += cur1 - cur0;
  x.launch_start_ns = b.launch ? b.launch->start_ns : x.gpu_start_ns;
  if (b.launch) x.launch_ns = b.launch->duration_ns();
  // A replay belongs to the step that launched it, as a step's GPU work does; without steps, to the window its
  // work ran in (the window starts at the first GPU work, after the first launch call began).
  const int64_t at = steps.count ? steps.at(x.launch_start_ns) : steps.at(x.gpu_start_ns);
  x.measured = at >= 0;
  if (at >= 0) x.step = steps.spans[size_t(at)].index;
  return x;
}

// Per graph: its replays (in time order), and its nodes over the measured ones.
void add_graphs(std::vector<Building>& built, const Trace& trace, const Steps& steps, const AnalysisOptions& opt,
                AnalysisResult& r) {
  CudaGraphs& out = r.cuda_graphs;
  std::map<uint32_t, std::vector<size_t>> by_graph;
  for (size_t i = 0; i < built.size(); ++i) by_graph[built[i].graph].push_back(i);
  size_t kept = 0;
  for (auto& [graph, members] : by_graph) {
    CudaGraphStat g;
    g.graph = graph;
    std::vector<CudaGraphReplay> replays;
    std::map<uint64_t, CudaGraphNodeStat> nodes;
    std::vector<int64_t> busy, span, kernels;
    int64_t kernel_ns = 0;
    for (size_t m : members) {
      Building& b = built[m];
      CudaGraphReplay x = replay_of(b, steps);
      if (!x.measured) {
        ++g.replays_elsewhere;
      } else {
        ++g.replays;
        g.busy_ns += x.busy_ns;
        if (x.launch_ns > 0) g.launch_ns += x.launch_ns;
        busy.push_back(x.busy_ns);
        span.push_back(x.gpu_end_ns - x.gpu_start_ns);
        kernels.push_back(x.kernels);
        for (const Piece& p : b.pieces) {
          if (!p.kernel) continue;
          kernel_ns += p.end - p.start;
          if (!p.node) continue;
          out.node_ids = true;
          auto [it, fresh] = nodes.try_emplace(p.node);
          CudaGraphNodeStat& n = it->second;
          const int64_t d = p.end - p.start;
          if (fresh) n.node = p.node, n.name = std::string(trace.name(p.name)), n.min_ns = d;
          ++n.runs;
          n.total_ns += d;
          n.min_ns = std::min(n.min_ns, d);
          n.max_ns = std::max(n.max_ns, d);
        }
      }
      replays.push_back(x);
    }
    std::sort(replays.begin(), replays.end(),
              [](const CudaGraphReplay& a, const CudaGraphReplay& b) { return a.launch_start_ns < b.launch_start_ns; });
    if (kept + replays.size() > opt.max_intervals) replays.resize(opt.max_intervals - std::min(kept, opt.max_intervals));
    kept += replays.size();
    g.replay_list = std::move(replays);
    g.replays_per_step = steps.count ? double(g.replays) / double(steps.count) : 0;
    g.kernels_per_replay = uint32_t(median(kernels));
    g.median_busy_ns = median(busy);
    g.median_span_ns = median(span);
    g.share = steps.base_ns > 0 ? double(g.busy_ns) / double(steps.base_ns) : 0;
    for (auto& [id, n] : nodes) {
      n.share = kernel_ns > 0 ? double(n.total_ns) / double(kernel_ns) : 0;
      g.nodes.push_back(std::move(n));
    }
    std::sort(g.nodes.begin(), g.nodes.end(), [](const CudaGraphNodeStat& a, const CudaGraphNodeStat& b) {
      return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.node < b.node;
    });
    out.graphs.push_back(std::move(g));
  }
}

// The captures, instantiations and updates of the analysed process: each at its start, and the host time they
// took (a capture from its begin to its end call: the captured code ran on the host meanwhile).
struct CaptureMarks {
  std::vector<std::pair<int64_t, GraphCall>> at;
  iv::Intervals spans;
  bool from_ranges = false;
};

CaptureMarks capture_calls(const Trace& trace, const Scope& sc) {
  CaptureMarks m;
  // What each name of the trace does to a graph, looked at once; most traces name no such call, nor a capture
  // range: nothing to scan.
  std::vector<int8_t> call_of(trace.name_count(), int8_t(GraphCall::None));
  bool calls = false;
  NameId range = kNoName;
  for (NameId n = 0; n < call_of.size(); ++n) {
    call_of[n] = int8_t(graph_call(trace.name(n)));
    calls = calls || call_of[n] != int8_t(GraphCall::None);
    if (trace.name(n) == names::kGraphCapture) range = n;
  }
  if (!calls && range == kNoName) return m;
  for (const Track& t : trace.tracks()) {
    if (!calls) break;
    if (!in_scope(t, sc)) continue;
    int64_t begun = INT64_MIN;
    uint64_t runtime_corr = 0;  // a runtime call's own driver call carries its correlation id: one call
    for (const Event& e : t.events()) {
      if (e.kind != EventKind::Runtime && e.kind != EventKind::Driver) continue;
      if (e.name >= call_of.size()) continue;
      const auto call = GraphCall(call_of[e.name]);
      if (call == GraphCall::None) continue;
      if (e.kind == EventKind::Driver && e.correlation && e.correlation == runtime_corr) continue;
      if (e.kind == EventKind::Runtime) runtime_corr = e.correlation;
      if (call == GraphCall::BeginCapture) {
        if (begun == INT64_MIN) begun = e.start_ns;
        continue;
      }
      if (call == GraphCall::EndCapture) {
        const int64_t from = begun == INT64_MIN ? e.start_ns : begun;
        m.at.push_back({from, call});
        m.spans.push_back({from, e.end_ns});
        begun = INT64_MIN;
        continue;
      }
      m.at.push_back({e.start_ns, call});
      m.spans.push_back({e.start_ns, e.end_ns});
    }
    if (begun != INT64_MIN) m.at.push_back({begun, GraphCall::EndCapture});  // a capture the trace cut off
  }
  if (!m.at.empty() || range == kNoName) return m;
  // No such calls recorded: TuneBench's engine marks its captures itself.
  m.from_ranges = true;
  for (const Track& t : trace.tracks()) {
    if (!in_scope(t, sc)) continue;
    for (const Event& e : t.events())
      if (e.kind == EventKind::Range && e.name == range) {
        m.at.push_back({e.start_ns, GraphCall::BeginCapture});
        m.spans.push_back({e.start_ns, e.end_ns});
      }
  }
  return m;
}

void add_captures(const Trace& trace, const Scope& sc, const Steps& steps, AnalysisResult& r, Interval& evidence) {
  CaptureMarks m = capture_calls(trace, sc);
  CudaGraphCaptures& c = r.cuda_graphs.capture;
  std::vector<bool> with(steps.spans.size(), false);
  c.from_ranges = m.from_ranges;
  for (const auto& [t, call] : m.at) {
    const int64_t s = steps.at(t);
    if (s < 0) {
      ++c.elsewhere;
      continue;
    }
    with[size_t(s)] = true;
    if (call == GraphCall::Instantiate) ++c.instantiations;
    else if (call == GraphCall::Update) ++c.updates;
    else ++c.captures;
  }
  const iv::Intervals merged = iv::merge(std::move(m.spans));
  for (size_t i = 0; i < steps.spans.size(); ++i) {
    c.steps_with += with[i] ? 1 : 0;
    c.late_steps_with += with[i] && i >= steps.spans.size() / 2 ? 1 : 0;
    c.host_ns += iv::measure(merged, steps.spans[i].t.t0, steps.spans[i].t.t1);
    iv::Intervals in;
    iv::clip(merged, steps.spans[i].t.t0, steps.spans[i].t.t1, in);
    const Interval big = iv::largest(in);
    if (big.length() > evidence.length()) evidence = big;
  }
  if (steps.count == 0) c.steps_with = c.late_steps_with = 0;  // the window is no step
}

// Most measured steps captured or instantiated a graph, the later half too: each step paid its whole host code
// once more. Captures that stop early are a warm-up settling (torch.compile's cudagraph trees record a graph on its
// first calls), not a recapture.
void add_recapture_finding(const Trace& trace, const Steps& steps, const AnalysisOptions& opt, Interval evidence,
                           AnalysisResult& r) {
  const CudaGraphCaptures& c = r.cuda_graphs.capture;
  const size_t late = steps.count - steps.count / 2;
  if (steps.count < 2 || c.steps_with * 2 <= steps.count || c.late_steps_with * 2 <= late || steps.base_ns <= 0)
    return;
  const double share = std::min(1.0, double(c.host_ns) / double(steps.base_ns));
  const double n = double(steps.count);
  std::string made = std::to_string(c.captures) + " capture" + (c.captures == 1 ? "" : "s");
  if (c.instantiations) made += ", " + std::to_string(c.instantiations) + " instantiation" + (c.instantiations == 1 ? "" : "s");
  if (c.updates) made += ", " + std::to_string(c.updates) + " update" + (c.updates == 1 ? "" : "s");
  int64_t replay_ns = 0;
  for (const CudaGraphStat& g : r.cuda_graphs.graphs) replay_ns += g.busy_ns;
  std::string replays;
  if (replay_ns > 0) replays = ", while the replays ran " + fmt_ms(double(replay_ns) / n) + " a step on the GPU";
  // Under torch.compile the graphs are cudagraph trees' (mode="reduce-overhead"): they re-record for each new
  // input shape, which a static-shape capture done by hand never meets.
  const bool compiled = !r.compiled_regions.rows.empty() || !compile_intervals(trace).empty();
  const std::string change =
      compiled ? "torch.compile(mode=\"reduce-overhead\") records its CUDA graphs again for each new input shape "
                 "(dynamic shapes): keep the shapes static (drop_last=True, pad or bucket to a few lengths) or set "
                 "torch._inductor.config.triton.cudagraph_skip_dynamic_graphs = True"
               : "capture once before the loop with static inputs and replay: allocate the input tensors once, copy "
                 "each batch into them (static_x.copy_(x)) and call graph.replay() (torch.cuda.graph or "
                 "torch.cuda.make_graphed_callables, not a capture per step)";
  Finding f;
  f.kind = FindingKind::GraphRecapture;
  f.id = to_string(f.kind);
  f.share = share;
  f.max_speedup = bound(share);
  f.bounded = r.trusted;
  f.evidence = evidence;
  const std::string gain = r.trusted ? "at most " + fmt("%.2fx", f.max_speedup)
                                     : "no gain bounded: " + std::to_string(r.steps.size()) + " step(s), need " +
                                           std::to_string(opt.min_trusted_steps);
  f.message = "CUDA graph captured again in " + std::to_string(c.steps_with) + " of " + std::to_string(steps.count) +
              " measured steps (" + made + (c.from_ranges ? ", TuneBench's capture ranges" : "") + "): " +
              fmt_ms(double(c.host_ns) / n) + " of host time a step capturing and instantiating, " + fmt_pct(share) +
              " of the step" + replays + " -> " + change + "; " + gain;
  r.findings.push_back(std::move(f));
}

}  // namespace

bool is_graph_launch(std::string_view n) { return starts_with(n, "cudaGraphLaunch") || starts_with(n, "cuGraphLaunch"); }

std::vector<uint8_t> graph_launch_names(const Trace& trace) {
  std::vector<uint8_t> v;
  for (NameId n = 0; n < trace.name_count(); ++n)
    if (is_graph_launch(trace.name(n))) {
      v.resize(trace.name_count(), 0);
      v[n] = 1;
    }
  return v;
}

GraphCall graph_call(std::string_view n) {
  if (starts_with(n, "cudaStreamBeginCapture") || starts_with(n, "cuStreamBeginCapture")) return GraphCall::BeginCapture;
  if (starts_with(n, "cudaStreamEndCapture") || starts_with(n, "cuStreamEndCapture")) return GraphCall::EndCapture;
  if (starts_with(n, "cudaGraphInstantiate") || starts_with(n, "cuGraphInstantiate")) return GraphCall::Instantiate;
  if (starts_with(n, "cudaGraphExecUpdate") || starts_with(n, "cuGraphExecUpdate")) return GraphCall::Update;
  return GraphCall::None;
}

void add_cuda_graphs(const Trace& trace, const Scope& sc, const AnalysisOptions& opt, AnalysisResult& r) {
  const Steps steps(r);
  CudaGraphs& out = r.cuda_graphs;
  out.steps = steps.count;
  out.base_ns = steps.base_ns;
  bool ids_missing = false;
  if (sc.device >= 0) {
    std::vector<Building> built = collect_replays(trace, sc, ids_missing);
    add_graphs(built, trace, steps, opt, r);
  }
  Interval evidence;
  add_captures(trace, sc, steps, r, evidence);
  if (ids_missing)
    r.notes.push_back("CUDA graph kernels without graph ids (a CUPTI or Kineto that does not record them): their "
                      "replays are counted by their launch calls as graph 0, with no per-node times");
  add_recapture_finding(trace, steps, opt, evidence, r);
}

}  // namespace tb::prof::detail
