// Memory beside time (docs/analysis.md "Memory"): the peaks, the headroom and each step's peak from the memory
// counters TuneBench's traces carry, torch.profiler's profile_memory events read as the same counters, and the
// two findings memory gives.
#include <gtest/gtest.h>

#include <string>

#include "profiler/range_names.h"
#include "profiler/trace_io.h"
#include "trace_builder.h"

using namespace tb::prof;
using namespace tb::prof::test_util;

namespace {

constexpr int64_t MiB = int64_t(1) << 20;

void counter(Builder& b, const char* name, int64_t at_us, double value) {
  const uint32_t t = b.t.track_for(TrackKind::Counter, 1, int64_t(std::hash<std::string>{}(name) % 1000), name);
  Event e;
  e.kind = EventKind::Counter;
  e.name = b.t.intern(name);
  e.start_ns = e.end_ns = at_us * us;
  e.value = value;
  b.t.add_event(t, e);
}

// `n` steps of 100 us; after each, the counters as the engine writes them.
Builder steps(int n, double allocated0, double per_step, double reserved, double retries = 0) {
  Builder b;
  b.t.meta().extra["device_memory_bytes"] = std::to_string(80 * 1024 * MiB);
  for (int i = 0; i < n; ++i) {
    b.range("step", i * 100, i * 100 + 90, i);
    b.kernel(i * 100 + 5, i * 100 + 85, i * 100 + 1);
    const double a = allocated0 + per_step * i;
    counter(b, names::kDeviceAllocated, i * 100 + 91, a);
    counter(b, names::kDeviceReserved, i * 100 + 91, reserved);
    counter(b, names::kDevicePeak, i * 100 + 91, a + 100 * MiB);
    counter(b, names::kDeviceRetries, i * 100 + 91, retries);
    counter(b, names::kHostRss, i * 100 + 91, 2048.0 * MiB);
  }
  return b;
}

const Finding* find(const AnalysisResult& r, FindingKind k) {
  for (const auto& f : r.findings)
    if (f.kind == k) return &f;
  return nullptr;
}

}  // namespace

TEST(Memory, PeaksHeadroomAndEachStepsPeak) {
  Builder b = steps(12, 8192.0 * MiB, 0, 9000.0 * MiB);
  auto r = b.run();
  ASSERT_TRUE(r.memory.present);
  EXPECT_EQ(r.memory.device_allocated_peak, 8192 * MiB);
  EXPECT_EQ(r.memory.device_reserved_peak, 9000 * MiB);
  EXPECT_EQ(r.memory.device_step_peak, 8292 * MiB);
  EXPECT_EQ(r.memory.host_rss_peak, 2048 * MiB);
  EXPECT_EQ(r.memory.device_total, 80 * 1024 * MiB);
  EXPECT_EQ(r.memory.headroom, 80 * 1024 * MiB - 9000 * MiB);
  ASSERT_EQ(r.steps.size(), 12u);
  for (const auto& s : r.steps) EXPECT_EQ(s.memory_peak_bytes, 8292 * MiB) << s.index;
  EXPECT_EQ(find(r, FindingKind::MemoryGrowth), nullptr);
  EXPECT_EQ(find(r, FindingKind::MemoryFragmentation), nullptr);
  const std::string js = to_json(r);
  EXPECT_NE(js.find("\"memory\":{\"present\":true"), std::string::npos);
  EXPECT_NE(js.find("\"memory_peak_bytes\":"), std::string::npos);
}

// A tensor kept across steps: the peak rises every quarter of the steps.
TEST(Memory, GrowthAcrossStepsIsNamed) {
  Builder b = steps(16, 1024.0 * MiB, 8.0 * MiB, 4096.0 * MiB);
  auto r = b.run();
  const Finding* f = find(r, FindingKind::MemoryGrowth);
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("rose in every quarter"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("8.0 MiB a step"), std::string::npos) << f->message;
  EXPECT_EQ(f->knob, "");
  // Flat with noise: no finding.
  Builder flat;
  for (int i = 0; i < 16; ++i) {
    flat.range("step", i * 100, i * 100 + 90, i);
    counter(flat, names::kDevicePeak, i * 100 + 91, double((1000 + (i % 3) * 5) * MiB));
  }
  EXPECT_EQ(find(flat.run(), FindingKind::MemoryGrowth), nullptr);
  // The host's resident set rising is no finding: recording grows it by itself.
  Builder host;
  for (int i = 0; i < 16; ++i) {
    host.range("step", i * 100, i * 100 + 90, i);
    counter(host, names::kHostRss, i * 100 + 91, double((1000 + 6 * i) * MiB));
  }
  const auto hr = host.run();
  EXPECT_EQ(find(hr, FindingKind::MemoryGrowth), nullptr);
  EXPECT_EQ(hr.steps.back().memory_peak_bytes, 1090 * MiB);  // still drawn and listed per step
}

// Reserved far above allocated, or cudaMalloc retries: fragmentation.
TEST(Memory, FragmentationIsNamed) {
  Builder wasteful = steps(8, 4096.0 * MiB, 0, 12288.0 * MiB);
  const Finding* f = find(wasteful.run(), FindingKind::MemoryFragmentation);
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("reserved 12.00 GiB"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("expandable_segments"), std::string::npos) << f->message;
  Builder retried = steps(8, 4096.0 * MiB, 0, 4500.0 * MiB, 3);
  const Finding* g = find(retried.run(), FindingKind::MemoryFragmentation);
  ASSERT_NE(g, nullptr);
  EXPECT_NE(g->message.find("3 cudaMalloc retries"), std::string::npos) << g->message;
}

// torch.profiler's profile_memory=True writes an instant per allocation with the allocator's totals: read as
// the same counters (device allocated and reserved; the host's allocations), not as thousands of markers.
TEST(Memory, KinetoMemoryEventsBecomeTheCounters) {
  const std::string json = R"({"schemaVersion": 1, "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 7, "tid": 7, "ts": 0, "dur": 100},
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 7, "tid": 7, "ts": 10, "s": "t",
     "args": {"Total Reserved": 2097152, "Total Allocated": 1048576, "Bytes": 1048576, "Device Type": 1, "Device Id": 0, "Addr": 1}},
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 7, "tid": 7, "ts": 20, "s": "t",
     "args": {"Total Reserved": 4194304, "Total Allocated": 3145728, "Bytes": 2097152, "Device Type": 1, "Device Id": 0, "Addr": 2}},
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 7, "tid": 7, "ts": 30, "s": "t",
     "args": {"Total Reserved": 0, "Total Allocated": 65536, "Bytes": 65536, "Device Type": 0, "Device Id": -1, "Addr": 3}},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 7, "tid": 7, "ts": 100, "dur": 100}
  ]})";
  auto t = parse_trace(json, "memory.json");
  ASSERT_TRUE(t) << t.error().to_string();
  size_t instants = 0;
  for (const Track& tr : t.value()->tracks())
    for (const Event& e : tr.events()) instants += e.kind == EventKind::Instant;
  EXPECT_EQ(instants, 0u);
  auto r = analyze(*t.value());
  ASSERT_TRUE(r.memory.present);
  EXPECT_EQ(r.memory.device_allocated_peak, 3145728);
  EXPECT_EQ(r.memory.device_reserved_peak, 4194304);
  EXPECT_EQ(r.memory.host_allocated_peak, 65536);
  ASSERT_GE(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].memory_peak_bytes, 3145728);
}

TEST(Memory, ATraceWithoutCountersSaysNothing) {
  Builder b;
  b.range("step", 0, 100, 0);
  auto r = b.run();
  EXPECT_FALSE(r.memory.present);
  EXPECT_EQ(r.steps[0].memory_peak_bytes, -1);
}
