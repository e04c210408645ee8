// CUDA graphs (docs/analysis.md, "CUDA graphs"): Kineto traces written here, as torch.profiler writes a graph's
// work (every kernel of one cudaGraphLaunch under its correlation id, "graph id" / "graph node id" in the args),
// a graph captured once and replayed, and one captured and instantiated again in every step; our CUPTI decoder's
// graph fields; the idle split charging a replay one launch; the export keeping the ids.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "analysis_test_util.h"
#include "profiler/analysis.h"
#include "profiler/cupti_collector.h"
#include "profiler/trace_io.h"
#include "trace_builder.h"

#if defined(TUNEBENCH_HAVE_CUPTI)
#include <cupti.h>
#endif

namespace tb::prof {
namespace {

using test_util::find;
using test_util::us;

// How the fixture's program made its graph.
struct Program {
  int steps = 5;
  bool recapture = false;  // captured and instantiated again in every step (a new graph id each time)
  int recapture_steps = 1000;  // ... in the first ones only: then its last graph is replayed
  bool graph_ids = true;   // its kernels carry Kineto's graph fields
  bool graphs = true;      // false: an eager program, no graph at all
  bool compiled = false;   // each step runs a torch.compile region (its graphs are cudagraph trees')
};

// One Kineto trace: a step every 1000 us on pid 1 / tid 1 (ProfilerStep#N). In a step at t0: an eager kernel
// launched at t0+5 and run at t0+50..t0+90; with `recapture`, a capture t0+10..t0+310 (begin and end calls) and
// an instantiation t0+320..t0+520; the replay: cudaGraphLaunch at t0+600..t0+620 running its three nodes
// gemm t0+610..t0+710, relu t0+715..t0+735, add t0+740..t0+760. Captured once: before the first step.
std::string kineto_json(const Program& p) {
  std::string o = "{\"schemaVersion\":1,\"traceEvents\":[\n";
  long corr = 1000;
  auto x = [&](const char* cat, const std::string& name, int pid, int tid, long ts, long dur, const std::string& args) {
    o += "{\"ph\":\"X\",\"cat\":\"" + std::string(cat) + "\",\"name\":\"" + name + "\",\"pid\":" + std::to_string(pid) +
         ",\"tid\":" + std::to_string(tid) + ",\"ts\":" + std::to_string(ts) + ",\"dur\":" + std::to_string(dur) +
         ",\"args\":{" + args + "}},\n";
  };
  auto rt = [&](const char* name, long ts, long dur) { x("cuda_runtime", name, 1, 1, ts, dur, "\"correlation\":" + std::to_string(++corr)); };
  auto graph_args = [&](long c, int graph, long node) {
    std::string a = "\"device\":0,\"stream\":7,\"correlation\":" + std::to_string(c);
    if (p.graph_ids) a += ",\"graph id\":" + std::to_string(graph) + ",\"graph node id\":" + std::to_string(node);
    return a;
  };
  const long base = 1'000'000;
  auto capture = [&](long t0) {
    rt("cudaStreamBeginCapture", t0 + 10, 5);
    rt("cudaStreamEndCapture", t0 + 300, 10);
    rt("cudaGraphInstantiateWithFlags", t0 + 320, 200);
  };
  if (p.graphs && !p.recapture) capture(base - 1000);
  for (int i = 0; i < p.steps; ++i) {
    const long t0 = base + i * 1000L;
    x("user_annotation", "ProfilerStep#" + std::to_string(i), 1, 1, t0, 1000, "");
    if (p.compiled) x("cpu_op", "Torch-Compiled Region: 0/0", 1, 1, t0 + 2, 900, "");
    rt("cudaLaunchKernel", t0 + 5, 3);
    x("kernel", "eager_kernel", 0, 7, t0 + 50, 40,
      "\"device\":0,\"stream\":7,\"correlation\":" + std::to_string(corr) + (p.graph_ids ? ",\"graph id\":0,\"graph node id\":0" : ""));
    if (!p.graphs) continue;
    if (p.recapture && i < p.recapture_steps) capture(t0);
    const int made = std::min(i, p.recapture_steps - 1);  // the graph this step replays
    const int graph = p.recapture ? 100 + made : 5;
    const long node0 = p.recapture ? 1000L * made : 10;
    rt("cudaGraphLaunch", t0 + 600, 20);
    x("kernel", "gemm", 0, 7, t0 + 610, 100, graph_args(corr, graph, node0 + 1));
    x("kernel", "relu", 0, 7, t0 + 715, 20, graph_args(corr, graph, node0 + 2));
    x("kernel", "add", 0, 7, t0 + 740, 20, graph_args(corr, graph, node0 + 3));
  }
  o += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"python\"}}\n]}\n";
  return o;
}

std::string temp_path(const char* name) {
  return ::testing::TempDir() + "tb_graphs_" + std::to_string(::getpid()) + "_" + name;
}

std::unique_ptr<Trace> load_program(const Program& p, const char* name) {
  const std::string path = temp_path(name);
  std::ofstream(path) << kineto_json(p);
  auto t = load_trace(path);
  std::remove(path.c_str());
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().to_string());
  return t.ok() ? std::move(t.value()) : nullptr;
}

// Captured once before the steps, replayed once a step: one graph, five replays, each its three nodes.
TEST(CudaGraphs, ReplaysAndNodesFromKinetoGraphIds) {
  auto t = load_program({}, "once.json");
  ASSERT_TRUE(t);
  const AnalysisResult r = analyze(*t);
  const CudaGraphs& c = r.cuda_graphs;
  EXPECT_EQ(c.steps, 5u);
  EXPECT_TRUE(c.node_ids);
  ASSERT_EQ(c.graphs.size(), 1u);
  const CudaGraphStat& g = c.graphs[0];
  EXPECT_EQ(g.graph, 5u);
  EXPECT_EQ(g.replays, 5u);
  EXPECT_EQ(g.replays_elsewhere, 0u);
  EXPECT_DOUBLE_EQ(g.replays_per_step, 1.0);
  EXPECT_EQ(g.kernels_per_replay, 3u);
  EXPECT_EQ(g.median_busy_ns, 140 * us);  // 100 + 20 + 20: the gaps inside are not the replay's GPU time
  EXPECT_EQ(g.median_span_ns, 150 * us);  // 610 .. 760
  EXPECT_EQ(g.busy_ns, 5 * 140 * us);
  EXPECT_EQ(g.launch_ns, 5 * 20 * us);
  EXPECT_NEAR(g.share, 700.0 / 5000.0, 1e-9);
  ASSERT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.nodes[0].node, 11u);
  EXPECT_EQ(g.nodes[0].name, "gemm");
  EXPECT_EQ(g.nodes[0].runs, 5u);
  EXPECT_EQ(g.nodes[0].total_ns, 500 * us);
  EXPECT_EQ(g.nodes[0].mean_ns(), 100 * us);
  EXPECT_NEAR(g.nodes[0].share, 100.0 / 140.0, 1e-9);
  ASSERT_EQ(g.replay_list.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(g.replay_list[i].step, int64_t(i));
    EXPECT_TRUE(g.replay_list[i].measured);
    EXPECT_EQ(g.replay_list[i].kernels, 3u);
    EXPECT_EQ(g.replay_list[i].launch_ns, 20 * us);
  }
  // The capture before the steps is counted apart; no finding.
  EXPECT_EQ(c.capture.captures + c.capture.instantiations, 0u);
  EXPECT_EQ(c.capture.elsewhere, 2u);
  EXPECT_EQ(find(r, FindingKind::GraphRecapture), nullptr);
  // One launch a replay: the graph's kernels have no launch statistics of their own.
  for (const KernelStat& k : r.top_kernels) {
    if (k.name == "eager_kernel") EXPECT_EQ(k.launched, 5u);
    else EXPECT_EQ(k.launched, 0u) << k.name;
  }
  const std::string j = to_json(r);
  for (const char* k : {"\"cuda_graphs\":{\"steps\":5", "\"graph\":5", "\"replays\":5", "\"kernels_per_replay\":3",
                        "\"node\":11", "\"name\":\"gemm\"", "\"replays_list\":[", "\"captures\":0", "\"elsewhere\":2"})
    EXPECT_NE(j.find(k), std::string::npos) << k;
}

// Captured and instantiated again in every step: a new graph each step, each replayed once, and the finding
// with the host time the captures take (300 us capture + 200 us instantiation of each 1000 us step).
TEST(CudaGraphs, RecaptureInEveryStepIsAFinding) {
  Program p;
  p.recapture = true;
  auto t = load_program(p, "recapture.json");
  ASSERT_TRUE(t);
  const AnalysisResult r = analyze(*t);
  const CudaGraphs& c = r.cuda_graphs;
  EXPECT_EQ(c.graphs.size(), 5u);  // a new graph id each capture
  for (const CudaGraphStat& g : c.graphs) EXPECT_EQ(g.replays, 1u) << g.graph;
  EXPECT_EQ(c.capture.captures, 5u);
  EXPECT_EQ(c.capture.instantiations, 5u);
  EXPECT_EQ(c.capture.steps_with, 5u);
  EXPECT_EQ(c.capture.late_steps_with, 3u);
  EXPECT_EQ(c.capture.host_ns, 5 * 500 * us);
  EXPECT_FALSE(c.capture.from_ranges);
  const Finding* f = find(r, FindingKind::GraphRecapture);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->id, "cuda_graph_recapture");
  EXPECT_NEAR(f->share, 0.5, 1e-9);
  EXPECT_NEAR(f->max_speedup, 2.0, 1e-9);
  EXPECT_TRUE(f->bounded);
  EXPECT_EQ(f->evidence.length(), 300 * us);  // the capture, the largest of the pieces
  EXPECT_NE(f->message.find("captured again in 5 of 5 measured steps (5 captures, 5 instantiations): 0.500 ms of host "
                            "time a step capturing and instantiating, 50.0% of the step, while the replays ran 0.140 ms "
                            "a step on the GPU -> capture once before the loop with static inputs"),
            std::string::npos)
      << f->message;
  EXPECT_NE(f->message.find("at most 2.00x"), std::string::npos) << f->message;
  // The instantiations are runtime calls the GPU waits in: that finding names them, not a warm-up.
  const Finding* rt = find(r, FindingKind::RuntimeCalls);
  ASSERT_NE(rt, nullptr);
  EXPECT_NE(rt->message.find("CUDA graph instantiation) 20.0% of step time (1.000 ms) -> instantiate the CUDA graph "
                             "once (cuda_graph_recapture), warm up"),
            std::string::npos)
      << rt->message;
}

// Captures in the first steps only (3 of 5), then replays: a warm-up settling, as torch.compile's cudagraph trees
// record theirs on the first calls. Most steps captured, but not the later half: no finding.
TEST(CudaGraphs, CapturesThatStopAreNoRecapture) {
  Program p;
  p.recapture = true;
  p.recapture_steps = 3;
  auto t = load_program(p, "settling.json");
  ASSERT_TRUE(t);
  const AnalysisResult r = analyze(*t);
  EXPECT_EQ(r.cuda_graphs.capture.steps_with, 3u);
  EXPECT_EQ(r.cuda_graphs.capture.late_steps_with, 1u);  // steps 2, 3, 4 are the later half
  EXPECT_EQ(find(r, FindingKind::GraphRecapture), nullptr);
  ASSERT_EQ(r.cuda_graphs.graphs.size(), 3u);
  EXPECT_EQ(r.cuda_graphs.graphs[2].replays, 3u);  // the last graph made, replayed in steps 2-4
  if (const Finding* rt = find(r, FindingKind::RuntimeCalls))
    EXPECT_EQ(rt->message.find("cuda_graph_recapture"), std::string::npos) << rt->message;
}

// Under torch.compile the graphs are its cudagraph trees': the change is the shapes, not a capture by hand.
TEST(CudaGraphs, RecaptureUnderTorchCompileNamesReduceOverhead) {
  Program p;
  p.recapture = true;
  p.compiled = true;
  auto t = load_program(p, "compiled.json");
  ASSERT_TRUE(t);
  const AnalysisResult r = analyze(*t);
  const Finding* f = find(r, FindingKind::GraphRecapture);
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("torch.compile(mode=\"reduce-overhead\") records its CUDA graphs again for each new input "
                            "shape"),
            std::string::npos)
      << f->message;
  EXPECT_EQ(f->message.find("capture once before the loop"), std::string::npos);
}

// Kernels without graph ids (an older Kineto) that a cudaGraphLaunch ran are still its replays: graph 0, no
// nodes, and a note. A program without graphs has no cuda_graphs at all, in the result and the JSON.
TEST(CudaGraphs, WithoutGraphIdsReplaysByLaunchAndWithoutGraphsNothing) {
  Program p;
  p.graph_ids = false;
  auto t = load_program(p, "noids.json");
  ASSERT_TRUE(t);
  const AnalysisResult r = analyze(*t);
  ASSERT_EQ(r.cuda_graphs.graphs.size(), 1u);
  EXPECT_EQ(r.cuda_graphs.graphs[0].graph, 0u);
  EXPECT_EQ(r.cuda_graphs.graphs[0].replays, 5u);
  EXPECT_EQ(r.cuda_graphs.graphs[0].kernels_per_replay, 3u);
  EXPECT_TRUE(r.cuda_graphs.graphs[0].nodes.empty());
  EXPECT_FALSE(r.cuda_graphs.node_ids);
  EXPECT_TRUE(test_util::has_note(r, "CUDA graph kernels without graph ids"));

  Program eager;
  eager.graphs = false;
  auto e = load_program(eager, "eager.json");
  ASSERT_TRUE(e);
  const AnalysisResult re = analyze(*e);
  EXPECT_TRUE(re.cuda_graphs.empty());
  EXPECT_EQ(to_json(re).find("cuda_graphs"), std::string::npos);
  EXPECT_FALSE(test_util::has_note(re, "CUDA graph"));
  for (const auto& ev : e->track(e->track_for(TrackKind::GpuStream, 0, 7)).events()) EXPECT_EQ(ev.graph, 0u);
}

// The real A100/V100 traces carry no graph: nothing of it in their analysis.
TEST(CudaGraphs, RealTracesHaveNone) {
  for (const char* name : {"kineto_train_step_rank0.json.gz", "kineto_alexnet_a100.json.gz"}) {
    auto t = test_util::load(name);
    ASSERT_TRUE(t);
    const AnalysisResult r = analyze(*t);
    EXPECT_TRUE(r.cuda_graphs.empty()) << name;
    EXPECT_EQ(to_json(r).find("cuda_graphs"), std::string::npos) << name;
  }
}

// A slow graph launch (the call returns after its replay's kernels ran): the gaps between the replay's nodes are
// no launch gap, whether the kernels carry graph ids or the launch's name says it.
TEST(CudaGraphs, IdleChargesAReplayOneLaunch) {
  for (bool ids : {true, false}) {
    test_util::Builder b;
    b.runtime("cudaGraphLaunch", 0, 500, 77);
    int64_t t = 10;
    for (int node = 1; node <= 3; ++node, t += 50) {
      Event k;
      k.kind = EventKind::Kernel;
      k.name = b.t.intern("graph_kernel");
      k.start_ns = t * us;
      k.end_ns = (t + 40) * us;  // 10 us gaps between the nodes
      k.correlation = 77;
      if (ids) k.graph = 3, k.arg = node;
      b.t.add_event(b.t.track_for(TrackKind::GpuStream, 0, 7), k);
    }
    const AnalysisResult r = b.run();
    EXPECT_EQ(r.launch_gap_count, 0u) << ids;
    EXPECT_EQ(r.launch_gap_ns, 0) << ids;
    EXPECT_EQ(r.other_idle_ns, 20 * us) << ids;
    EXPECT_EQ(r.gpu_busy_ns + idle_total(r), r.window.length());
    ASSERT_EQ(r.cuda_graphs.graphs.size(), 1u);
    EXPECT_EQ(r.cuda_graphs.graphs[0].replays, 1u);
    EXPECT_EQ(r.cuda_graphs.graphs[0].median_busy_ns, 120 * us);
    EXPECT_EQ(r.cuda_graphs.graphs[0].median_span_ns, 140 * us);
  }
}

// Kineto's graph fields: a graph kernel's graph and node; "graph id": 0 (Kineto's word for none) is no graph.
TEST(CudaGraphs, ImportReadsKinetoGraphIds) {
  auto t = load_program({}, "import.json");
  ASSERT_TRUE(t);
  size_t graph = 0, eager = 0;
  for (const Event& e : t->track(t->track_for(TrackKind::GpuStream, 0, 7)).events()) {
    if (t->name(e.name) == "eager_kernel") {
      ++eager;
      EXPECT_EQ(e.graph, 0u);
      EXPECT_EQ(e.arg, kNoArg);
    } else {
      ++graph;
      EXPECT_EQ(e.graph, 5u);
      EXPECT_EQ(e.graph_node(), t->name(e.name) == "gemm" ? 11u : t->name(e.name) == "relu" ? 12u : 13u);
    }
  }
  EXPECT_EQ(graph, 15u);
  EXPECT_EQ(eager, 5u);
}

// Our Chrome export writes Kineto's names, and reading it back gives the same graph and node.
TEST(CudaGraphs, ExportKeepsGraphAndNode) {
  auto t = load_program({}, "export.json");
  ASSERT_TRUE(t);
  const std::string json = to_chrome_trace_json(*t);
  EXPECT_NE(json.find("\"graph id\":5,\"graph node id\":11"), std::string::npos);
  const std::string path = temp_path("export_back.json");
  std::ofstream(path) << json;
  auto back = load_trace(path);
  std::remove(path.c_str());
  ASSERT_TRUE(back.ok());
  size_t graph_kernels = 0;
  for (const Track& tr : back.value()->tracks())
    for (const Event& e : tr.events())
      if (e.graph) {
        EXPECT_EQ(e.graph, 5u);
        EXPECT_GE(e.graph_node(), 11u);
        EXPECT_LE(e.graph_node(), 13u);
        ++graph_kernels;
      }
  EXPECT_EQ(graph_kernels, 15u);
  const AnalysisResult r = analyze(*back.value());
  ASSERT_EQ(r.cuda_graphs.graphs.size(), 1u);
  EXPECT_EQ(r.cuda_graphs.graphs[0].nodes.size(), 3u);
}

// TuneBench's engine marks its own captures (`cuda_graph_capture`): a trace without the runtime calls counts them.
TEST(CudaGraphs, EngineCaptureRangesCountWithoutTheCalls) {
  test_util::Builder b;
  for (int i = 0; i < 4; ++i) {
    const int64_t t0 = i * 1000;
    b.range("step", t0, t0 + 1000, i);
    b.range("cuda_graph_capture", t0 + 100, t0 + 400);
    b.kernel(t0 + 500, t0 + 900, t0 + 450);
  }
  const AnalysisResult r = b.run();
  EXPECT_TRUE(r.cuda_graphs.capture.from_ranges);
  EXPECT_EQ(r.cuda_graphs.capture.captures, 4u);
  EXPECT_EQ(r.cuda_graphs.capture.steps_with, 4u);
  const Finding* f = find(r, FindingKind::GraphRecapture);
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("TuneBench's capture ranges"), std::string::npos) << f->message;
}

// `analyze` prints them: a row per graph, its costliest nodes, the captures.
TEST(CudaGraphs, AnalyzePrintsThem) {
  const std::string path = temp_path("print.json");
  std::ofstream(path) << kineto_json({});
  const std::string cmd = std::string("'") + TB_CLI_PATH + "' analyze '" + path + "' 2>&1";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    EXPECT_EQ(pclose(p), 0) << out;
  }
  std::remove(path.c_str());
  for (const char* line : {"CUDA graphs over 5 measured steps", "  5              5   1.00        3         0.140      0.150",
                           "    node 11            5 runs      0.500 ms  mean     100.0 us   71.4% of the graph  gemm",
                           "  captured: 0 captures, 0 instantiations, 0 updates; 2 outside the measured steps"})
    EXPECT_NE(out.find(line), std::string::npos) << line << "\n" << out;
}

#if defined(TUNEBENCH_HAVE_CUPTI)
// Our collector: a kernel record's graphId and graphNodeId, a graph copy's graphId; the capture and
// instantiation calls are among the callbacks it asks for.
TEST(CudaGraphs, DecoderKeepsGraphAndNode) {
  CuptiDecoder d(/*pid=*/10);
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 1000;
  k.end = 2000;
  k.streamId = 7;
  k.correlationId = 5;
  k.name = "graph_gemm";
  k.graphId = 9;
  k.graphNodeId = 123456789012ULL;
  d.decode(&k);
  CUpti_ActivityKernel10 eager = k;
  eager.graphId = 0;
  eager.graphNodeId = 0;
  eager.start = 3000;
  eager.end = 4000;
  d.decode(&eager);
  CUpti_ActivityMemcpy6 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
  m.bytes = 64;
  m.start = 2100;
  m.end = 2200;
  m.streamId = 7;
  m.correlationId = 5;
  m.graphId = 9;
  m.graphNodeId = 77;
  d.decode(&m);
  auto t = d.take();
  const auto& ev = t->track(t->track_for(TrackKind::GpuStream, 0, 7)).events();
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].graph, 9u);
  EXPECT_EQ(ev[0].graph_node(), 123456789012ULL);
  EXPECT_EQ(ev[1].graph, 9u);  // the copy: its graph, its bytes
  EXPECT_EQ(ev[1].arg, 64);
  EXPECT_EQ(ev[1].graph_node(), 0u);
  EXPECT_EQ(ev[2].graph, 0u);
  EXPECT_EQ(ev[2].arg, kNoArg);
  const auto& ids = ApiCallLog::runtime_ids();
  for (uint32_t cbid : {uint32_t(CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000),
                        uint32_t(CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000),
                        uint32_t(CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithFlags_v11040),
                        uint32_t(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000)})
    EXPECT_NE(std::find(ids.begin(), ids.end(), cbid), ids.end()) << cbid;
}
#endif

}  // namespace
}  // namespace tb::prof
