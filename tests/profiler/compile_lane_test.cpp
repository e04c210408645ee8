// The compile lane (profiler/compile_lane.h): its row beside the step lane, the findings it gives
// (analysis_compile.cpp) and that the steps that compiled are no step-timing finding. Times in microseconds
// (`us`); steps 10 ms long unless they compiled.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "analysis_test_util.h"
#include "profiler/analysis.h"
#include "profiler/compile_lane.h"
#include "profiler/range_names.h"
#include "profiler/step_lane.h"
#include "profiler/trace_io.h"
#include "trace_builder.h"

namespace tb::prof {
namespace {

using test_util::us;

constexpr const char* kFile = "/work/train.py";
constexpr const char* kItem = "Unsupported Tensor.item() call with capture_scalar_outputs=False";

// A run of `n` steps in which the steps listed in `compiling` compiled for `compile_us` each (their wall holds
// the compile, as the launcher measures it): the steps, and one compile of `forward` per such step (its first,
// then recompiles for a sequence length that changed), with Dynamo's and Inductor's phases; the first compile
// meets a graph break, which the resume frame's compile meets again.
struct LaneRun {
  std::vector<LaneStep> steps;
  std::vector<LaneCompile> compiles;
};

LaneRun run(int n, const std::vector<int>& compiling, int64_t compile_us) {
  LaneRun r;
  int64_t t = 0;
  int recompiles = 0;
  for (int i = 0; i < n; ++i) {
    LaneStep s;
    s.index = i;
    s.t_ns = t * us;
    const bool compiled = std::find(compiling.begin(), compiling.end(), i) != compiling.end();
    s.wall_ns = (10'000 + (compiled ? compile_us : 0)) * us;
    s.forward_ns = (2'500 + (compiled ? compile_us : 0)) * us;
    r.steps.push_back(s);
    if (compiled) {
      LaneCompile c;
      c.id = "0/" + std::to_string(recompiles);
      c.frame = "forward";
      c.file = kFile;
      c.line = 16;
      c.t_ns = (t + 100) * us;
      c.dur_ns = compile_us * us;
      c.phases = {{"dynamo", c.t_ns, c.dur_ns / 4}, {"aot", c.t_ns + c.dur_ns / 4, c.dur_ns / 2},
                  {"inductor", c.t_ns + c.dur_ns / 2, c.dur_ns / 4}};
      if (recompiles > 0)
        c.recompile = "tensor 'x' size mismatch at index 1. expected " + std::to_string(8 + 4 * recompiles) +
                      ", actual " + std::to_string(12 + 4 * recompiles);
      else
        c.breaks.push_back({std::string(kItem) + "\n  Explanation: Dynamo does not support it", kFile, 18});
      r.compiles.push_back(c);
      ++recompiles;
    }
    t += s.wall_ns / us + 1;
  }
  return r;
}

Trace lane_trace(const LaneRun& r, bool with_compiles = true) {
  Trace t;
  t.meta().extra["tunebench_run"] = "script";
  add_step_lane(t, r.steps, {}, 0);
  if (with_compiles) add_compile_lane(t, r.compiles, 0);
  t.finalize();
  return t;
}

const Track* compile_row(const Trace& t) {
  for (const Track& tr : t.tracks())
    if (tr.kind() == TrackKind::CpuThread && is_step_lane(tr) && tr.tid() == kCompileLaneTid) return &tr;
  return nullptr;
}

std::vector<const Event*> named(const Trace& t, const Track& tr, std::string_view name) {
  std::vector<const Event*> out;
  for (const Event& e : tr.events())
    if (t.name(e.name) == name) out.push_back(&e);
  return out;
}

std::vector<const Finding*> of_kind(const AnalysisResult& r, FindingKind k) {
  std::vector<const Finding*> out;
  for (const Finding& f : r.findings)
    if (f.kind == k) out.push_back(&f);
  return out;
}

TEST(CompileLane, DrawsEachCompileWithItsPhasesAndWhatItMet) {
  const LaneRun r = run(40, {0, 10, 20}, 300'000);
  const Trace t = lane_trace(r);
  const Track* row = compile_row(t);
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->pid(), kStepLanePid);
  EXPECT_EQ(row->name(), kCompileLaneTrackName);
  EXPECT_GT(row->sort_index(), kStepLaneSortIndex);  // under the steps
  const auto boxes = named(t, *row, names::kLaneCompile);
  ASSERT_EQ(boxes.size(), 3u);
  for (size_t k = 0; k < boxes.size(); ++k) {
    EXPECT_EQ(boxes[k]->depth, 0);
    EXPECT_EQ(boxes[k]->arg, int64_t(k));  // the frame's compile index: 0, then the recompiles
    EXPECT_EQ(t.name(boxes[k]->detail), "forward at /work/train.py:16");
    EXPECT_EQ(boxes[k]->duration_ns(), 300'000 * us);
  }
  const auto dynamo = named(t, *row, "Dynamo: bytecode tracing");
  ASSERT_EQ(dynamo.size(), 3u);
  EXPECT_EQ(dynamo[0]->depth, 1);
  EXPECT_EQ(dynamo[0]->start_ns, boxes[0]->start_ns);
  ASSERT_EQ(named(t, *row, "AOT autograd").size(), 3u);
  EXPECT_EQ(named(t, *row, "Inductor")[0]->depth, 2);  // inside AOT autograd, as torch runs it
  const auto recompiles = named(t, *row, names::kLaneRecompile);
  ASSERT_EQ(recompiles.size(), 2u);
  EXPECT_EQ(recompiles[0]->start_ns, boxes[1]->start_ns);
  EXPECT_EQ(t.name(recompiles[0]->detail), "tensor 'x' size mismatch at index 1. expected 12, actual 16");
  // Each compile's id at its start: what torch.profiler's "Torch-Compiled Region: F/C" names its runs by.
  const auto compile_ids = named(t, *row, names::kLaneCompileId);
  ASSERT_EQ(compile_ids.size(), 3u);
  for (size_t k = 0; k < compile_ids.size(); ++k) {
    EXPECT_EQ(compile_ids[k]->start_ns, boxes[k]->start_ns);
    EXPECT_EQ(t.name(compile_ids[k]->detail), "0/" + std::to_string(k));
  }
  const auto breaks = named(t, *row, names::kLaneGraphBreak);
  ASSERT_EQ(breaks.size(), 1u);
  EXPECT_EQ(breaks[0]->arg, 18);
  EXPECT_EQ(std::string(t.name(breaks[0]->detail)).substr(0, 15), "/work/train.py\n");
  // The step lane's row is as it was: the compile lane is a row of its own.
  size_t steps = 0;
  for (const Track& tr : t.tracks())
    if (is_step_lane(tr) && tr.tid() == kStepLaneTid) steps += named(t, tr, names::kLaneStep).size();
  EXPECT_EQ(steps, 40u);
}

TEST(CompileLaneFindings, NameTheTimeTheFrameCompiledAgainAndTheBreakWithItsLine) {
  const LaneRun r = run(40, {0, 10, 20, 30}, 300'000);
  const AnalysisResult a = analyze(lane_trace(r));
  const auto time = of_kind(a, FindingKind::CompileTime);
  ASSERT_EQ(time.size(), 1u);
  int64_t span = r.steps.back().t_ns + r.steps.back().wall_ns - r.steps.front().t_ns;
  EXPECT_NEAR(time[0]->share, 4 * 300'000.0 * us / double(span), 1e-9);
  EXPECT_EQ(time[0]->id, "compile_time");
  EXPECT_NE(time[0]->message.find("torch.compile took 1.2 s in 4 compiles of 1 frame (3 recompiles)"),
            std::string::npos) << time[0]->message;

  const auto again = of_kind(a, FindingKind::Recompiles);
  ASSERT_EQ(again.size(), 1u);
  const std::string& m = again[0]->message;
  EXPECT_NE(m.find("forward at /work/train.py:16 was compiled 4 times (3 recompiles"), std::string::npos) << m;
  // The guard counted once whatever the lengths it saw, and the dimension to mark dynamic named.
  EXPECT_NE(m.find("tensor 'x' size mismatch at index 1 (3 times)"), std::string::npos) << m;
  EXPECT_NE(m.find("torch._dynamo.mark_dynamic(x, 1)"), std::string::npos) << m;

  const auto breaks = of_kind(a, FindingKind::GraphBreak);
  ASSERT_EQ(breaks.size(), 1u);
  EXPECT_NE(breaks[0]->message.find(std::string("graph break at /work/train.py:18: ") + kItem), std::string::npos)
      << breaks[0]->message;
  EXPECT_EQ(breaks[0]->message.find("Explanation"), std::string::npos);  // the reason's first line only
  EXPECT_NE(breaks[0]->message.find("capture_scalar_outputs = True"), std::string::npos);
  // Paid once: no finding of the compile lane bounds a step's speed ("up to" is for per-step time).
  for (const Finding* f : {time[0], again[0], breaks[0]}) EXPECT_EQ(f->max_speedup, 1.0) << f->id;
}

// The code Dynamo resumes after a graph break, recompiled for the Python value it was specialized on (the
// .item() that broke the graph): named for the user's function, the value's guard without its values.
TEST(CompileLaneFindings, AResumedFrameIsNamedForItsFunctionAndAValueGuardSaysWhatChanged) {
  LaneRun r = run(40, {0, 10, 20}, 300'000);
  for (size_t k = 0; k < r.compiles.size(); ++k) {
    r.compiles[k].frame = "torch_dynamo_resume_in_forward_at_18";
    r.compiles[k].line = 18;
    if (k > 0) r.compiles[k].recompile = "___stack0 == " + std::to_string(2.5 + k) + "  # if h.mean().item() > 10.0:";
  }
  EXPECT_EQ(r.compiles[0].frame_label(), "forward after its graph break at /work/train.py:18");
  const AnalysisResult a = analyze(lane_trace(r));
  const auto again = of_kind(a, FindingKind::Recompiles);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_NE(again[0]->message.find("forward after its graph break at /work/train.py:18 was compiled 3 times (2 "
                                   "recompiles, 900.000 ms): the value returned at its graph break changed (2 times) -> "
                                   "each new value compiles that code again"),
            std::string::npos)
      << again[0]->message;
}

// The traced steps that compiled nothing say what the break costs: the forward's time outside its compiled
// graphs (CompiledFunction around `## Call CompiledFxGraph`, counted once), a step that compiled left out.
TEST(CompileLaneFindings, AGraphBreakSaysTheForwardsTimeOutsideItsCompiledGraphs) {
  test_util::Builder b;
  b.t.meta().extra["tunebench_run"] = "script";
  for (int i = 0; i < 6; ++i) {
    const int64_t t0 = i * 2'000;  // steps of 2 ms (us), the first one compiling for 1.5 ms of it
    b.range(("ProfilerStep#" + std::to_string(i)).c_str(), t0, t0 + 2'000);
    b.range("## forward ##", t0 + 100, t0 + 900);                     // 800 us
    b.range("CompiledFunction", t0 + 200, t0 + 400);                  // graph 1: 200 us
    b.range("## Call CompiledFxGraph fabc ##", t0 + 220, t0 + 380);   // inside it: not counted again
    b.range("aten::item", t0 + 450, t0 + 460);                        // the eager code at the break
    b.range("## Call CompiledFxGraph fdef ##", t0 + 500, t0 + 800);   // graph 2 (inference): 300 us
  }
  LaneCompile c;
  c.id = "0/0";
  c.frame = "forward";
  c.file = kFile;
  c.line = 16;
  c.t_ns = 100 * us;
  c.dur_ns = 1'500 * us;
  c.breaks.push_back({kItem, kFile, 18});
  const std::vector<LaneCompile> compiles{c};
  add_compile_lane(b.t, compiles, 0);
  const AnalysisResult a = b.run();
  const auto breaks = of_kind(a, FindingKind::GraphBreak);
  ASSERT_EQ(breaks.size(), 1u);
  // Steps 1-5: 800 us of forward, 500 in graphs: 300 us outside, 37.5% of the forward, 15% of the 2 ms step.
  EXPECT_NE(breaks[0]->message.find("over 5 traced steps the forward ran 0.300 ms a step outside its compiled "
                                    "graphs (guards, cache lookups, the eager code at the break: 37.5% of the "
                                    "forward, 15.0% of the step)"),
            std::string::npos)
      << breaks[0]->message;
  EXPECT_NEAR(breaks[0]->share, 0.15, 1e-9);
}

// A frame recompiled at every step of the last quarter: its steps hold the compiles. They are a one-time cost
// each, which the recompile finding names; the step timings' drift finding does not take them for slow steps.
TEST(CompileLaneFindings, TheStepsThatCompiledAreNoStepTimingFinding) {
  std::vector<int> late;
  for (int i = 30; i < 40; ++i) late.push_back(i);
  const LaneRun r = run(40, late, 50'000);
  auto ids = [](const AnalysisResult& a) {
    std::vector<std::string> v;
    for (const Finding& f : a.findings) v.push_back(f.id);
    return v;
  };
  const AnalysisResult without = analyze(lane_trace(r, false));
  EXPECT_NE(std::find(ids(without).begin(), ids(without).end(), "step_time_drift_steps"), ids(without).end());
  const AnalysisResult with = analyze(lane_trace(r));
  const auto found = ids(with);
  EXPECT_EQ(std::find(found.begin(), found.end(), "step_time_drift_steps"), found.end());
  EXPECT_NE(std::find(found.begin(), found.end(), "recompiles"), found.end());
}

// One compile early in a long run, nothing met: nothing to say.
TEST(CompileLaneFindings, ACleanCompileOfALongRunSaysNothing) {
  LaneRun r = run(400, {0}, 200'000);
  r.compiles[0].breaks.clear();
  LaneCompile bwd = r.compiles[0];
  bwd.backward = true;
  bwd.t_ns += bwd.dur_ns;
  bwd.dur_ns /= 10;
  bwd.phases.clear();
  r.compiles.push_back(bwd);
  const AnalysisResult a = analyze(lane_trace(r));
  EXPECT_TRUE(a.findings.empty()) << a.findings.front().message;
}

TEST(CompileLane, SurvivesTheExportRoundTrip) {
  LaneRun r = run(40, {0, 10, 20, 30}, 300'000);
  r.compiles[2].failed = "BackendCompilerFailed: a C++ compiler error";
  const Trace t = lane_trace(r);
  auto back = parse_trace(to_chrome_trace_json(t));
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  const Track* row = compile_row(**back);
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(named(**back, *row, names::kLaneCompile).size(), 4u);
  std::vector<std::string> a, b;
  for (const Finding& f : analyze(t).findings) a.push_back(f.id + ": " + f.message);
  for (const Finding& f : analyze(**back).findings) b.push_back(f.id + ": " + f.message);
  EXPECT_EQ(a, b);
  EXPECT_NE(std::find_if(b.begin(), b.end(), [](const std::string& s) { return s.rfind("compile_failed: ", 0) == 0; }),
            b.end());
}

}  // namespace
}  // namespace tb::prof
