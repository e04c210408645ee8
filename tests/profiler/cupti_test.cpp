// CUPTI collector pieces that need no GPU: record decoding from activity records crafted in memory, the clock
// alignment math, API-name handling, and the failure path (no driver / library not found) on this machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "profiler/analysis.h"
#include "profiler/cupti_collector.h"
#include "profiler/recorder.h"
#include "profiler/trace.h"

#if defined(TUNEBENCH_HAVE_CUPTI)
#include <cupti.h>
#endif

namespace tb::prof {
namespace {

TEST(ClockAlignment, NoSampleIsIdentityOneSampleIsOffset) {
  ClockAlignment c;
  EXPECT_EQ(c.to_mono(12345), 12345);
  c.add_sample(1000, 5000, 1010);  // mid 1005: cupti runs 3995 ns ahead
  EXPECT_EQ(c.last_offset_ns(), 3995);
  EXPECT_EQ(c.last_uncertainty_ns(), 5);
  EXPECT_EQ(c.to_mono(6000), 2005);
  EXPECT_EQ(c.to_mono(0), -3995);
}

TEST(ClockAlignment, InterpolatesDriftBetweenSamples) {
  ClockAlignment c;
  c.add_sample(0, 1000000, 0);          // offset 1,000,000 at cupti 1e6
  c.add_sample(2000000, 3000100, 2000000);  // offset 1,000,100 at cupti 3.0001e6 (100 ns drift)
  EXPECT_EQ(c.sample_count(), 2u);
  EXPECT_EQ(c.to_mono(1000000), 0);
  EXPECT_EQ(c.to_mono(3000100), 2000000);
  // Halfway (by CUPTI time): offset halfway.
  EXPECT_EQ(c.to_mono(2000050), 2000050 - 1000050);
  // Outside: nearest sample's offset.
  EXPECT_EQ(c.to_mono(500000), 500000 - 1000000);
  EXPECT_EQ(c.to_mono(4000000), 4000000 - 1000100);
  // Samples added out of order are kept sorted.
  ClockAlignment d;
  d.add_sample(2000000, 3000100, 2000000);
  d.add_sample(0, 1000000, 0);
  EXPECT_EQ(d.to_mono(2000050), c.to_mono(2000050));
}

// A bracket stretched by preemption (its midpoint 150 ns early) 100 ns after a precise sample mapped the
// CUPTI times between them backwards: a kernel ending at 1099 came out before one starting at 1000. The wide
// sample goes; the mapping keeps every order, with samples in any order and on either side.
TEST(ClockAlignment, ANoisySampleNeverReordersCloseTimes) {
  for (int order = 0; order < 2; ++order) {
    ClockAlignment c;
    auto precise = [&] { c.add_sample(999, 1000, 1001); };      // offset 0, +-1 ns
    auto noisy = [&] { c.add_sample(400, 1100, 1500); };        // mid 950: offset 150, +-550 ns
    if (order == 0) precise(), noisy();
    else noisy(), precise();
    c.add_sample(99999, 100000, 100001);                        // offset 0 again later
    int64_t prev = c.to_mono(900);
    for (int64_t t = 901; t <= 101000; t += 7) {
      const int64_t m = c.to_mono(t);
      ASSERT_GE(m, prev) << "cupti " << t << " order " << order;
      prev = m;
    }
    EXPECT_EQ(c.to_mono(1099), 1099);  // the precise samples decide
  }
  // Many samples with jitter of either sign: still never decreasing.
  ClockAlignment d;
  uint64_t x = 12345;
  for (int i = 0; i < 400; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const int64_t t = int64_t(i) * 50 + int64_t(x >> 60);  // samples 50 ns apart
    const int64_t jitter = int64_t((x >> 20) % 400) - 200;  // a bracket off by up to 200 ns
    d.add_sample(t + jitter - int64_t((x >> 40) % 300), t, t + jitter + int64_t((x >> 30) % 300));
  }
  int64_t prev = d.to_mono(0);
  for (int64_t t = 1; t < 21000; ++t) {
    const int64_t m = d.to_mono(t);
    ASSERT_GE(m, prev) << "cupti " << t;
    prev = m;
  }
}

TEST(CuptiNames, StripVersionAndSyncSet) {
  EXPECT_EQ(strip_api_version("cudaStreamSynchronize_v3020"), "cudaStreamSynchronize");
  EXPECT_EQ(strip_api_version("cudaLaunchKernel"), "cudaLaunchKernel");
  EXPECT_EQ(strip_api_version("cuMemcpyHtoD_v2"), "cuMemcpyHtoD");
  EXPECT_EQ(strip_api_version("my_var"), "my_var");
  EXPECT_EQ(strip_api_version(nullptr), "");
  EXPECT_TRUE(is_blocking_sync_api("cudaDeviceSynchronize"));
  EXPECT_TRUE(is_blocking_sync_api("cudaMemcpy"));
  EXPECT_TRUE(is_blocking_sync_api("cuCtxSynchronize"));
  EXPECT_TRUE(is_blocking_sync_api("cuMemcpyDtoH_v2"));
  EXPECT_FALSE(is_blocking_sync_api("cudaMemcpyAsync"));
  EXPECT_FALSE(is_blocking_sync_api("cudaLaunchKernel"));
}

TEST(CuptiKinds, NamesParseToBitsAndBack) {
  // By default the GPU's work and, from the callback API, the launches and syncs: no record per API call.
  EXPECT_EQ(parse_cupti_kinds("").value(), uint32_t(kCuptiDefault));
  EXPECT_EQ(parse_cupti_kinds("default").value(), uint32_t(kCuptiDefault));
  EXPECT_EQ(uint32_t(kCuptiDefault) & uint32_t(kCuptiRuntime | kCuptiDriver | kCuptiSync | kCuptiExternal | kCuptiOverhead), 0u);
  EXPECT_EQ(cupti_kinds_text(kCuptiDefault), "kernel,memcpy,memset,callbacks");
  EXPECT_EQ(parse_cupti_kinds(cupti_kinds_text(kCuptiDefault)).value(), uint32_t(kCuptiDefault));
  EXPECT_EQ(parse_cupti_kinds("all").value(), uint32_t(kCuptiAll));
  EXPECT_EQ(parse_cupti_kinds("kernel").value(), uint32_t(kCuptiKernel));
  EXPECT_EQ(parse_cupti_kinds(" kernel, runtime ,memcpy").value(), uint32_t(kCuptiKernel | kCuptiRuntime | kCuptiMemcpy));
  EXPECT_EQ(cupti_kinds_text(kCuptiKernel | kCuptiRuntime | kCuptiMemcpy), "kernel,memcpy,runtime");
  EXPECT_EQ(cupti_kinds_text(kCuptiAll), "all");
  // The state queries (cudaGetDevice, ...) only when named; "queries" alone means every kind with them.
  EXPECT_EQ(parse_cupti_kinds("all,queries").value(), uint32_t(kCuptiAll | kCuptiQueries));
  EXPECT_EQ(parse_cupti_kinds("queries").value(), uint32_t(kCuptiAll | kCuptiQueries));
  EXPECT_EQ(parse_cupti_kinds("runtime,queries").value(), uint32_t(kCuptiRuntime | kCuptiQueries));
  EXPECT_EQ(cupti_kinds_text(kCuptiAll | kCuptiQueries), "all,queries");
  EXPECT_EQ(cupti_kinds_text(kCuptiRuntime | kCuptiQueries), "runtime,queries");
  for (uint32_t k = 1; k < kCuptiAll; k = k * 3 + 1) EXPECT_EQ(parse_cupti_kinds(cupti_kinds_text(k)).value(), k) << k;
  auto bad = parse_cupti_kinds("kernel,kernels");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("'kernels'"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("known: kernel, memcpy"), std::string::npos) << bad.error().message;
}

#if defined(TUNEBENCH_HAVE_CUPTI)

const char* fake_api_name(bool runtime, uint32_t cbid) {
  if (runtime && cbid == 211) return "cudaLaunchKernel_v7000";
  if (runtime && cbid == 131) return "cudaStreamSynchronize_v3020";
  return nullptr;
}

TEST(CuptiDecoder, DecodesCraftedRecords) {
  CuptiDecoder d(/*pid=*/4242);
  d.set_api_name_fn(&fake_api_name);
  ClockAlignment clk;
  clk.add_sample(0, 1000, 0);  // cupti = mono + 1000
  d.set_clock(clk);

  CUpti_ActivityAPI launch;
  std::memset(&launch, 0, sizeof launch);
  launch.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  launch.cbid = 211;
  launch.start = 11000;
  launch.end = 12000;
  launch.processId = 4242;
  launch.threadId = 17;
  launch.correlationId = 55;
  d.decode(&launch);

  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 21000;
  k.end = 51000;
  k.deviceId = 0;
  k.streamId = 7;
  k.correlationId = 55;
  k.gridX = 4;
  k.gridY = k.gridZ = 1;
  k.blockX = 256;
  k.blockY = k.blockZ = 1;
  k.name = "volta_sgemm_128x64_nn";
  d.decode(&k);

  CUpti_ActivityKernel10 k2 = k;  // a second kernel on another stream, overlapping
  k2.streamId = 13;
  k2.start = 41000;
  k2.end = 61000;
  k2.correlationId = 56;  // no launch record: no flow
  d.decode(&k2);

  CUpti_ActivityMemcpy6 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.bytes = 4096;
  m.start = 61000;
  m.end = 62000;
  m.streamId = 7;
  m.correlationId = 57;
  d.decode(&m);

  CUpti_ActivityMemset4 ms;
  std::memset(&ms, 0, sizeof ms);
  ms.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  ms.bytes = 64;
  ms.start = 62000;
  ms.end = 62500;
  ms.streamId = 7;
  d.decode(&ms);

  CUpti_ActivityAPI sync_call = launch;
  sync_call.cbid = 131;
  sync_call.start = 52000;
  sync_call.end = 60000;
  sync_call.correlationId = 58;
  d.decode(&sync_call);

  CUpti_ActivitySynchronization2 s;
  std::memset(&s, 0, sizeof s);
  s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  s.start = 52000;
  s.end = 60000;
  s.streamId = 7;
  s.correlationId = 58;
  d.decode(&s);

  CUpti_ActivityExternalCorrelation x;
  std::memset(&x, 0, sizeof x);
  x.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  x.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;
  x.externalId = 9001;
  x.correlationId = 55;
  d.decode(&x);

  CUpti_ActivityKernel10 bad = k;
  bad.start = 5;
  bad.end = 1;  // end < start: skipped
  d.decode(&bad);

  CUpti_ActivityAPI unknown_api = launch;
  unknown_api.cbid = 999;
  unknown_api.correlationId = 60;
  unknown_api.start = 70000;
  unknown_api.end = 70001;
  d.decode(&unknown_api);

  CUpti_Activity other;
  other.kind = CUPTI_ACTIVITY_KIND_MARKER;
  d.decode(&other);

  EXPECT_EQ(d.stats().kernels, 2u);
  EXPECT_EQ(d.stats().runtime, 3u);
  EXPECT_EQ(d.stats().memcpys, 1u);
  EXPECT_EQ(d.stats().memsets, 1u);
  EXPECT_EQ(d.stats().syncs, 1u);
  EXPECT_EQ(d.stats().external_correlations, 1u);
  EXPECT_EQ(d.stats().invalid, 1u);
  EXPECT_EQ(d.stats().unknown, 1u);

  auto t = d.take();
  ASSERT_TRUE(t);
  // Tracks: CPU thread 17 of pid 4242, GPU 0 streams 7 and 13.
  const Track* cpu = nullptr;
  const Track* s7 = nullptr;
  const Track* s13 = nullptr;
  for (const Track& tr : t->tracks()) {
    if (tr.kind() == TrackKind::CpuThread && tr.pid() == 4242 && tr.tid() == 17) cpu = &tr;
    if (tr.kind() == TrackKind::GpuStream && tr.tid() == 7) s7 = &tr;
    if (tr.kind() == TrackKind::GpuStream && tr.tid() == 13) s13 = &tr;
  }
  ASSERT_TRUE(cpu && s7 && s13);
  ASSERT_EQ(cpu->events().size(), 3u);
  EXPECT_EQ(t->name(cpu->events()[0].name), "cudaLaunchKernel");
  EXPECT_EQ(cpu->events()[0].start_ns, 10000);  // aligned: cupti - 1000
  EXPECT_EQ(cpu->events()[0].arg, 9001);        // external id attached
  EXPECT_EQ(t->name(cpu->events()[1].name), "cudaStreamSynchronize");
  EXPECT_TRUE(cpu->events()[1].flags & kFlagBlockingSync);
  EXPECT_EQ(t->name(cpu->events()[2].name), "cudaRuntime#999");
  const Event& ke = s7->events()[0];
  EXPECT_EQ(ke.kind, EventKind::Kernel);
  EXPECT_EQ(ke.start_ns, 20000);
  EXPECT_EQ(ke.end_ns, 50000);
  EXPECT_EQ(t->name(ke.name), "volta_sgemm_128x64_nn");
  EXPECT_NE(t->name(ke.detail).find("grid [4,1,1] block [256,1,1]"), std::string::npos);
  ASSERT_EQ(t->flows().size(), 1u);  // 55 only: 56 has no launch, 57 (memcpy) none either
  EXPECT_EQ(t->flows()[0].correlation, 55u);
  bool memcpy_ok = false, sync_row = false;
  for (const Event& e : s7->events()) {
    if (e.kind == EventKind::Memcpy) memcpy_ok = e.memcpy_kind() == MemcpyKind::HtoD && e.arg == 4096;
    if (e.kind == EventKind::Sync) sync_row = t->name(e.name) == "Stream Sync";
  }
  EXPECT_TRUE(memcpy_ok);
  EXPECT_TRUE(sync_row);

  // The decoded trace analyses like any other: two overlapping streams, one host sync point.
  auto r = analyze(*t);
  EXPECT_EQ(r.kernel_count, 2u);
  EXPECT_EQ(r.gpu_busy_ns, (60000 - 20000) + (61500 - 60000));
  EXPECT_EQ(r.sync_count, 1u);
  EXPECT_EQ(r.sync_ns, 8000);
}

TEST(CuptiCollector, FailsCleanlyWithReason) {
  auto& c = CuptiCollector::instance();
  // 1) A library that does not exist.
  CuptiCollector::Options o;
  o.library = "libcupti_does_not_exist.so.13";
  Status s = c.start(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(c.state(), "off");
  EXPECT_NE(c.reason().find("library not found"), std::string::npos) << c.reason();
  EXPECT_EQ(s.error().to_string().find('\n'), std::string::npos);
  // A misspelt activity kind is refused before anything is loaded, with the names it knows.
  CuptiCollector::Options bad;
  bad.kinds = "kernel,drivers";
  Status sk = c.start(bad);
  ASSERT_FALSE(sk.ok());
  EXPECT_NE(c.reason().find("unknown CUPTI activity kind 'drivers'"), std::string::npos) << c.reason();
  // 2) The real library (present here with the CUDA toolkit, but no driver/GPU): it must come up off with a
  //    reason, or on when a GPU is there.
  Status s2 = c.start();
  if (s2.ok()) {
    EXPECT_EQ(c.state(), "on");
    c.stop();
  } else {
    EXPECT_EQ(c.state(), "off");
    EXPECT_FALSE(c.reason().empty());
    std::printf("collector off here: %s\n", c.reason().c_str());
  }
  // Either way a recorded (CPU-only) trace records the state and why.
  TraceMetadata m;
  c.annotate(m);
  EXPECT_FALSE(m.collector_state.empty());
  auto t = c.collect();
  ASSERT_TRUE(t);
  Recorder::instance().start();
  { TB_RANGE("step"); }
  Recorder::instance().stop();
  auto rec = Recorder::instance().collect();
  EXPECT_EQ(rec->meta().collector_state, m.collector_state);
  EXPECT_EQ(rec->meta().collector_reason, m.collector_reason);
  if (!s2.ok()) {
    // The analysis turns it into a finding (the GUI's banner).
    auto a = analyze(*rec);
    ASSERT_FALSE(a.findings.empty());
    EXPECT_EQ(a.findings[0].kind, FindingKind::CollectorOff);
  }
}

// The callback API's launches and syncs (kCuptiCallbacks): CUPTI calls the callback at each call's entry and
// exit with the same CUpti_CallbackData; the log keeps the call as the activity record it stands for, and the
// decoder makes of it what a RUNTIME record gives: the launch on its thread, linked to its kernel by CUPTI's
// correlation id, and a stream sync flagged as blocking.
TEST(CuptiCallbacks, CallsBecomeTheEventsOfTheirActivityRecords) {
  static uint64_t now = 0;
  ApiCallLog log([] { return now; });
  auto call = [&](bool runtime, uint32_t cbid, uint32_t correlation, uint64_t t0, uint64_t t1) {
    uint64_t slot = 0;
    int ret = 0;
    CUpti_CallbackData d;
    std::memset(&d, 0, sizeof d);
    d.correlationData = &slot;
    d.correlationId = correlation;
    d.functionReturnValue = &ret;
    d.callbackSite = CUPTI_API_ENTER;
    now = t0;
    log.on_call(runtime, cbid, &d);
    d.callbackSite = CUPTI_API_EXIT;
    now = t1;
    log.on_call(runtime, cbid, &d);
  };
  call(true, 211, 55, 11000, 12000);  // fake_api_name: 211 is cudaLaunchKernel
  call(true, 131, 58, 52000, 60000);  // 131 is cudaStreamSynchronize
  // An exit whose entry came before the subscription has no start: no call.
  {
    uint64_t slot = 0;
    CUpti_CallbackData d;
    std::memset(&d, 0, sizeof d);
    d.correlationData = &slot;
    d.callbackSite = CUPTI_API_EXIT;
    log.on_call(true, 211, &d);
  }
  const std::vector<ApiCall> calls = log.drain();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].start, 11000u);
  EXPECT_EQ(calls[0].end, 12000u);
  EXPECT_EQ(calls[0].correlation, 55u);
  EXPECT_GT(calls[0].thread, 0u);
  EXPECT_TRUE(log.drain().empty());  // drained once

  CuptiDecoder dec(/*pid=*/4242);
  dec.set_api_name_fn(&fake_api_name);
  ApiCallLog::replay(calls, 4242, dec);
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 21000;
  k.end = 51000;
  k.streamId = 7;
  k.correlationId = 55;
  k.name = "volta_sgemm_128x64_nn";
  dec.decode(&k);
  EXPECT_EQ(dec.stats().runtime, 2u);
  auto t = dec.take();
  const Event* launch = nullptr;
  const Event* sync = nullptr;
  const Event* kernel = nullptr;
  for (const Track& tr : t->tracks())
    for (const Event& e : tr.events()) {
      const std::string n(t->name(e.name));
      if (n == "cudaLaunchKernel") launch = &e;
      if (n == "cudaStreamSynchronize") sync = &e;
      if (e.kind == EventKind::Kernel) kernel = &e;
    }
  ASSERT_NE(launch, nullptr);
  ASSERT_NE(sync, nullptr);
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(launch->correlation, kernel->correlation);
  EXPECT_TRUE(sync->flags & kFlagBlockingSync);
  EXPECT_FALSE(launch->flags & kFlagBlockingSync);
  // The launches that matter are in the lists the collector subscribes to; the state queries are not.
  const auto& ids = ApiCallLog::runtime_ids();
  EXPECT_NE(std::find(ids.begin(), ids.end(), uint32_t(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000)), ids.end());
  EXPECT_EQ(std::find(ids.begin(), ids.end(), uint32_t(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020)), ids.end());
  EXPECT_FALSE(ApiCallLog::driver_ids().empty());
}

// A runtime call makes its work through the driver, and CUPTI reports that driver call with the runtime call's
// correlation id (on an H100 every cudaLaunchKernel came with a cuLaunchKernel of the same id): the runtime
// record stands for the call, the nested driver one is not kept. A driver call of its own (cuBLAS, Triton) is.
TEST(CuptiCallbacks, ARuntimeCallsOwnDriverCallIsOneCall) {
  static uint64_t now = 0;
  ApiCallLog log([] { return ++now; });
  struct Site {
    uint64_t slot = 0;
    int ret = 0;
    CUpti_CallbackData d;
  };
  auto site = [](Site& s, uint32_t correlation) {
    std::memset(&s.d, 0, sizeof s.d);
    s.d.correlationData = &s.slot;
    s.d.correlationId = correlation;
    s.d.functionReturnValue = &s.ret;
  };
  auto enter = [&](Site& s, bool runtime, uint32_t cbid) {
    s.d.callbackSite = CUPTI_API_ENTER;
    log.on_call(runtime, cbid, &s.d);
  };
  auto exit_ = [&](Site& s, bool runtime, uint32_t cbid) {
    s.d.callbackSite = CUPTI_API_EXIT;
    log.on_call(runtime, cbid, &s.d);
  };
  Site rt, drv, own;
  site(rt, 70);
  site(drv, 70);  // the runtime's cuLaunchKernel: the same id
  enter(rt, true, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
  enter(drv, false, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
  exit_(drv, false, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
  exit_(rt, true, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
  site(own, 71);  // cuBLAS launching through the driver, no runtime call open
  enter(own, false, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
  exit_(own, false, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
  // An exit whose entry came before the subscription leaves nothing open: the next driver call is kept.
  Site late, after;
  site(late, 72);
  exit_(late, true, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
  site(after, 73);
  enter(after, false, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
  exit_(after, false, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
  const std::vector<ApiCall> calls = log.drain();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_TRUE(calls[0].runtime);
  EXPECT_EQ(calls[0].correlation, 70u);
  EXPECT_FALSE(calls[1].runtime);
  EXPECT_EQ(calls[1].correlation, 71u);
  EXPECT_EQ(calls[2].correlation, 73u);
}

// At its cap the log counts what it could not keep.
TEST(CuptiCallbacks, ACappedLogCountsWhatItDropped) {
  ApiCallLog log([] { return uint64_t(5); }, /*max_calls=*/1);
  for (int i = 0; i < 3; ++i) {
    uint64_t slot = 0;
    CUpti_CallbackData d;
    std::memset(&d, 0, sizeof d);
    d.correlationData = &slot;
    d.callbackSite = CUPTI_API_ENTER;
    log.on_call(false, 1, &d);
    d.callbackSite = CUPTI_API_EXIT;
    log.on_call(false, 1, &d);
  }
  EXPECT_EQ(log.drain().size(), 1u);
  EXPECT_EQ(log.dropped(), 2u);
}

#else
TEST(CuptiCollector, NotBuilt) {
  auto& c = CuptiCollector::instance();
  EXPECT_FALSE(c.start().ok());
  EXPECT_EQ(c.state(), "not built");
}

#endif

}  // namespace
}  // namespace tb::prof
