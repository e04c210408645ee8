// CUDA graphs' ids in the trace: Kineto traces written here, as torch.profiler writes a graph's work (every kernel
// of one cudaGraphLaunch under its correlation id, "graph id" / "graph node id" in the args), read and written
// back; our CUPTI decoder's graph fields.
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
    if (p.recapture) capture(t0);
    const int graph = p.recapture ? 100 + i : 5;
    const long node0 = p.recapture ? 1000L * i : 10;
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
