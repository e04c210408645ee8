// E2eCompile: a script that compiles its model with torch.compile, run as a user runs it (`run --script --trace`,
// then `analyze` of its trace), once for the suite. The script is written as people write one: a model whose
// forward branches on a tensor's value (a graph break), compiled with dynamic=False (static shapes: faster
// kernels) while its sequence length grows twice over the run (a recompile each time), AdamW, a scheduler, a
// print of the loss now and then. Compiled with backend="aot_eager": Dynamo's graph breaks, guards and recompiles
// are the same as under Inductor, whose code generation made this suite's run 35 s with a cold cache (Inductor's
// phases: python/tests/test_compile_events.py).
//
// What holds on any machine: the run leaves the steps that compiled out of its figures and says so, its JSON
// holds the compiles the launcher read from PyTorch (the break's line of the script, the recompiles' guard), the
// trace carries the compile lane, and the run's compile lines are `analyze`'s findings word for word. How long a
// compile takes is the machine's.
//
// A second script compiles a preprocessing function with Inductor (one C++ kernel for g++ to build, no backward:
// ~20 s of this suite on a cold cache), so that the traced run's kernels are proved whole: the launcher switched
// on Inductor's kernel profiling and provenance, the trace holds the kernel's runs, and `analyze` lists it with its
// ops and the script's lines.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "profiler/compile_lane.h"
#include "profiler/range_names.h"
#include "profiler/step_lane.h"
#include "profiler/trace_io.h"

namespace {

namespace fs = std::filesystem;
using tb::test_util::CliOut;

constexpr int kBreakLine = 18;  // the `if` on .item() below
constexpr const char* kScript = R"(import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)


class Model(nn.Module):
    """A token classifier: embedding, a small MLP, a scale decided on the batch's values."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 32)
        self.mlp = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 100))

    def forward(self, x):
        h = self.emb(x)
        if h.abs().mean().item() > 10.0:  # a Python branch on a tensor's value
            h = h / 10
        return self.mlp(h)


model = Model()
compiled = torch.compile(model, dynamic=False, backend="aot_eager")
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
sched = torch.optim.lr_scheduler.StepLR(opt, 20)
for step in range(60):
    seq = 8 + 4 * (step // 20)
    x = torch.randint(0, 100, (16, seq))
    y = torch.randint(0, 100, (16, seq))
    loss = nn.functional.cross_entropy(compiled(x).reshape(-1, 100), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    if step % 20 == 0:
        print("step", step, "loss", round(loss.item(), 3))
)";

// Lines 9 and 10 below: the function's body, what its one kernel computes.
constexpr int kCenteredLine = 9, kReluLine = 10;
constexpr const char* kKernelScript = R"(import torch
import torch.nn as nn

torch.manual_seed(0)


@torch.compile
def normalize(x):
    centered = x - x.mean(dim=1, keepdim=True)
    return torch.relu(centered * 2.0)


model = nn.Linear(16, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(30):
    x = torch.randn(8, 16)
    y = torch.randint(0, 4, (8,))
    loss = nn.functional.cross_entropy(model(normalize(x)), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
)";

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  return {std::istreambuf_iterator<char>(f), {}};
}

// The lines of `text` that begin with `prefix` after optional spaces, the spaces dropped, in order.
std::vector<std::string> lines_with(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    const size_t at = l.find_first_not_of(' ');
    if (at != std::string::npos && l.compare(at, prefix.size(), prefix) == 0) out.push_back(l.substr(at));
  }
  return out;
}

class E2eCompile : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = (fs::temp_directory_path() / ("tb_e2e_compile_" + std::to_string(::getpid()))).string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ + "/train.py") << kScript;
    // Run in the script's folder, as a user does: the lines name train.py as they were given.
    run_ = tb::test_util::run_cli_shell("cd " + dir_ + " &&",
                                        "run --script train.py --trace T.json --json run.json", 600);
    analyze_ = tb::test_util::run_cli_shell("", "analyze " + dir_ + "/T.json --json " + dir_ + "/A.json", 120);
    doc_ = nlohmann::json::parse(read_file(dir_ + "/run.json"), nullptr, false);
    analysis_ = nlohmann::json::parse(read_file(dir_ + "/A.json"), nullptr, false);
    std::ofstream(dir_ + "/kernels.py") << kKernelScript;
    kernels_run_ = tb::test_util::run_cli_shell("cd " + dir_ + " &&",
                                                "run --script kernels.py --trace K.json --json krun.json", 600);
    kernels_analyze_ = tb::test_util::run_cli_shell("", "analyze " + dir_ + "/K.json --json " + dir_ + "/KA.json", 120);
    kernels_doc_ = nlohmann::json::parse(read_file(dir_ + "/krun.json"), nullptr, false);
    kernels_analysis_ = nlohmann::json::parse(read_file(dir_ + "/KA.json"), nullptr, false);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  // What a failure needs to be read: the run's warnings (the launcher's, its compile hook's among them) and the
  // end of its stderr (the script's output, the launcher's lines).
  static std::string context() {
    const std::string tail = run_.err.size() > 3000 ? run_.err.substr(run_.err.size() - 3000) : run_.err;
    return "\nwarnings: " + (doc_.is_object() ? doc_.value("warnings", nlohmann::json::array()).dump() : "?") +
           "\nstderr (end):\n" + tail;
  }

  static std::string dir_;
  static CliOut run_, analyze_, kernels_run_, kernels_analyze_;
  static nlohmann::json doc_, analysis_, kernels_doc_, kernels_analysis_;
};
std::string E2eCompile::dir_;
CliOut E2eCompile::run_, E2eCompile::analyze_, E2eCompile::kernels_run_, E2eCompile::kernels_analyze_;
nlohmann::json E2eCompile::doc_, E2eCompile::analysis_, E2eCompile::kernels_doc_, E2eCompile::kernels_analysis_;

TEST_F(E2eCompile, TheStepsThatCompiledAreLeftOutOfTheFiguresAndSaid) {
  ASSERT_EQ(run_.code, 0) << run_.out;
  ASSERT_TRUE(doc_.is_object()) << run_.out;
  const auto& tp = doc_["throughput"];
  ASSERT_TRUE(tp.contains("compiling_steps_left_out")) << tp.dump();
  const int64_t left_out = tp["compiling_steps_left_out"].get<int64_t>();
  int64_t compiling = 0;
  for (const auto& s : doc_["steps"]) compiling += s.value("compile_ns", int64_t(0)) > 0;
  EXPECT_EQ(left_out, compiling);
  EXPECT_GE(compiling, 3) << context();  // the first compile and the two recompiles, each in its step
  EXPECT_NE(run_.out.find(std::to_string(left_out) + " that compiled"), std::string::npos) << run_.out;
  const auto head = lines_with(run_.out, "compile: torch.compile took ");
  ASSERT_EQ(head.size(), 1u) << run_.out << context();
  EXPECT_NE(head[0].find("the " + std::to_string(left_out) + " steps that compiled are left out of the figures"),
            std::string::npos)
      << head[0];
}

TEST_F(E2eCompile, TheJsonHoldsTheCompilesWithTheBreaksLineAndTheRecompilesGuard) {
  ASSERT_TRUE(doc_.is_object() && doc_.contains("compiles")) << run_.out;
  auto text = [](const nlohmann::json& o, const char* k) {  // a field the launcher may send as null
    return o.contains(k) && o[k].is_string() ? o[k].get<std::string>() : std::string();
  };
  bool break_seen = false;
  int recompiles = 0;
  for (const auto& c : doc_["compiles"]) {
    for (const auto& g : c.value("graph_breaks", nlohmann::json::array()))
      if (g.value("line", 0) == kBreakLine && text(g, "file").find("train.py") != std::string::npos &&
          text(g, "reason").find("item()") != std::string::npos)
        break_seen = true;
    if (text(c, "frame") == "forward" && c["recompile"].is_string()) {
      ++recompiles;
      EXPECT_NE(c["recompile"].get<std::string>().find("size mismatch at index 1"), std::string::npos) << c.dump();
    }
  }
  EXPECT_TRUE(break_seen) << doc_["compiles"].dump();
  EXPECT_EQ(recompiles, 2) << doc_["compiles"].dump();
}

TEST_F(E2eCompile, TheTraceCarriesTheCompileLaneAndAnalyzeSaysWhatTheRunSaid) {
  ASSERT_EQ(analyze_.code, 0) << analyze_.out;
  auto t = tb::prof::load_trace(dir_ + "/T.json");
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  size_t boxes = 0;
  for (const auto& tr : (*t)->tracks())
    if (tb::prof::is_step_lane(tr) && tr.tid() == tb::prof::kCompileLaneTid)
      for (const auto& e : tr.events()) boxes += (*t)->name(e.name) == tb::prof::names::kLaneCompile;
  EXPECT_EQ(boxes, doc_["compiles"].size());
  // One voice: each finding the run printed under its compile line, analyze prints word for word.
  const auto said = lines_with(run_.out, "(from the compile lane) ");
  ASSERT_GE(said.size(), 2u) << run_.out;  // the recompiles and the graph break at least
  bool names_break = false;
  for (const std::string& l : said) {
    EXPECT_NE(analyze_.out.find(l), std::string::npos) << l << "\n---\n" << analyze_.out;
    names_break |= l.rfind("(from the compile lane) graph break at ", 0) == 0 &&
                   l.find("train.py:" + std::to_string(kBreakLine) + ": ") != std::string::npos;
  }
  EXPECT_TRUE(names_break) << run_.out;
}

// The compiled forward's runs, named by the compile lane: its compiles' regions (the first and the two recompiles,
// each a region id of its own) ran once in each traced step. Counts only: a run's time is the machine's.
TEST_F(E2eCompile, AnalyzeCountsTheForwardsCompiledRegionsOnceATracedStep) {
  ASSERT_EQ(analyze_.code, 0) << analyze_.out;
  ASSERT_TRUE(analysis_.is_object() && analysis_.contains("compiled_regions")) << analyze_.out;
  const auto& regions = analysis_["compiled_regions"];
  const int64_t steps = analysis_["steps"]["count"].get<int64_t>() - analysis_["steps"]["warmup"].get<int64_t>();
  EXPECT_EQ(regions["steps"].get<int64_t>(), steps);
  ASSERT_GT(steps, 0);
  int64_t runs = 0, ids = 0;
  for (const auto& r : regions["regions"]) {
    const std::string label = r["label"].get<std::string>();
    if (r["backward"].get<bool>() || label.rfind("forward at ", 0) != 0 || label.find("train.py:") == std::string::npos)
      continue;
    runs += r["runs"].get<int64_t>();
    ++ids;
  }
  EXPECT_EQ(runs, steps) << regions.dump(1);
  EXPECT_GE(ids, 1) << regions.dump(1);
  EXPECT_NE(analyze_.out.find("compiled regions over " + std::to_string(steps) + " traced steps"), std::string::npos)
      << analyze_.out;
}

// Inductor's kernel as it ran, back to the script's lines: the launcher's compile message carries the kernel with
// the lines Inductor's provenance gave, the trace its runs (kernel profiling on), and `analyze` counts them once a
// traced step (the function runs once a step) with its ops and those lines, in its JSON and its print.
TEST_F(E2eCompile, AnalyzeListsInductorsKernelWithItsOpsAndTheScriptsLines) {
  ASSERT_EQ(kernels_run_.code, 0) << kernels_run_.out << kernels_run_.err;
  ASSERT_TRUE(kernels_doc_.is_object() && kernels_doc_.contains("compiles")) << kernels_run_.out;
  auto at_body = [](const nlohmann::json& lines) {  // the script's file, named absolutely as the lane does
    for (const auto& l : lines)
      if (l.value("file", "").find("/kernels.py") != std::string::npos &&
          (l.value("line", 0) == kCenteredLine || l.value("line", 0) == kReluLine))
        return true;
    return false;
  };
  bool sent = false;
  for (const auto& c : kernels_doc_["compiles"])
    for (const auto& k : c.value("kernels", nlohmann::json::array()))
      sent |= k.value("name", "").rfind("cpp_", 0) == 0 && at_body(k["lines"]);
  EXPECT_TRUE(sent) << kernels_doc_["compiles"].dump(1);

  ASSERT_EQ(kernels_analyze_.code, 0) << kernels_analyze_.out;
  ASSERT_TRUE(kernels_analysis_.is_object() && kernels_analysis_.contains("compiled_kernels")) << kernels_analyze_.out;
  const auto& k = kernels_analysis_["compiled_kernels"];
  const int64_t steps =
      kernels_analysis_["steps"]["count"].get<int64_t>() - kernels_analysis_["steps"]["warmup"].get<int64_t>();
  ASSERT_GT(steps, 0);
  EXPECT_EQ(k["steps"].get<int64_t>(), steps);
  ASSERT_FALSE(k["top"].empty()) << k.dump(1);
  int64_t calls = 0;
  for (const auto& row : k["top"]) {
    EXPECT_EQ(row["kernel"].get<std::string>().rfind("cpp_fused_", 0), 0u) << row.dump();
    EXPECT_FALSE(row["ops"].empty()) << row.dump();
    EXPECT_TRUE(at_body(row["lines"])) << row.dump();
    calls += row["calls"].get<int64_t>();
  }
  // The function runs once a step, at its start: a step whose start a trace chunk's boundary cut off has no call.
  EXPECT_GT(calls, 0) << k.dump(1);
  EXPECT_LE(calls, steps * int64_t(k["top"].size())) << k.dump(1);
  EXPECT_NE(kernels_analyze_.out.find("compiled kernels over " + std::to_string(steps) + " traced steps"),
            std::string::npos)
      << kernels_analyze_.out;
  EXPECT_TRUE(kernels_analyze_.out.find("/kernels.py:" + std::to_string(kCenteredLine)) != std::string::npos ||
              kernels_analyze_.out.find("/kernels.py:" + std::to_string(kReluLine)) != std::string::npos)
      << kernels_analyze_.out;
}

}  // namespace
