// Trace import/export: the two real Kineto traces, a small Kineto trace with known answers, the Chrome
// export round trip, and bad input (every case must be an Error with one line, never a crash).
#include <gtest/gtest.h>

#include <map>

#include <set>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <tuple>

#include "profiler/analysis.h"
#include "profiler/ranks.h"
#include "profiler/trace_io.h"

namespace tb::prof {
namespace {

std::string testdata(const char* name) { return std::string(TB_TESTDATA_DIR) + "/" + name; }

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "tb_prof_" + std::to_string(::getpid()) + "_" + name;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_gz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

size_t count_kind(const Trace& t, EventKind k) {
  size_t n = 0;
  for (const Track& tr : t.tracks())
    for (const Event& e : tr.events()) n += e.kind == k;
  return n;
}

TEST(TraceIO, RealKinetoAlexnet) {
  auto r = load_trace(testdata("kineto_alexnet_a100.json.gz"));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const Trace& t = *r.value();
  EXPECT_EQ(t.meta().source_format, "kineto");
  EXPECT_EQ(t.meta().device, "NVIDIA A100-PG509-200");
  EXPECT_EQ(count_kind(t, EventKind::Kernel), 79u);
  EXPECT_EQ(count_kind(t, EventKind::Memcpy), 16u);
  EXPECT_EQ(count_kind(t, EventKind::Memset), 3u);
  EXPECT_EQ(count_kind(t, EventKind::Sync), 41u);  // cuda_sync rows on the GPU
  EXPECT_EQ(count_kind(t, EventKind::Runtime), 361u);
  EXPECT_GT(t.flows().size(), 90u);  // every kernel/memcpy/memset with a launch
  auto a = analyze(t);
  EXPECT_EQ(a.kernel_count, 79u);
  EXPECT_TRUE(a.steps.empty());
  EXPECT_FALSE(a.window_from_steps);
  EXPECT_EQ(a.gpu_busy_ns + idle_total(a), a.window.length());
  EXPECT_GT(a.sync_count, 0u);
}

TEST(TraceIO, RealKinetoTrainStep) {
  auto r = load_trace(testdata("kineto_train_step_rank0.json.gz"));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const Trace& t = *r.value();
  EXPECT_EQ(count_kind(t, EventKind::Kernel), 4350u);
  EXPECT_EQ(count_kind(t, EventKind::Memcpy), 1600u);
  auto a = analyze(t);
  ASSERT_EQ(a.steps.size(), 5u);
  EXPECT_EQ(a.steps.front().index, 101);
  EXPECT_EQ(a.steps.back().index, 105);
  EXPECT_TRUE(a.window_from_steps);
  EXPECT_EQ(a.gpu_busy_ns + idle_total(a), a.window.length());
  EXPECT_GT(a.gpu_busy_ns, a.window.length() / 2);  // this trace is GPU bound
  uint32_t kernels_in_steps = 0;
  for (const auto& s : a.steps) kernels_in_steps += s.kernel_count;
  EXPECT_LE(kernels_in_steps, 4350u);
  EXPECT_GT(kernels_in_steps, 3000u);
  // Fractional microseconds are kept to the nanosecond: "ts": 1712195495506161.288 (a double would round it).
  bool found = false;
  for (const Track& tr : t.tracks())
    for (const Event& e : tr.events())
      if (e.start_ns == 1712195495506161288LL) found = true;
  EXPECT_TRUE(found);
  // Track names read as what they are: Kineto's thread names, its truncated pthread id in hex, its span.
  std::set<std::string> names;
  for (const Track& tr : t.tracks()) names.insert(tr.name());
  EXPECT_TRUE(names.count("thread 1262 (pt_autograd_0)")) << ::testing::PrintToString(names);
  EXPECT_TRUE(names.count("unnamed thread 0xf1400000")) << ::testing::PrintToString(names);
  EXPECT_TRUE(names.count("profiler span: PyTorch Profiler")) << ::testing::PrintToString(names);
  EXPECT_TRUE(names.count("GPU 0 stream 7")) << ::testing::PrintToString(names);
  // Kineto's two global instants ("Iteration Start", "Record Window End") share one markers track instead
  // of two made-up threads ("Traces / Trace PyTorch Profiler" and "/").
  EXPECT_TRUE(names.count(kGlobalMarkersTrack)) << ::testing::PrintToString(names);
  EXPECT_FALSE(names.count("/")) << ::testing::PrintToString(names);
  EXPECT_FALSE(names.count("Traces / Trace PyTorch Profiler")) << ::testing::PrintToString(names);
  for (const Track& tr : t.tracks())
    if (tr.name() == kGlobalMarkersTrack) EXPECT_EQ(tr.events().size(), 2u);
}

TEST(TraceIO, RealKinetoAlexnetDeviceWideSyncTrack) {
  auto r = load_trace(testdata("kineto_alexnet_a100.json.gz"));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  bool device_wide = false;
  for (const Track& tr : r.value()->tracks()) device_wide |= tr.name() == "GPU 0 device-wide";
  EXPECT_TRUE(device_wide);
}

// A small Kineto-style trace with known answers (times in us).
const char* kMiniKineto = R"({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "Test GPU"}],
  "traceEvents": [
    {"ph": "M", "name": "thread_name", "pid": 10, "tid": 11, "args": {"name": "python main"}},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 10, "tid": 11, "ts": 1000, "dur": 100},
    {"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", "pid": 10, "tid": 11, "ts": 1000, "dur": 20},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11, "ts": 1019, "dur": 2, "args": {"correlation": 5}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1020, "dur": 30, "args": {"correlation": 5, "stream": 7, "device": 0, "grid": [1, 2, 3], "block": [128, 1, 1]}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11, "ts": 1060, "dur": 2, "args": {"correlation": 6}},
    {"ph": "X", "cat": "kernel", "name": "relu", "pid": 0, "tid": 7, "ts": 1062.5, "dur": 37.5, "args": {"correlation": 6, "stream": 7, "device": 0}},
    {"ph": "X", "cat": "gpu_user_annotation", "name": "## forward ##", "pid": 0, "tid": 7, "ts": 1000, "dur": 100},
    {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7, "ts": 1050, "dur": 10, "args": {"stream": 7}},
    {"ph": "s", "id": 5, "pid": 10, "tid": 11, "ts": 1019, "cat": "ac2g", "name": "ac2g"},
    {"ph": "f", "id": 5, "pid": 0, "tid": 7, "ts": 1020, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    {"ph": "i", "s": "g", "name": "Iteration Start", "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": 900},
    {"ph": "i", "s": "t", "name": "thread mark", "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": 901}
  ]
})";

TEST(TraceIO, MiniKinetoKnownAnswers) {
  auto r = parse_trace(kMiniKineto, "mini.json");
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const Trace& t = *r.value();
  EXPECT_EQ(t.meta().device, "Test GPU");
  EXPECT_EQ(t.meta().source_format, "kineto");
  EXPECT_EQ(count_kind(t, EventKind::Kernel), 2u);
  EXPECT_EQ(t.flows().size(), 2u);
  bool named = false, string_pid = false, detail = false, markers = false;
  for (const Track& tr : t.tracks()) {
    named |= tr.name() == "python main";
    string_pid |= tr.name() == "Traces / Trace PyTorch Profiler";  // the thread-scope instant's track
    markers |= tr.name() == kGlobalMarkersTrack && tr.events().size() == 1;  // the global one
    for (const Event& e : tr.events())
      if (e.kind == EventKind::Kernel && t.name(e.detail) == "grid [1,2,3] block [128,1,1]") detail = true;
  }
  EXPECT_TRUE(named);
  EXPECT_TRUE(string_pid);
  EXPECT_TRUE(markers);
  EXPECT_TRUE(detail);
  auto a = analyze(t);
  ASSERT_EQ(a.steps.size(), 1u);
  EXPECT_EQ(a.steps[0].index, 3);
  EXPECT_EQ(a.window.length(), 100000);
  EXPECT_EQ(a.gpu_busy_ns, 67500);
  EXPECT_EQ(a.loader_stall_ns, 20000);       // [1000,1020] all data wait
  EXPECT_EQ(a.launch_gap_ns, 12500);         // [1050,1062.5]: relu launched at 1060 > 1050
  EXPECT_EQ(a.other_idle_ns, 0);
  EXPECT_EQ(a.sync_count, 0u);               // cuda_sync on the GPU row is not a sync point
  EXPECT_EQ(a.steps[0].forward_ns, 0);       // ## forward ## here is a GPU annotation, not host time
}

// torch.profiler's record_shapes: an op's input dims become its detail (tooltip, export); the empty lists of
// trailing scalar inputs are dropped, those between tensors kept so positions still read right.
TEST(TraceIO, KinetoInputDimsBecomeTheOpsDetail) {
  const char* json = R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::conv2d", "pid": 1, "tid": 1, "ts": 10, "dur": 5,
     "args": {"Input Dims": [[64, 1, 28, 28], [32, 1, 3, 3], [], [32], [], []], "Input type": ["float"]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add_", "pid": 1, "tid": 1, "ts": 20, "dur": 1,
     "args": {"Input Dims": [[], []]}}
  ]})";
  auto r = parse_trace(json, "shapes.json");
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  std::map<std::string, std::string> detail;
  for (const Track& tr : r.value()->tracks())
    for (const Event& e : tr.events())
      detail[std::string(r.value()->name(e.name))] = e.detail == kNoName ? "" : std::string(r.value()->name(e.detail));
  EXPECT_EQ(detail["aten::conv2d"], "shapes [64,1,28,28], [32,1,3,3], [], [32]");
  EXPECT_EQ(detail["aten::add_"], "");
}

TEST(TraceIO, ChromeArrayFormatAndBeginEnd) {
  const char* json = R"([
    {"ph": "B", "name": "step", "pid": 1, "tid": 1, "ts": 0},
    {"ph": "B", "name": "data_wait", "pid": 1, "tid": 1, "ts": 0},
    {"ph": "E", "pid": 1, "tid": 1, "ts": 40},
    {"ph": "E", "pid": 1, "tid": 1, "ts": 100},
    {"ph": "C", "name": "queue", "pid": 1, "ts": 50, "args": {"value": 3}}
  ])";
  auto r = parse_trace(json);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const Trace& t = *r.value();
  EXPECT_EQ(t.meta().source_format, "chrome");
  auto a = analyze(t);
  ASSERT_EQ(a.steps.size(), 1u);
  EXPECT_EQ(a.loader_stall_ns, 40000);  // CPU-only: data wait
  EXPECT_EQ(count_kind(t, EventKind::Counter), 1u);
}

Trace make_sample_trace() {
  Trace t;
  t.meta().device = "cpu";
  t.meta().collector_state = "off";
  t.meta().collector_reason = "no driver: cuptiActivityEnable failed";
  t.meta().versions["tunebench"] = "0.1.0";
  t.meta().dropped_records = 3;
  const uint32_t c = t.track_for(TrackKind::CpuThread, 4242, 4243, "train \"main\"");
  const uint32_t g = t.track_for(TrackKind::GpuStream, 0, 7);
  const uint32_t q = t.track_for(TrackKind::Counter, 0, 1, "queue_depth");
  auto ev = [&](uint32_t tr, EventKind k, const char* n, int64_t a, int64_t b, uint64_t corr = 0, int64_t arg = kNoArg) {
    Event e;
    e.kind = k;
    e.name = t.intern(n);
    e.start_ns = a;
    e.end_ns = b;
    e.correlation = corr;
    e.arg = arg;
    if (k == EventKind::Memcpy) e.flags = static_cast<uint16_t>(MemcpyKind::HtoD);
    t.add_event(tr, e);
  };
  ev(c, EventKind::Range, "step", 1000000123, 1000100456, 0, 7);
  ev(c, EventKind::Range, "data_wait", 1000000123, 1000020000);
  ev(c, EventKind::Runtime, "cudaLaunchKernel", 1000020001, 1000020500, 99);
  ev(c, EventKind::Runtime, "cudaMemcpyAsync", 1000020600, 1000020700, 100);
  ev(c, EventKind::Instant, "config_change", 1000050000, 1000050000, 0, 2);
  ev(g, EventKind::Kernel, "gemm\nwith newline", 1000021000, 1000060000, 99);
  ev(g, EventKind::Memcpy, "Memcpy HtoD", 1000060001, 1000061001, 100, 4096);
  Event cnt;
  cnt.kind = EventKind::Counter;
  cnt.name = t.intern("queue_depth");
  cnt.start_ns = cnt.end_ns = 1000030000;
  cnt.value = 2.5;
  t.add_event(q, cnt);
  t.finalize();
  return t;
}

void expect_same(const Trace& a, const Trace& b) {
  EXPECT_EQ(a.event_count(), b.event_count());
  for (int k = 0; k < kEventKindCount; ++k)
    EXPECT_EQ(count_kind(a, static_cast<EventKind>(k)), count_kind(b, static_cast<EventKind>(k))) << k;
  EXPECT_EQ(a.flows().size(), b.flows().size());
  EXPECT_EQ(a.start_ns(), b.start_ns());
  EXPECT_EQ(a.end_ns(), b.end_ns());
  EXPECT_EQ(a.meta().device, b.meta().device);
  EXPECT_EQ(a.meta().collector_state, b.meta().collector_state);
  EXPECT_EQ(a.meta().collector_reason, b.meta().collector_reason);
  EXPECT_EQ(a.meta().dropped_records, b.meta().dropped_records);
  EXPECT_EQ(a.meta().versions, b.meta().versions);
  // Every event of a has an identical one (kind, name, times, correlation, arg) in b.
  for (const Track& ta : a.tracks()) {
    const Track* tb_ = nullptr;
    for (const Track& x : b.tracks())
      if (x.kind() == ta.kind() && x.name() == ta.name()) tb_ = &x;
    ASSERT_NE(tb_, nullptr) << ta.name();
    ASSERT_EQ(ta.events().size(), tb_->events().size()) << ta.name();
    for (size_t i = 0; i < ta.events().size(); ++i) {
      const Event& x = ta.events()[i];
      const Event& y = tb_->events()[i];
      EXPECT_EQ(x.kind, y.kind);
      EXPECT_EQ(a.name(x.name), b.name(y.name));
      EXPECT_EQ(x.start_ns, y.start_ns);
      EXPECT_EQ(x.end_ns, y.end_ns);
      EXPECT_EQ(x.correlation, y.correlation);
      EXPECT_EQ(x.arg, y.arg);
      EXPECT_EQ(x.depth, y.depth);
      EXPECT_EQ(x.memcpy_kind(), y.memcpy_kind());
      EXPECT_DOUBLE_EQ(x.value, y.value);
    }
  }
}

TEST(TraceIO, ChromeExportRoundTripPlainAndGzip) {
  Trace t = make_sample_trace();
  auto an = analyze(t);
  for (const char* name : {"rt.json", "rt.json.gz"}) {
    const std::string p = temp_path(name);
    Status s = write_chrome_trace(t, p, an.findings);
    ASSERT_TRUE(s.ok()) << s.error().to_string();
    auto r = load_trace(p);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r.value()->meta().source_format, "tunebench");
    expect_same(t, *r.value());
    auto an2 = analyze(*r.value());
    EXPECT_EQ(an.gpu_busy_ns, an2.gpu_busy_ns);
    EXPECT_EQ(an.loader_stall_ns, an2.loader_stall_ns);
    EXPECT_EQ(an.launch_gap_ns, an2.launch_gap_ns);
    std::remove(p.c_str());
  }
  // The export is what chrome://tracing and Perfetto read: flows as s/f pairs, findings as instants.
  const std::string json = to_chrome_trace_json(t, an.findings);
  EXPECT_NE(json.find("\"ph\":\"s\""), std::string::npos);
  EXPECT_NE(json.find("\"ph\":\"f\",\"bp\":\"e\""), std::string::npos);
  EXPECT_NE(json.find("\"cat\":\"tunebench_finding\""), std::string::npos);
  EXPECT_NE(json.find("\"ts\":1000000.123"), std::string::npos);
}

// A process's name (a rank's "rank 1") goes out as Chrome's process_name metadata and comes back; merged
// traces keep every process's.
TEST(TraceIO, ProcessNamesRoundTripAndMerge) {
  Trace a, b;
  for (auto [t, pid] : {std::pair<Trace*, int64_t>{&a, 11}, {&b, 12}}) {
    Event e;
    e.start_ns = 1000 * pid;
    e.end_ns = e.start_ns + 500;
    e.name = t->intern("step");
    t->add_event(t->track_for(TrackKind::CpuThread, pid, 1, "train"), e);
    t->meta().process_names[pid] = "rank " + std::to_string(pid - 11);
  }
  a.merge(b);
  a.finalize();
  auto r = parse_trace(to_chrome_trace_json(a), "names");
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r.value()->meta().process_names, (std::map<int64_t, std::string>{{11, "rank 0"}, {12, "rank 1"}}));
}

// A run's documents (the loader's verdict) survive an export and a load as the JSON objects they were; a
// document that is not an object is not kept, and a trace without any has none.
TEST(TraceIO, DocumentsRoundTripAsObjects) {
  Trace a;
  Event e;
  e.start_ns = 1000;
  e.end_ns = 2000;
  e.name = a.intern("step");
  a.add_event(a.track_for(TrackKind::CpuThread, 1, 1, "train"), e);
  a.meta().documents["loader"] = R"({"grade":"highly input-bound","parts":[{"name":"SlowBlur \"x\"","ms":6.5}]})";
  a.finalize();
  auto r = parse_trace(to_chrome_trace_json(a), "docs");
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r.value()->meta().documents, a.meta().documents);
  auto odd = parse_trace(R"({"tunebench":{"documents":{"loader":[1,2],"x":"text","ok":{"a":1}}},"traceEvents":[]})", "odd");
  ASSERT_TRUE(odd.ok()) << odd.error().to_string();
  EXPECT_EQ(odd.value()->meta().documents, (std::map<std::string, std::string>{{"ok", R"({"a":1})"}}));
  auto none = parse_trace(R"({"traceEvents":[]})", "none");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none.value()->meta().documents.empty());
}

// A script's loader lanes are written on the monotonic clock; the merge moves them onto the chunks' clock by the
// offset a chunk states, whether they come after that chunk or before it, and leaves them out without one.
TEST(TraceIO, LoaderLanesJoinTheChunksOnTheirClock) {
  auto chunk = [](double offset_us, double ts_us) {
    std::string j = R"({"traceEvents":[{"ph":"X","name":"ProfilerStep#1","pid":5,"tid":5,"ts":)" + std::to_string(ts_us) +
                    R"(,"dur":1000}])";
    if (offset_us != 0) j += R"(,"tunebench_clock_offset_us":")" + std::to_string(offset_us) + "\"";
    return std::move(parse_trace(j + "}", "chunk").value());
  };
  auto lanes = [](double ts_us) {
    return std::move(parse_trace(R"({"tunebench_clock":"monotonic","traceEvents":[{"ph":"X","name":"sample","pid":9,"tid":9,"ts":)" +
                                     std::to_string(ts_us) + R"(,"dur":400}]})", "lanes")
                         .value());
  };
  auto sample_start = [](const Trace& t) {
    for (const auto& tr : t.tracks())
      for (const auto& e : tr.events())
        if (t.name(e.name) == "sample") return e.start_ns;
    return int64_t(-1);
  };
  // Kineto's clock 5e12 us ahead of the monotonic one: a sample at monotonic 2000 us lands at 5e12 + 2000.
  ChunkMerger after;
  after.add(chunk(5e12, 5e12 + 1500));
  after.add(lanes(2000));
  auto a = after.take();
  a->finalize();
  EXPECT_EQ(sample_start(*a), int64_t(5e15) + 2'000'000);
  EXPECT_EQ(after.unplaced(), 0u);
  EXPECT_EQ(a->meta().extra.count("tunebench_clock"), 0u);
  ChunkMerger before;
  before.add(lanes(2000));
  before.add(chunk(5e12, 5e12 + 1500));
  auto b = before.take();
  b->finalize();
  EXPECT_EQ(sample_start(*b), int64_t(5e15) + 2'000'000);
  ChunkMerger none;
  none.add(chunk(0, 1500));
  none.add(lanes(2000));
  auto n = none.take();
  EXPECT_EQ(none.unplaced(), 1u);
  n->finalize();
  EXPECT_EQ(sample_start(*n), -1);
}

// Ranks on two hosts: the same pid and each its GPU 0, and a second clock. Moved apart and shifted, the
// merged trace keeps both processes (labelled with the pids they had), in rank order, on one clock.
TEST(TraceIO, RanksFromTwoHostsMergeApartOnOneClock) {
  Trace a, b;
  for (auto [t, rank, start] : {std::tuple<Trace*, int, int64_t>{&a, 0, 5'000}, {&b, 1, 86'400'000'005'000}}) {
    Event e;
    e.start_ns = start;
    e.end_ns = start + 500;
    e.name = t->intern("step");
    t->add_event(t->track_for(TrackKind::CpuThread, 7, 7, "train"), e);
    e.kind = EventKind::Kernel;
    t->add_event(t->track_for(TrackKind::GpuStream, 0, 7), e);
    e.kind = EventKind::Counter;  // the recorder's counters are the process's
    e.end_ns = e.start_ns;
    t->add_event(t->track_for(TrackKind::Counter, 7, 0, "rss"), e);
    t->meta().process_names[7] = "rank " + std::to_string(rank) + " on host" + std::to_string(rank);
    t->finalize();
  }
  Trace c;
  c.add_event(c.track_for(TrackKind::Counter, 7, 0, "rss"), Event{});
  EXPECT_FALSE(a.shares_pids_with(c)) << "a counter alone is no process";
  ASSERT_TRUE(a.shares_pids_with(b));
  b.shift_time(-86'400'000'000'000);
  b.move_pids(kPidSpace);
  EXPECT_FALSE(a.shares_pids_with(b));
  a.merge(b);
  EXPECT_EQ(a.tracks().size(), 6u) << "two processes, two GPUs, each its counter";
  EXPECT_EQ(a.start_ns(), 5'000);
  EXPECT_EQ(a.end_ns(), 5'500) << "rank 1 on rank 0's clock";
  EXPECT_EQ(process_label(a.meta(), 7 + kPidSpace), "rank 1 on host1 (pid 7)");
  std::vector<int64_t> pids{7 + kPidSpace, 3, 7};
  a.meta().process_names[3] = "loader";
  sort_processes(a.meta(), pids);
  EXPECT_EQ(pids, (std::vector<int64_t>{7, 7 + kPidSpace, 3}));
  EXPECT_EQ(processes_with_steps(a), (std::vector<int64_t>{7, 7 + kPidSpace}));
}

// A clock that runs 100 ppm fast against rank 0's: offsets measured at both ends of the run (-1 000 000 ns at
// t = 0, -1 100 000 ns at t = 1 s) move each event by the offset of its own time, not by one of them.
TEST(TraceIO, TwoOffsetsMoveEachEventByTheOffsetOfItsTime) {
  Trace t;
  const uint32_t track = t.track_for(TrackKind::CpuThread, 1, 1, "train");
  for (int64_t at : {0LL, 500'000'000LL, 1'000'000'000LL, 2'000'000'000LL}) {
    Event e;
    e.start_ns = at;
    e.end_ns = at + 10'000'000;
    e.name = t.intern("step");
    t.add_event(track, e);
  }
  t.finalize();
  t.shift_time(0, -1'000'000, 1'000'000'000, -1'100'000);
  const auto& ev = t.tracks()[track].events();
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0].start_ns, -1'000'000);
  EXPECT_EQ(ev[0].end_ns, 10'000'000 - 1'001'000) << "a 10 ms step on the fast clock lasts 1 us less";
  EXPECT_EQ(ev[1].start_ns, 500'000'000 - 1'050'000);
  EXPECT_EQ(ev[2].start_ns, 1'000'000'000 - 1'100'000);
  EXPECT_EQ(ev[3].start_ns, 2'000'000'000 - 1'200'000) << "beyond the last measurement: the same rate";
  // One measurement time (or one offset): the plain shift.
  Trace u;
  u.add_event(u.track_for(TrackKind::CpuThread, 1, 1, "train"), Event{});
  u.shift_time(5, -7, 5, -9);
  EXPECT_EQ(u.tracks()[0].events()[0].start_ns, -9);
}

void expect_error(const std::string& bytes, const char* what, bool want_offset = false) {
  auto r = parse_trace(bytes, what);
  ASSERT_FALSE(r.ok()) << what << ": parsed";
  const std::string msg = r.error().to_string();
  EXPECT_FALSE(msg.empty()) << what;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << what << ": " << msg;
  if (want_offset) EXPECT_GE(r.error().byte_offset, 0) << what << ": " << msg;
}

TEST(TraceIO, BadInputIsAnErrorNotACrash) {
  expect_error("", "empty");
  expect_error("   \n\t ", "whitespace");
  expect_error("hello", "not json", true);
  expect_error("{\"traceEvents\": [", "truncated");
  expect_error("{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1, \"dur\": 2}", "truncated object");
  expect_error("{\"foo\": 1}", "no traceEvents");
  expect_error("{\"traceEvents\": 5}", "traceEvents not an array");
  expect_error("{\"traceEvents\": [5]}", "event not an object");
  expect_error("{\"traceEvents\": [{\"ph\": \"X\", \"ts\": \"abc\", \"dur\": 1}]}", "ts wrong type", true);
  expect_error("{\"traceEvents\": [{\"ph\": \"X\", \"ts\": [1], \"dur\": 1}]}", "ts array", true);
  expect_error("{\"traceEvents\": [{\"ph\": 1, \"ts\": 1}]}", "ph wrong type", true);
  expect_error("{\"traceEvents\": [{\"ph\": \"X\", \"name\": {}, \"ts\": 1}]}", "name wrong type", true);
  expect_error("{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1e300, \"dur\": 1}]}", "absurd ts", true);
  expect_error("{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 99999999999999999999999, \"dur\": 1}]}", "huge ts", true);
  expect_error("{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1, \"dur\": -5}]}", "negative dur", true);
  expect_error("{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 3000000000000000, \"dur\": 3000000000000000}]}",
               "ts + dur overflow");
  expect_error("{\"traceEvents\": [{\"ph\": \"X\", \"dur\": 1}]}", "missing ts");
  expect_error("{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1, \"pid\": true}]}", "pid bool", true);
  expect_error("[1, 2", "truncated array");
  expect_error(std::string("{\"traceEvents\": [{\"name\": \"\xff\xfe\", \"ph\": \"X\", \"ts\": 1}]}"), "bad utf8");
  // Random bytes (fixed seed): must never crash, and almost surely an error.
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i) {
    std::string junk(static_cast<size_t>(rng() % 300), '\0');
    for (char& ch : junk) ch = static_cast<char>(rng() & 0xff);
    auto r = parse_trace(junk, "random");
    if (!r.ok()) {
      EXPECT_EQ(r.error().to_string().find('\n'), std::string::npos);
    }
  }
}

TEST(TraceIO, TruncatedRealTraceAndCorruptGzip) {
  const std::string full = read_gz(testdata("kineto_alexnet_a100.json.gz"));
  ASSERT_GT(full.size(), 10000u);
  expect_error(full.substr(0, full.size() / 2), "truncated real trace");
  {
    // Where a cut-off file ends is the one position worth giving (it said "at byte 0" once).
    const std::string cut = full.substr(0, 9001);
    auto r = parse_trace(cut + "\n", "cut");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("truncated"), std::string::npos) << r.error().to_string();
    // The offset just past the last character that is not whitespace.
    EXPECT_EQ(r.error().byte_offset, static_cast<int64_t>(cut.find_last_not_of(" \n\r\t") + 1));
    EXPECT_GT(r.error().byte_offset, 8900);
  }
  // Corrupt gzip: valid magic, garbage body.
  std::string gz = "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage garbage garbage";
  expect_error(gz, "corrupt gzip", true);
  // Truncated gzip: the first half of the real file.
  std::ifstream f(testdata("kineto_alexnet_a100.json.gz"), std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string real_gz = ss.str();
  expect_error(real_gz.substr(0, real_gz.size() / 2), "truncated gzip");
  // Gzip bomb guard.
  LoadOptions small;
  small.max_bytes = 1000;
  auto r = parse_trace(real_gz, "limited", small);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("limit"), std::string::npos);
}

TEST(TraceIO, MissingFileAndDirectory) {
  auto r = load_trace("/nonexistent/dir/trace.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("cannot open"), std::string::npos);
  auto d = load_trace(::testing::TempDir());
  ASSERT_FALSE(d.ok());
  const std::string p = temp_path("empty.json");
  write_file(p, "");
  auto e = load_trace(p);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().message, "empty file");
  std::remove(p.c_str());
  Status s = write_chrome_trace(make_sample_trace(), "/nonexistent/dir/out.json");
  EXPECT_FALSE(s.ok());
}

}  // namespace
}  // namespace tb::prof
