// The step lane (profiler/step_lane.h): its boxes, that no analysis takes it for the job, the findings from
// step timings (analysis_lane.cpp) and the export round trip. Times in the lanes built here are in
// microseconds (`us`), steps 10 ms long unless a test says otherwise.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "analysis_test_util.h"
#include "profiler/analysis.h"
#include "profiler/range_names.h"
#include "profiler/ranks.h"
#include "profiler/step_lane.h"
#include "profiler/time_classes.h"
#include "profiler/trace_io.h"
#include "trace_builder.h"

namespace tb::prof {
namespace {

using test_util::Builder;
using test_util::us;

// n steps of `wall` us each, back to back from `t0` us, numbered from 0, a 1 us gap between them; no data wait.
std::vector<LaneStep> steady(int n, int64_t wall = 10'000, int64_t t0 = 0) {
  std::vector<LaneStep> v;
  for (int i = 0; i < n; ++i) {
    LaneStep s;
    s.index = i;
    s.t_ns = (t0 + i * (wall + 1)) * us;
    s.wall_ns = wall * us;
    s.forward_ns = wall / 4 * us;
    s.backward_ns = wall / 2 * us;
    s.optim_ns = wall / 10 * us;
    s.host_rss = int64_t(1) << 30;
    s.device_allocated = int64_t(2) << 30;
    v.push_back(s);
  }
  return v;
}

const Track* between_row(const Trace& t) {
  for (const Track& tr : t.tracks())
    if (tr.kind() == TrackKind::CpuThread && is_step_lane(tr) && tr.tid() == kStepLaneOutsideTid) return &tr;
  return nullptr;
}

const Track* lane_row(const Trace& t) {
  for (const Track& tr : t.tracks())
    if (tr.kind() == TrackKind::CpuThread && is_step_lane(tr) && tr.tid() == kStepLaneTid) return &tr;
  return nullptr;
}

// The lane's row, checked to be where add_step_lane puts it: its pseudo-process, named, drawn first.
const Track* placed_row(const Trace& t) {
  const Track* row = lane_row(t);
  if (!row) return nullptr;
  EXPECT_EQ(row->pid(), kStepLanePid);
  EXPECT_EQ(row->name(), kStepLaneTrackName);
  EXPECT_LT(row->sort_index(), 0);
  const auto name = t.meta().process_names.find(kStepLanePid);
  EXPECT_TRUE(name != t.meta().process_names.end() && name->second == kStepLaneProcessName);
  return row;
}

std::vector<const Event*> named(const Trace& t, const Track& tr, const char* name) {
  std::vector<const Event*> out;
  for (const Event& e : tr.events())
    if (t.name(e.name) == name) out.push_back(&e);
  return out;
}

const Finding* by_id(const AnalysisResult& r, const std::string& id) {
  for (const Finding& f : r.findings)
    if (f.id == id) return &f;
  return nullptr;
}

AnalysisResult analyze_lane(std::vector<LaneStep> steps, std::vector<LaneOutside> outside = {}) {
  Trace t;
  t.meta().extra["tunebench_run"] = "script";  // as `run --script --trace` writes it: the launcher's knobs
  add_step_lane(t, steps, outside, 0);
  t.finalize();
  return analyze(t);
}

TEST(StepLane, DrawsOneBoxPerStepWithItsPhasesLaidEndToEndInside) {
  auto steps = steady(12);
  steps[3].traced = steps[4].traced = true;
  steps[5].data_wait_ns = 2'000 * us;
  steps[6].forward_ns = 0;  // no forward measured: no box for it
  steps[7].backward_ns = 20'000 * us;  // longer than the step: cut at its end
  Trace t;
  const int64_t offset = 5'000'000;
  add_step_lane(t, steps, {}, offset);
  t.finalize();
  const Track* row = placed_row(t);
  ASSERT_NE(row, nullptr);
  const auto boxes = named(t, *row, names::kLaneStep);
  ASSERT_EQ(boxes.size(), 12u);
  for (size_t i = 0; i < boxes.size(); ++i) {
    const Event& b = *boxes[i];
    EXPECT_EQ(b.arg, int64_t(i));
    EXPECT_EQ(b.depth, 0);
    EXPECT_EQ(b.start_ns, steps[i].t_ns + offset);
    EXPECT_EQ(b.duration_ns(), steps[i].wall_ns);
    EXPECT_EQ(b.detail != kNoName && t.name(b.detail) == names::kLaneDetailed, steps[i].traced) << i;
  }
  // Phases: inside their step, one after the other from its start.
  for (const Event& e : row->events()) {
    if (t.name(e.name) == names::kLaneStep) continue;
    EXPECT_EQ(e.depth, 1) << t.name(e.name);
    const auto home = std::find_if(boxes.begin(), boxes.end(),
                                   [&](const Event* b) { return e.start_ns >= b->start_ns && e.end_ns <= b->end_ns; });
    EXPECT_NE(home, boxes.end()) << t.name(e.name) << " at " << e.start_ns;
  }
  const auto waits = named(t, *row, names::kLaneDataWait);
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(waits[0]->start_ns, steps[5].t_ns + offset);
  const auto fwd = named(t, *row, names::kLaneForward);
  EXPECT_EQ(fwd.size(), 11u);
  const auto step5_fwd = std::find_if(fwd.begin(), fwd.end(), [&](const Event* e) { return e->start_ns == waits[0]->end_ns; });
  EXPECT_NE(step5_fwd, fwd.end());  // forward starts where the data wait ends
  const auto bwd = named(t, *row, names::kLaneBackward);
  ASSERT_EQ(bwd.size(), 12u);
  EXPECT_EQ(bwd[7]->end_ns, boxes[7]->end_ns);                      // cut at the step's end
  EXPECT_EQ(named(t, *row, names::kLaneOptimizer).size(), 11u);     // step 7's had no room left
}

TEST(StepLane, TakesEmptyInputZeroWallAndStepsOutOfOrder) {
  Trace empty;
  add_step_lane(empty, {}, {}, 0);
  EXPECT_TRUE(empty.tracks().empty());
  EXPECT_TRUE(empty.meta().process_names.empty());

  auto steps = steady(5);
  steps[2].wall_ns = 0;
  std::reverse(steps.begin(), steps.end());
  Trace t;
  add_step_lane(t, steps, {}, 0);
  t.finalize();
  const Track* row = lane_row(t);
  ASSERT_NE(row, nullptr);
  const auto boxes = named(t, *row, names::kLaneStep);
  ASSERT_EQ(boxes.size(), 5u);
  for (size_t i = 0; i < boxes.size(); ++i) EXPECT_EQ(boxes[i]->arg, int64_t(i));  // in time order
  EXPECT_EQ(boxes[2]->duration_ns(), 0);
  for (const Event& e : row->events())  // no phase of the empty step
    if (t.name(e.name) != names::kLaneStep) EXPECT_FALSE(e.start_ns == boxes[2]->start_ns && e.depth == 1);
}

TEST(StepLane, DrawsTheTimeOutsideTrainingAndTheMemoryAfterEachStep) {
  auto steps = steady(4);
  steps[1].device_allocated = -1;  // not measured: no sample
  std::vector<LaneOutside> outside = {{steps[1].t_ns + steps[1].wall_ns, 500 * us, "evaluation", 1},
                                      {steps[3].t_ns + steps[3].wall_ns, 300 * us, "checkpoint", 3}};
  Trace t;
  add_step_lane(t, steps, outside, 0);
  t.finalize();
  const Track* row = lane_row(t);
  ASSERT_NE(row, nullptr);
  EXPECT_TRUE(named(t, *row, names::kLaneOutside).empty());  // a row of their own: the steps' stays steps only
  const Track* between = between_row(t);
  ASSERT_NE(between, nullptr);
  EXPECT_GT(between->sort_index(), row->sort_index());
  const auto out = named(t, *between, names::kLaneOutside);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(t.name(out[0]->detail), "evaluation");
  EXPECT_EQ(out[0]->arg, 1);
  EXPECT_EQ(out[0]->duration_ns(), 500 * us);
  EXPECT_EQ(t.name(out[1]->detail), "checkpoint");
  size_t rss = 0, alloc = 0;
  for (const Track& tr : t.tracks()) {
    if (tr.kind() != TrackKind::Counter) continue;
    EXPECT_EQ(tr.pid(), kStepLanePid);
    if (tr.name() == names::kHostRss) rss = tr.events().size();
    if (tr.name() == names::kDeviceAllocated) alloc = tr.events().size();
  }
  EXPECT_EQ(rss, 4u);
  EXPECT_EQ(alloc, 3u);
}

// The job's trace: a CPU-only training thread with 20 steps of 10 ms, 3 ms of each waiting for data (a loader
// stall of 30% the detailed analysis finds), and a second trace with GPU work and no CPU process.
void job(Builder& b) {
  for (int i = 0; i < 20; ++i) {
    b.range("step", i * 10'000, (i + 1) * 10'000, i);
    b.range("data_wait", i * 10'000, i * 10'000 + 3'000);
  }
}

// The lane over the job's time, with findings of its own (outside training, drift, memory climbing).
std::vector<LaneStep> busy_lane() {
  auto steps = steady(40, 10'000);
  for (size_t i = 0; i < steps.size(); ++i) {
    steps[i].wall_ns = (10'000 + int64_t(i) * 300) * us;  // drifts to 2.2x
    steps[i].device_allocated = (int64_t(1) << 30) + int64_t(i) * (int64_t(8) << 20);
  }
  return steps;
}

TEST(StepLane, LeavesTheAnalysisOfTheJobAsItWas) {
  std::vector<LaneOutside> outside = {{400'000 * us, 200'000 * us, "evaluation", 39}};
  for (bool cpu_process : {true, false}) {
    SCOPED_TRACE(cpu_process ? "a training thread" : "GPU work only");
    Builder a, b;
    if (cpu_process) {
      job(a), job(b);
    } else {
      a.t = Trace(), b.t = Trace();
      for (int i = 0; i < 30; ++i) a.kernel(i * 100, i * 100 + 60), b.kernel(i * 100, i * 100 + 60);
    }
    const auto steps = busy_lane();
    add_step_lane(b.t, steps, outside, 0);
    const AnalysisResult ra = a.run(), rb = b.run();
    EXPECT_EQ(ra.window.t0, rb.window.t0);
    EXPECT_EQ(ra.window.t1, rb.window.t1);
    EXPECT_EQ(ra.steps.size(), rb.steps.size());
    EXPECT_EQ(ra.pid, rb.pid);
    EXPECT_EQ(ra.training_track, rb.training_track);
    const auto ca = time_classes(ra), cb = time_classes(rb);
    ASSERT_EQ(ca.size(), cb.size());
    for (size_t i = 0; i < ca.size(); ++i) EXPECT_EQ(ca[i].ns, cb[i].ns) << ca[i].id;
    EXPECT_EQ(ra.memory.present, rb.memory.present);
    EXPECT_EQ(ra.top_ops.size(), rb.top_ops.size());
    // The same findings, the lane's own added after them.
    std::vector<std::string> ia, ib;
    for (const Finding& f : ra.findings) ia.push_back(f.id + ": " + f.message);
    for (const Finding& f : rb.findings)
      if (f.id.size() < 6 || f.id.substr(f.id.size() - 6) != "_steps") ib.push_back(f.id + ": " + f.message);
    EXPECT_EQ(ia, ib);
    EXPECT_GT(rb.findings.size(), ra.findings.size());  // the lane's (drift, outside, memory) are there
    // A lane whose steps show nothing changes nothing at all.
    Builder c;
    if (cpu_process) job(c);
    else {
      c.t = Trace();
      for (int i = 0; i < 30; ++i) c.kernel(i * 100, i * 100 + 60);
    }
    add_step_lane(c.t, steady(40), {}, 0);
    EXPECT_EQ(to_json(ra), to_json(c.run()));
  }
}

TEST(StepLaneFindings, EachIsMadeFromTheStepTimingsAndNotOnACleanLane) {
  const AnalysisResult clean = analyze_lane(steady(40));
  EXPECT_TRUE(clean.findings.empty()) << clean.findings.front().id;

  auto waiting = steady(40);
  for (auto& s : waiting) s.data_wait_ns = 3'000 * us;
  const AnalysisResult rw = analyze_lane(waiting);
  const Finding* f = by_id(rw, "loader_stall_steps");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->kind, FindingKind::LoaderStall);
  EXPECT_NEAR(f->share, 0.3, 1e-9);
  EXPECT_EQ(f->knob, "workers");  // the detailed loader stall's knob
  EXPECT_EQ(f->message.rfind("(from step timings) ", 0), 0u) << f->message;

  auto away = steady(40);
  std::vector<LaneOutside> outside;
  for (int k = 1; k <= 4; ++k) outside.push_back({away[k * 9].t_ns - 50'000 * us, 40'000 * us, "evaluation", k * 9 - 1});
  // (the intervals overlap the lane's time only in drawing; their share is what counts: 160 ms of 560)
  f = by_id(analyze_lane(away, outside), "outside_training_steps");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->share, 160.0 / (400.0 + 160.0), 1e-9);
  EXPECT_NE(f->message.find("evaluation"), std::string::npos);

  auto climbing = steady(40);
  for (size_t i = 0; i < climbing.size(); ++i) climbing[i].device_allocated += int64_t(i) * (int64_t(8) << 20);
  f = by_id(analyze_lane(climbing), "memory_growth_steps");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("device allocated"), std::string::npos);
  auto spiky = steady(40);  // one spike is no climb
  spiky[30].device_allocated += int64_t(4) << 30;
  EXPECT_EQ(by_id(analyze_lane(spiky), "memory_growth_steps"), nullptr);

  auto slowing = steady(40);
  for (size_t i = 0; i < slowing.size(); ++i) slowing[i].wall_ns = (10'000 + int64_t(i) * 200) * us;
  f = by_id(analyze_lane(slowing), "step_time_drift_steps");
  ASSERT_NE(f, nullptr);
  EXPECT_GT(f->max_speedup, 1.25);
  auto noisy = steady(40);  // 20% slower late steps: under the ratio
  for (size_t i = 30; i < noisy.size(); ++i) noisy[i].wall_ns = 12'000 * us;
  EXPECT_EQ(by_id(analyze_lane(noisy), "step_time_drift_steps"), nullptr);

  // An LBFGS step evaluating its closure 5 times early and 20 times late (a line search) takes 4x as long at
  // the same 1 ms an evaluation: no slowdown. Counted per step it was one, "at most 4x".
  auto closure = steady(40);
  for (size_t i = 0; i < closure.size(); ++i) {
    closure[i].evaluations = i < 20 ? 5 : 20;
    closure[i].wall_ns = closure[i].evaluations * 1'000 * us;
  }
  EXPECT_EQ(by_id(analyze_lane(closure), "step_time_drift_steps"), nullptr);
  for (auto& s : closure) s.wall_ns *= 1 + (s.index >= 20 ? 1 : 0);  // then each evaluation twice as slow
  f = by_id(analyze_lane(closure), "step_time_drift_steps");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("median closure evaluation"), std::string::npos) << f->message;
  EXPECT_NEAR(f->max_speedup, 2.0, 0.05);
}

TEST(StepLaneFindings, NoneFromTooFewMeasuredStepsNorFromTheWarmUp) {
  auto few = steady(9);
  for (auto& s : few) s.data_wait_ns = 5'000 * us;
  EXPECT_TRUE(analyze_lane(few).findings.empty());
  auto warm = steady(40);
  for (size_t i = 0; i < 20; ++i) warm[i].warmup = true, warm[i].data_wait_ns = 9'000 * us, warm[i].wall_ns = 30'000 * us;
  EXPECT_TRUE(analyze_lane(warm).findings.empty()) << analyze_lane(warm).findings.front().message;
}

TEST(StepLaneFindings, TheDetailedAnalysisFindingOfAKindIsTheOnlyOne) {
  Builder b;
  job(b);  // the traced window: a 30% loader stall
  auto steps = steady(40);
  for (auto& s : steps) s.data_wait_ns = 5'000 * us;
  add_step_lane(b.t, steps, {}, 0);
  const AnalysisResult r = b.run();
  size_t stalls = 0;
  for (const Finding& f : r.findings) stalls += f.kind == FindingKind::LoaderStall;
  EXPECT_EQ(stalls, 1u);
  EXPECT_NE(by_id(r, "loader_stall"), nullptr);
  EXPECT_EQ(by_id(r, "loader_stall_steps"), nullptr);
}

TEST(StepLane, SurvivesTheExportRoundTrip) {
  Builder b;
  job(b);
  auto steps = busy_lane();
  steps[2].traced = true;
  steps[0].warmup = true;
  const std::vector<LaneOutside> outside = {{400'000 * us, 200'000 * us, "checkpoint", 39}};
  add_step_lane(b.t, steps, outside, 0);
  const AnalysisResult before = b.run();
  auto back = parse_trace(to_chrome_trace_json(b.t));
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  const Trace& t = **back;
  const Track* row = placed_row(t);
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(t.meta().extra.at(kStepLaneMeasuredFrom), "1");  // step 0 was warm-up
  const auto boxes = named(t, *row, names::kLaneStep);
  ASSERT_EQ(boxes.size(), steps.size());
  EXPECT_EQ(boxes[2]->arg, 2);
  EXPECT_EQ(t.name(boxes[2]->detail), names::kLaneDetailed);
  EXPECT_EQ(boxes[3]->detail, kNoName);
  ASSERT_NE(between_row(t), nullptr);
  EXPECT_GT(between_row(t)->sort_index(), row->sort_index());
  const auto out = named(t, *between_row(t), names::kLaneOutside);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(t.name(out[0]->detail), "checkpoint");
  size_t counters = 0;
  for (const Track& tr : t.tracks()) counters += tr.kind() == TrackKind::Counter && tr.pid() == kStepLanePid;
  EXPECT_EQ(counters, 2u);
  const AnalysisResult after = analyze(t);
  std::vector<std::string> a, c;
  for (const Finding& f : before.findings) a.push_back(f.id);
  for (const Finding& f : after.findings) c.push_back(f.id);
  EXPECT_EQ(a, c);
  EXPECT_NE(by_id(after, "step_time_drift_steps"), nullptr);
}

// Two ranks' traces, each with its lane, merged as a group is (the second's pids moved a rank apart): each lane
// stays a lane (a pseudo-process, below zero), the job's processes are the two ranks', not four.
TEST(StepLane, EachRanksLaneStaysALaneInAMergedGroup) {
  Builder a, b;
  job(a);
  job(b);
  add_step_lane(a.t, steady(20), {}, 0);
  add_step_lane(b.t, steady(20), {}, 0);
  a.t.finalize();
  b.t.finalize();
  ASSERT_TRUE(a.t.shares_pids_with(b.t));
  b.t.move_pids(kPidSpace);
  EXPECT_FALSE(a.t.shares_pids_with(b.t));
  a.t.merge(b.t);
  a.t.finalize();
  size_t lanes = 0;
  for (const Track& t : a.t.tracks()) {
    if (t.kind() != TrackKind::CpuThread || !is_step_lane(t)) continue;
    ++lanes;
    EXPECT_LT(t.pid(), 0);
  }
  EXPECT_EQ(lanes, 2u);
  EXPECT_EQ(processes_with_steps(a.t).size(), 2u);
  for (int64_t pid : processes_with_steps(a.t)) EXPECT_GE(pid, 0);
}

TEST(StepLane, TheChunkMergerSaysItsClockOffsetOnceAChunkStatesIt) {
  ChunkMerger m;
  EXPECT_FALSE(m.offset_ns().has_value());
  auto plain = std::make_unique<Trace>();
  m.add(std::move(plain));
  EXPECT_FALSE(m.offset_ns().has_value());
  auto chunk = std::make_unique<Trace>();
  chunk->meta().extra["tunebench_clock_offset_us"] = "1500.25";
  m.add(std::move(chunk));
  ASSERT_TRUE(m.offset_ns().has_value());
  EXPECT_EQ(*m.offset_ns(), 1'500'250);
  m.take();
  EXPECT_EQ(*m.offset_ns(), 1'500'250);
}

}  // namespace
}  // namespace tb::prof
