// The `regions` pass (analysis_regions.cpp): torch.compile's regions as they ran, counted over the measured steps
// and named by the compile lane's id markers. Times in microseconds (`us`), worked out in the comments.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "profiler/analysis.h"
#include "profiler/compile_lane.h"
#include "profiler/range_names.h"
#include "profiler/step_lane.h"
#include "profiler/trace_io.h"
#include "trace_builder.h"

namespace tb::prof {
namespace {

using test_util::us;

constexpr int kSteps = 6;  // of 1000 us each: the steps' time is 6000 us

// A compiled script's six steps as torch.profiler records them. Each step: the launcher's hook (frame 0) and the
// model's forward (frame 1: its first compile in steps 0-3, a recompile in steps 4-5; its first run 500 us, cold,
// then 200 us; the recompile's 300 us), a helper compiled as frame 3 called twice a step (50 us each), and the
// compiled backward on autograd's thread (180 us). One run of frame 1's recompile after the last step (validation).
test_util::Builder script_trace() {
  test_util::Builder b;
  b.t.meta().extra["tunebench_run"] = "script";
  const uint32_t autograd = b.t.track_for(TrackKind::CpuThread, 1, 2, "autograd");
  for (int i = 0; i < kSteps; ++i) {
    const int64_t t0 = i * 1'000;
    b.range(("ProfilerStep#" + std::to_string(i)).c_str(), t0, t0 + 1'000);
    b.range("TorchDynamo Cache Lookup", t0 + 10, t0 + 12);
    b.range("Torch-Compiled Region: 0/0", t0 + 20, t0 + 22);
    const int64_t fwd = i == 0 ? 500 : i < 4 ? 200 : 300;
    b.range(i < 4 ? "Torch-Compiled Region: 1/0" : "Torch-Compiled Region: 1/1", t0 + 100, t0 + 100 + fwd);
    b.range("CompiledFunction", t0 + 110, t0 + 90 + fwd);  // inside the region: no row of its own
    b.range("Torch-Compiled Region: 3/0", t0 + 650, t0 + 700);
    b.range("Torch-Compiled Region: 3/0", t0 + 750, t0 + 800);
    b.range("autograd::engine::evaluate_function: CompiledFunctionBackward", t0 + 810, t0 + 995, kNoArg, autograd);
    b.range("CompiledFunctionBackward", t0 + 812, t0 + 992, kNoArg, autograd);
  }
  b.range("Torch-Compiled Region: 1/1", kSteps * 1'000 + 100, kSteps * 1'000 + 400);
  return b;
}

LaneCompile compile(const char* id, const char* frame, const char* file, int64_t line, int64_t at_us) {
  LaneCompile c;
  c.id = id;
  c.frame = frame;
  c.file = file;
  c.line = line;
  c.t_ns = at_us * us;
  c.dur_ns = 5 * us;
  return c;
}

// The lane of that run, in its own order (the recompile's compile drawn first, so that a label taken by position
// rather than by id is wrong). Frame 3 is not on it. The code after the forward's graph break (frame 4, which
// never runs compiled) compiles for 100 us inside the forward's first run, at 150-250 us.
std::vector<LaneCompile> lane() {
  LaneCompile recompiled = compile("1/1", "forward", "/work/train.py", 14, 4'030);
  recompiled.recompile = "tensor 'x' size mismatch at index 1. expected 8, actual 12";
  LaneCompile backward = compile("1/0", "forward", "/work/train.py", 14, 60);
  backward.backward = true;
  LaneCompile resumed = compile("4/0", "torch_dynamo_resume_in_forward_at_18", "/work/train.py", 18, 150);
  resumed.dur_ns = 100 * us;
  return {recompiled, compile("0/0", "_pre_hook", "/venv/site-packages/tunebench/hooks/forward.py", 40, 30),
          compile("1/0", "forward", "/work/train.py", 14, 40), backward, resumed};
}

const CompiledRegionStat* row(const AnalysisResult& r, const std::string& id) {
  for (const CompiledRegionStat& x : r.compiled_regions.rows)
    if (x.id == id) return &x;
  return nullptr;
}

std::vector<std::string> ids(const AnalysisResult& r) {
  std::vector<std::string> v;
  for (const CompiledRegionStat& x : r.compiled_regions.rows) v.push_back(x.id);
  return v;
}

TEST(CompiledRegions, CountEachRegionsRunsOverTheStepsWithTheirRateAndTime) {
  test_util::Builder b = script_trace();
  const std::vector<LaneCompile> compiles = lane();
  add_compile_lane(b.t, compiles, 0);
  const AnalysisResult a = b.run();
  const CompiledRegions& c = a.compiled_regions;
  EXPECT_EQ(c.steps, size_t(kSteps));
  EXPECT_EQ(c.base_ns, kSteps * 1'000 * us);
  // By frame, then compile; the backward last. Cache lookups and CompiledFunction are no region.
  EXPECT_EQ(ids(a), (std::vector<std::string>{"0/0", "1/0", "1/1", "3/0", "backward"}));

  const CompiledRegionStat* hook = row(a, "0/0");
  ASSERT_NE(hook, nullptr);
  EXPECT_EQ(hook->runs, 6u);
  EXPECT_DOUBLE_EQ(hook->runs_per_step, 1.0);
  EXPECT_EQ(hook->frame, 0);
  EXPECT_EQ(hook->compile, 0);

  // Frame 1's first compile: 4 runs, the first 500 us less frame 4's compile inside it (100 us), then 3 x 200:
  // 1000 us, mean 250 us, median 200 us (the cold run moves the mean only), 1000 of the steps' 6000 us.
  const CompiledRegionStat* first = row(a, "1/0");
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->runs, 4u);
  EXPECT_DOUBLE_EQ(first->runs_per_step, 4.0 / 6.0);
  EXPECT_EQ(first->total_ns, 1'000 * us);
  EXPECT_EQ(first->compile_ns, 100 * us);
  EXPECT_EQ(first->mean_ns(), 250 * us);
  EXPECT_EQ(first->median_ns, 200 * us);
  EXPECT_DOUBLE_EQ(first->share, 1'000.0 / 6'000.0);
  EXPECT_EQ(first->runs_elsewhere, 0u);

  // The recompile: 2 runs in the steps, the validation's run after them counted apart and in no figure.
  const CompiledRegionStat* again = row(a, "1/1");
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->runs, 2u);
  EXPECT_EQ(again->runs_elsewhere, 1u);
  EXPECT_EQ(again->total_ns, 600 * us);
  EXPECT_EQ(again->frame, 1);
  EXPECT_EQ(again->compile, 1);

  // Twice a step: 12 runs, 2 a step, 50 us each.
  const CompiledRegionStat* helper = row(a, "3/0");
  ASSERT_NE(helper, nullptr);
  EXPECT_EQ(helper->runs, 12u);
  EXPECT_DOUBLE_EQ(helper->runs_per_step, 2.0);
  EXPECT_EQ(helper->mean_ns(), 50 * us);

  // The backward on autograd's thread: its CompiledFunctionBackward runs, not the engine's range around them.
  const CompiledRegionStat* bwd = row(a, "backward");
  ASSERT_NE(bwd, nullptr);
  EXPECT_TRUE(bwd->backward);
  EXPECT_EQ(bwd->runs, 6u);
  EXPECT_EQ(bwd->mean_ns(), 180 * us);
}

TEST(CompiledRegions, AreNamedByTheCompileLanesIdsAndByTheirIdWhereTheLaneSaysNothing) {
  test_util::Builder b = script_trace();
  const std::vector<LaneCompile> compiles = lane();
  add_compile_lane(b.t, compiles, 0);
  const AnalysisResult a = b.run();
  ASSERT_EQ(a.compiled_regions.rows.size(), 5u);
  EXPECT_EQ(row(a, "0/0")->label, "TuneBench's own hook _pre_hook");
  // The forward's label, not its backward compile's, though both carry the id 1/0.
  EXPECT_EQ(row(a, "1/0")->label, "forward at /work/train.py:14");
  EXPECT_EQ(row(a, "1/1")->label, "forward at /work/train.py:14");
  EXPECT_EQ(row(a, "3/0")->label, "region 3/0");  // no compile of frame 3 on the lane
  EXPECT_EQ(row(a, "backward")->label, "forward (backward) at /work/train.py:14");
}

TEST(CompiledRegions, WithoutTheLaneEachIsNamedByItsId) {
  const AnalysisResult a = script_trace().run();
  ASSERT_EQ(ids(a), (std::vector<std::string>{"0/0", "1/0", "1/1", "3/0", "backward"}));
  for (const CompiledRegionStat& x : a.compiled_regions.rows)
    EXPECT_EQ(x.label, x.backward ? "compiled backward" : "region " + x.id);
  EXPECT_EQ(row(a, "1/0")->runs, 4u);  // the counts need no lane
  EXPECT_EQ(row(a, "1/0")->total_ns, 1'100 * us);  // nor the time: no compile to take out of it
}

// A written trace (run --script --trace) is read back with the lane's id markers: the same names.
TEST(CompiledRegions, SurviveTheExportRoundTrip) {
  test_util::Builder b = script_trace();
  const std::vector<LaneCompile> compiles = lane();
  add_compile_lane(b.t, compiles, 0);
  b.t.finalize();
  auto back = parse_trace(to_chrome_trace_json(b.t));
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  const AnalysisResult before = analyze(b.t), after = analyze(**back);
  ASSERT_EQ(ids(after), ids(before));
  for (size_t k = 0; k < before.compiled_regions.rows.size(); ++k) {
    EXPECT_EQ(after.compiled_regions.rows[k].label, before.compiled_regions.rows[k].label);
    EXPECT_EQ(after.compiled_regions.rows[k].runs, before.compiled_regions.rows[k].runs);
  }
  EXPECT_NE(to_json(after).find("\"compiled_regions\""), std::string::npos);
}

TEST(CompiledRegions, NoneRanNoneSaid) {
  test_util::Builder b;
  for (int i = 0; i < kSteps; ++i) b.range(("ProfilerStep#" + std::to_string(i)).c_str(), i * 1'000, i * 1'000 + 900);
  b.range("CompiledFunction", 100, 200);  // no region: not one of the rows' names
  const AnalysisResult a = b.run();
  EXPECT_TRUE(a.compiled_regions.rows.empty());
  EXPECT_EQ(to_json(a).find("compiled_regions"), std::string::npos);
}

}  // namespace
}  // namespace tb::prof
