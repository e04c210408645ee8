// The `regions` pass (analysis_regions.cpp): torch.compile's regions as they ran, counted over the measured steps
// and named by the compile lane's id markers, and Inductor's kernels inside them (analysis_kernels.cpp) with their
// ops and the user's lines. Times in microseconds (`us`), worked out in the comments.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "profiler/analysis.h"
#include "profiler/compile_lane.h"
#include "profiler/compiled_kernels.h"
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

// Inductor's kernels: inside each step's forward region a C++ kernel's range (its kernel profiling's name,
// graph_0_..., 30 us), in the backward another (10 us, twice a step), and one after the last step (validation);
// a Triton kernel on the device (20 us a step, its launch's range of the same name on the CPU) as on a GPU, a
// user's range that looks like a kernel's without being one (cpp_helper). The lane has the forward kernel's ops and lines and
// the Triton kernel's lines; the backward kernel is not on it.
test_util::Builder kernel_trace() {
  test_util::Builder b = script_trace();
  const uint32_t autograd = b.t.track_for(TrackKind::CpuThread, 1, 2, "autograd");
  for (int i = 0; i < kSteps; ++i) {
    const int64_t t0 = i * 1'000;
    b.range("graph_0_cpp_fused_add_relu_0", t0 + 120, t0 + 150);
    b.range("graph_0_cpp_fused_sum_threshold_backward_1", t0 + 820, t0 + 830, kNoArg, autograd);
    b.range("graph_0_cpp_fused_sum_threshold_backward_1", t0 + 840, t0 + 850, kNoArg, autograd);
    b.range("triton_poi_fused_addmm_gelu_2", t0 + 290, t0 + 295);  // its launch (Inductor's record_function)
    b.kernel(t0 + 300, t0 + 320, -1, 7, "triton_poi_fused_addmm_gelu_2");
  }
  b.range("graph_0_cpp_fused_add_relu_0", kSteps * 1'000 + 120, kSteps * 1'000 + 150);
  b.range("aten::addmm", 100, 110);  // an ATen call (Inductor's extern kernel): no row
  b.range("cpp_helper", 400, 410);   // a user's record_function: no row
  return b;
}

std::vector<LaneCompile> kernel_lane() {
  std::vector<LaneCompile> l = lane();
  LaneKernel fused;
  fused.name = "cpp_fused_add_relu_0";
  fused.range = "graph_0_cpp_fused_add_relu_0";
  fused.ops = {"add", "relu"};
  fused.lines = {{"/work/train.py", 19, "y = torch.relu(y + 1)"}, {"/work/train.py", 20, ""}};
  LaneKernel triton;
  triton.name = "triton_poi_fused_addmm_gelu_2";
  triton.lines = {{"/work/model.py", 7, "return F.gelu(self.fc(x))"}};
  l[2].kernels = {fused, triton};  // the forward's first compile
  return l;
}

const CompiledKernelStat* kernel_row(const AnalysisResult& r, const std::string& name) {
  for (const CompiledKernelStat& x : r.compiled_regions.kernels.rows)
    if (x.name == name) return &x;
  return nullptr;
}

TEST(CompiledKernels, CountEachKernelsCallsOverTheStepsWithItsOpsAndTheUsersLines) {
  test_util::Builder b = kernel_trace();
  const std::vector<LaneCompile> compiles = kernel_lane();
  add_compile_lane(b.t, compiles, 0);
  const AnalysisResult a = b.run();
  const CompiledKernels& k = a.compiled_regions.kernels;
  EXPECT_EQ(k.steps, size_t(kSteps));
  EXPECT_EQ(k.kernels, 3u);
  EXPECT_EQ(k.calls, 6u + 12u + 6u);
  // 6 x 30 + 12 x 10 + 6 x 20 = 420 us of the steps' 6000
  EXPECT_EQ(k.total_ns, 420 * us);
  EXPECT_DOUBLE_EQ(k.share, 420.0 / 6'000.0);
  ASSERT_EQ(k.rows.size(), 3u);
  EXPECT_EQ(k.rows[0].name, "graph_0_cpp_fused_add_relu_0");  // by time: 180, then 120 and 120 by name

  const CompiledKernelStat* fwd = kernel_row(a, "graph_0_cpp_fused_add_relu_0");
  ASSERT_NE(fwd, nullptr);
  EXPECT_EQ(fwd->kernel, "cpp_fused_add_relu_0");
  EXPECT_FALSE(fwd->gpu);
  EXPECT_EQ(fwd->calls, 6u);
  EXPECT_EQ(fwd->calls_elsewhere, 1u);  // the validation's call
  EXPECT_DOUBLE_EQ(fwd->calls_per_step, 1.0);
  EXPECT_EQ(fwd->total_ns, 180 * us);
  EXPECT_EQ(fwd->mean_ns(), 30 * us);
  EXPECT_DOUBLE_EQ(fwd->share, 180.0 / 6'000.0);
  EXPECT_EQ(fwd->ops, (std::vector<std::string>{"add", "relu"}));
  EXPECT_FALSE(fwd->ops_from_name);
  ASSERT_EQ(fwd->lines.size(), 2u);
  EXPECT_EQ(fwd->lines[0], (SourceLine{"/work/train.py", 19, "y = torch.relu(y + 1)"}));
  EXPECT_EQ(fwd->lines[1], (SourceLine{"/work/train.py", 20, ""}));

  // Not on the lane: its name's ops, a known ATen name with an underscore kept whole, and no line.
  const CompiledKernelStat* bwd = kernel_row(a, "graph_0_cpp_fused_sum_threshold_backward_1");
  ASSERT_NE(bwd, nullptr);
  EXPECT_EQ(bwd->calls, 12u);
  EXPECT_DOUBLE_EQ(bwd->calls_per_step, 2.0);
  EXPECT_EQ(bwd->ops, (std::vector<std::string>{"sum", "threshold_backward"}));
  EXPECT_TRUE(bwd->ops_from_name);
  EXPECT_TRUE(bwd->lines.empty());

  // On the device: the lane's lines, its name's ops.
  const CompiledKernelStat* gpu = kernel_row(a, "triton_poi_fused_addmm_gelu_2");
  ASSERT_NE(gpu, nullptr);
  EXPECT_TRUE(gpu->gpu);
  EXPECT_EQ(gpu->calls, 6u);
  EXPECT_EQ(gpu->ops, (std::vector<std::string>{"addmm", "gelu"}));
  ASSERT_EQ(gpu->lines.size(), 1u);
  EXPECT_EQ(gpu->lines[0].line, 7);

  const std::string json = to_json(a);
  EXPECT_NE(json.find("\"compiled_kernels\""), std::string::npos);
  EXPECT_NE(json.find("\"code\":\"y = torch.relu(y + 1)\""), std::string::npos) << json;
}

// A written trace is read back with the lane's kernel markers: the same ops and lines.
TEST(CompiledKernels, SurviveTheExportRoundTrip) {
  test_util::Builder b = kernel_trace();
  const std::vector<LaneCompile> compiles = kernel_lane();
  add_compile_lane(b.t, compiles, 0);
  b.t.finalize();
  auto back = parse_trace(to_chrome_trace_json(b.t));
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  const AnalysisResult before = analyze(b.t), after = analyze(**back);
  ASSERT_EQ(after.compiled_regions.kernels.rows.size(), before.compiled_regions.kernels.rows.size());
  for (size_t i = 0; i < before.compiled_regions.kernels.rows.size(); ++i) {
    const CompiledKernelStat &x = before.compiled_regions.kernels.rows[i], &y = after.compiled_regions.kernels.rows[i];
    EXPECT_EQ(y.name, x.name);
    EXPECT_EQ(y.calls, x.calls);
    EXPECT_EQ(y.ops, x.ops);
    EXPECT_EQ(y.lines, x.lines);
  }
  const CompiledKernelStat* fwd = kernel_row(after, "graph_0_cpp_fused_add_relu_0");
  ASSERT_NE(fwd, nullptr);
  EXPECT_EQ(fwd->lines, compiles[2].kernels[0].lines);
}

TEST(CompiledKernels, WithoutTheLaneTheNamesSayTheOpsAndNoneRanNoneSaid) {
  const AnalysisResult a = kernel_trace().run();
  const CompiledKernelStat* fwd = kernel_row(a, "graph_0_cpp_fused_add_relu_0");
  ASSERT_NE(fwd, nullptr);
  EXPECT_EQ(fwd->ops, (std::vector<std::string>{"add", "relu"}));
  EXPECT_TRUE(fwd->ops_from_name);
  EXPECT_TRUE(fwd->lines.empty());
  const AnalysisResult none = script_trace().run();
  EXPECT_TRUE(none.compiled_regions.kernels.rows.empty());
  EXPECT_EQ(to_json(none).find("compiled_kernels"), std::string::npos);
}

TEST(CompiledKernels, NamesAndMarkers) {
  EXPECT_TRUE(is_inductor_cpu_kernel_name("graph_3_cpp_fused_add_0"));
  EXPECT_TRUE(is_inductor_cpu_kernel_name("cpp_fused_add_0"));
  EXPECT_FALSE(is_inductor_cpu_kernel_name("cpp_helper"));
  EXPECT_FALSE(is_inductor_cpu_kernel_name("triton_per_fused__softmax_3"));  // a launch's range
  EXPECT_TRUE(is_inductor_gpu_kernel_name("triton_per_fused__softmax_3"));
  EXPECT_TRUE(is_inductor_kernel_name("triton_per_fused__softmax_3"));
  EXPECT_FALSE(is_inductor_kernel_name("graph_3_triton_poi_fused_add_0"));
  EXPECT_FALSE(is_inductor_kernel_name("aten::add"));
  EXPECT_EQ(inductor_kernel_name("graph_12_cpp_fused_mul_1"), "cpp_fused_mul_1");
  EXPECT_EQ(inductor_kernel_name("graph_cpp_fused_mul_1"), "graph_cpp_fused_mul_1");
  EXPECT_EQ(ops_of_kernel_name("cpp_fused_add_mul_relu_sum_threshold_backward_0"),
            (std::vector<std::string>{"add", "mul", "relu", "sum", "threshold_backward"}));
  EXPECT_EQ(ops_of_kernel_name("triton_per_fused__softmax_native_layer_norm_12"),
            (std::vector<std::string>{"_softmax", "native_layer_norm"}));
  EXPECT_TRUE(ops_of_kernel_name("triton_tem_mm_0").empty());

  LaneKernel k;
  k.name = "cpp_fused_add_0";
  k.range = "graph_0_cpp_fused_add_0";
  k.ops = {"add", "mul"};
  k.lines = {{"/a b/train:1.py", 12, "x = y  # a: 3"}, {"/w/t.py", 3, ""}};
  const auto back = parse_kernel_marker(kernel_marker_detail(k));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->name, k.name);
  EXPECT_EQ(back->range, k.range);
  EXPECT_EQ(back->ops, k.ops);
  EXPECT_EQ(back->lines, k.lines);
  const std::string note = kernel_note(*back);
  EXPECT_NE(note.find("fuses add, mul"), std::string::npos) << note;
  EXPECT_NE(note.find("/w/t.py:3"), std::string::npos) << note;
}

}  // namespace
}  // namespace tb::prof
