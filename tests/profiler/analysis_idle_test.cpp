// The idle classes of docs/analysis.md: cross-stream / event waits with their evidence, launch gaps whose
// host time the profiler did not record, and what stays "other" — each on a small trace built by hand with
// the expected numbers worked out in the comments, then on the real Kineto traces of tests/testdata.
#include <gtest/gtest.h>

#include <string>

#include "profiler/analysis.h"
#include "profiler/trace.h"
#include "profiler/trace_io.h"
#include "analysis_test_util.h"
#include "trace_builder.h"

namespace tb::prof {
namespace {

using test_util::Builder;
using test_util::us;
using test_util::find;
using test_util::has_note;
using test_util::load;

// Three steps of 100 us. In each, A (stream 20) runs [s, s+40]; the host calls cudaStreamWaitEvent at s+2
// and launches B to stream 7 at s+5; B starts only at s+50, when stream 20's work is long queued: idle
// [s+40, s+50] is B waiting on stream 20, not the host (B's launch returned at s+6) and not stream 7 (B's
// previous work ended at s, or never ran).
TEST(AnalysisIdle, CrossStreamWaitIsNamedWithItsEvidence) {
  Builder b;
  for (int i = 0; i < 3; ++i) {
    const int64_t s = i * 100;
    b.range("ProfilerStep#1", s, s + 100, i);
    b.kernel(s, s + 40, s, 20, "A");
    b.runtime("cudaStreamWaitEvent", s + 2, s + 3);
    b.kernel(s + 50, s + 100, s + 5, 7, "B");
  }
  auto r = b.run();
  ASSERT_EQ(r.window.length(), 300 * us);
  EXPECT_EQ(r.gpu_busy_ns, 270 * us);  // [0,40] [50,140] [150,240] [250,300]
  EXPECT_EQ(r.event_wait_ns, 30 * us);  // [40,50] [140,150] [240,250]
  EXPECT_EQ(r.event_wait_count, 3u);
  EXPECT_EQ(r.launch_gap_ns, 0);
  EXPECT_EQ(r.other_idle_ns, 0);
  EXPECT_EQ(r.gpu_busy_ns + idle_total(r), r.window.length());
  ASSERT_EQ(r.event_waits.size(), 3u);
  // The second: B_1's stream last ran B_0 (launched at 5), so the wait that holds it is the one between 5
  // and B_1's launch at 105: the call at 102.
  const EventWait& w = r.event_waits[1];
  EXPECT_EQ(w.idle.t0, 140 * us);
  EXPECT_EQ(w.idle.t1, 150 * us);
  EXPECT_EQ(w.stream, 7);
  EXPECT_EQ(w.after_stream, 20);
  EXPECT_EQ(w.wait_ns, 102 * us);
  EXPECT_EQ(w.wait, "cudaStreamWaitEvent");
  EXPECT_EQ(w.work, "B");
  EXPECT_EQ(w.event_record, -1);  // a host call does not name the event record
  EXPECT_EQ(r.event_waits[0].wait_ns, 2 * us);  // B_0: first on its stream, the call at 2
  for (const auto& s : r.steps) EXPECT_EQ(s.event_wait_ns, 10 * us) << s.index;
  // 30 of 300 us: a finding bounded at 1 / 0.9, with the largest interval as evidence.
  const Finding* f = find(r, FindingKind::EventWait);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->id, "event_wait");
  EXPECT_NEAR(f->share, 0.1, 1e-12);
  EXPECT_NEAR(f->max_speedup, 1.0 / 0.9, 1e-12);
  EXPECT_TRUE(f->bounded);
  EXPECT_EQ(f->evidence.length(), 10 * us);
  EXPECT_TRUE(has_note(r, "cross-stream waits: 0.030 ms of GPU idle (100.0% of the idle) in 3 intervals"));
  const std::string j = to_json(r);
  EXPECT_NE(j.find("\"event_wait_us\":30"), std::string::npos) << j.substr(0, 600);
  EXPECT_NE(j.find("\"other_share_of_idle\":0"), std::string::npos);
  EXPECT_NE(j.find("\"wait\":\"cudaStreamWaitEvent\",\"wait_us\":102"), std::string::npos);
}

// Queued work that waited with nothing recorded holding it stays "other"; a launch call still open when
// the GPU went idle is the host being late.
TEST(AnalysisIdle, WhatStaysOtherAndTheOpenLaunchCall) {
  Builder b;
  b.kernel(0, 40, 0, 20, "A");
  b.kernel(50, 100, 5, 7, "B");    // queued at 6, stream 7 free, A ended on stream 20: no wait recorded
  b.kernel(105, 150, 60, 7, "C");  // queued at 61 behind B on its own stream, started 5 us after it
  // D: the launch call runs [148, 160]; D starts at 158, the GPU idle since 150.
  b.runtime("cudaLaunchKernel", 148, 160, 900);
  Event d;
  d.kind = EventKind::Kernel;
  d.name = b.t.intern("D");
  d.start_ns = 158 * us;
  d.end_ns = 170 * us;
  d.correlation = 900;
  b.t.add_event(b.t.track_for(TrackKind::GpuStream, 0, 7), d);
  auto r = b.run();
  // No steps: window [0,170], busy 40 + 50 + 45 + 12 = 147, idle 23.
  EXPECT_EQ(r.gpu_busy_ns, 147 * us);
  EXPECT_EQ(r.other_idle_ns, 15 * us);  // [40,50] + [100,105]
  EXPECT_EQ(r.event_wait_ns, 0);
  EXPECT_EQ(r.launch_gap_ns, 8 * us);   // [150,158]: the call began at 148 but had not returned
  EXPECT_EQ(r.launch_gap_count, 1u);
  EXPECT_EQ(r.gpu_busy_ns + idle_total(r), r.window.length());
  // 15 of 23 us: the share is stated.
  EXPECT_TRUE(has_note(r, "GPU idle with no named cause (other): 0.015 ms, 65.2% of the idle; the named causes "
                          "explain 34.8%"));
  EXPECT_NE(to_json(r).find("\"other_share_of_idle\":0.652"), std::string::npos);
}

// Kineto's "Stream Wait Event" (cuda_sync) names the waiting stream and the event record's correlation id;
// "Ev Idx" numbers the events, so a file that skips numbers is a sampled one. Times in us.
TEST(AnalysisIdle, KinetoStreamWaitRecordAndSampledTrace) {
  const char* json = R"({"traceEvents":[
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1000,"dur":1,
     "args":{"correlation":10,"Ev Idx":0}},
    {"ph":"X","cat":"kernel","name":"A","pid":0,"tid":20,"ts":1000,"dur":40,
     "args":{"device":0,"stream":20,"correlation":10,"Ev Idx":1}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaEventRecord","pid":1,"tid":1,"ts":1002,"dur":1,
     "args":{"correlation":11,"Ev Idx":2}},
    {"ph":"X","cat":"cuda_sync","name":"Stream Wait Event","pid":0,"tid":7,"ts":1003,"dur":1,
     "args":{"device":0,"stream":7,"wait_on_stream":20,"wait_on_cuda_event_record_corr_id":11,"correlation":12,
             "Ev Idx":3}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1005,"dur":1,
     "args":{"correlation":13,"Ev Idx":9}},
    {"ph":"X","cat":"kernel","name":"B","pid":0,"tid":7,"ts":1050,"dur":10,
     "args":{"device":0,"stream":7,"correlation":13,"Ev Idx":10}}]})";
  auto t = parse_trace(json);
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  const Trace& trace = *t.value();
  // The record keeps its target: arg = the event record's correlation id, detail = the stream.
  bool seen = false;
  for (const Track& tr : trace.tracks())
    for (const Event& e : tr.events())
      if (e.kind == EventKind::Sync) {
        seen = true;
        EXPECT_EQ(e.arg, 11);
        EXPECT_EQ(trace.name(e.detail), "waits on stream 20, event recorded by correlation 11");
      }
  EXPECT_TRUE(seen);
  EXPECT_EQ(trace.meta().extra.at("ev_idx_events"), "6");
  EXPECT_EQ(trace.meta().extra.at("ev_idx_span"), "11");  // 0..10
  auto r = analyze(trace);
  // Window [1000,1060]: idle [1040,1050] is B (queued at 1006) waiting on stream 20's event.
  EXPECT_EQ(r.event_wait_ns, 10 * us);
  ASSERT_EQ(r.event_waits.size(), 1u);
  EXPECT_EQ(r.event_waits[0].wait, "Stream Wait Event");
  EXPECT_EQ(r.event_waits[0].event_record, 11);
  EXPECT_EQ(r.event_waits[0].wait_ns, 1003 * us);
  EXPECT_EQ(r.event_waits[0].after_stream, 20);
  EXPECT_TRUE(has_note(r, "this file holds 6 of the 11 events its profiler numbered"));
}

// Task 2: the host was late to launch, but the launching thread recorded nothing for most of the gap: that
// part is "host time not recorded", never blamed on an op. Steps contain everything and do not count.
TEST(AnalysisIdle, LaunchGapWithNoHostTimeRecorded) {
  Builder b;
  const uint32_t cpu2 = b.t.track_for(TrackKind::CpuThread, 1, 2, "second");
  b.range("ProfilerStep#1", 0, 100, 1);
  b.kernel(0, 10, 0, 7, "k1");     // launch [0,1]
  b.range("aten::op", 20, 30);     // the training thread's only op in the gap
  b.kernel(52, 60, 50, 7, "k2");   // launch [50,51]: idle [10,52] is a launch gap
  // k3 is launched by the second thread, which sits in an op through the whole gap [60,78].
  b.range("aten::other", 60, 80, kNoArg, cpu2);
  Event l;
  l.kind = EventKind::Runtime;
  l.name = b.t.intern("cudaLaunchKernel");
  l.start_ns = 75 * us;
  l.end_ns = 76 * us;
  l.correlation = 777;
  b.t.add_event(cpu2, l);
  Event k;
  k.kind = EventKind::Kernel;
  k.name = b.t.intern("k3");
  k.start_ns = 78 * us;
  k.end_ns = 90 * us;
  k.correlation = 777;
  b.t.add_event(b.t.track_for(TrackKind::GpuStream, 0, 7), k);
  auto r = b.run();
  EXPECT_EQ(r.launch_gap_ns, 60 * us);  // [10,52] + [60,78]
  EXPECT_EQ(r.launch_gap_count, 2u);
  // [10,52] minus what the launching thread recorded ([20,30] op, [50,51] launch): [10,20] [30,50] [51,52].
  EXPECT_EQ(r.launch_gap_unrecorded_ns, 31 * us);
  EXPECT_EQ(r.launch_gap_unrecorded_count, 1u);
  EXPECT_EQ(r.launch_gap_unrecorded_largest.t0, 30 * us);
  EXPECT_EQ(r.launch_gap_unrecorded_largest.t1, 50 * us);
  EXPECT_EQ(r.tail_ns, 10 * us);
  EXPECT_EQ(r.gpu_busy_ns + idle_total(r), r.window.length());
  const Finding* f = find(r, FindingKind::LaunchGap);
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("0.031 ms of it with no host time recorded on the launching thread"), std::string::npos)
      << f->message;
  EXPECT_TRUE(has_note(r, "host time not recorded: 0.031 ms of the 0.060 ms launch gap (51.7%, 1 gaps)"));
  EXPECT_NE(to_json(r).find("\"unrecorded_us\":31"), std::string::npos);
}

// nccl_sampled_rank0 holds 2402 of the 238287 events Kineto numbered (Ev Idx 27169..265455): ~1% of the
// recording. Its "other" idle (queued work on a free stream that started up to 32 ms late, with no wait,
// no kernel and no host call recorded around it) is the missing events; the note says so, nothing guesses.
TEST(AnalysisIdle, RealSampledTraceSaysWhyOtherIsLarge) {
  auto t = load("kineto_nccl_sampled_rank0.json.gz");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->meta().extra.at("ev_idx_events"), "2402");
  EXPECT_EQ(t->meta().extra.at("ev_idx_span"), "238287");
  auto r = analyze(*t);
  EXPECT_EQ(r.event_wait_ns, 0);  // the file holds no wait call and no cuda_sync record
  EXPECT_GT(r.other_idle_ns, r.gpu_idle_ns * 4 / 10);
  EXPECT_TRUE(has_note(r, "this file holds 2402 of the 238287 events"));
  EXPECT_TRUE(has_note(r, "most likely the events this file lacks"));
  EXPECT_EQ(r.gpu_busy_ns + idle_total(r), r.window.length());
}

}  // namespace
}  // namespace tb::prof
