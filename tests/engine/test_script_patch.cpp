// The tuned configuration as a patch of the user's script (engine/script_patch.h): applied with `patch -p1`
// (and checked by `git apply`), the script run plainly, without TuneBench, runs the tuned configuration. The
// script is written the way people write one: imports, a model class, a DataLoader call over several lines,
// an optimizer built from model.parameters(), a training function.
#include <gtest/gtest.h>

#include <cmath>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include "engine/script_patch.h"
#include "script_lines.h"
#include "engine/tuner.h"

using namespace tb::engine;
namespace fs = std::filesystem;

namespace {

constexpr const char* kScript = R"(import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.fc = nn.Linear(8 * 6 * 6, 4)

    def forward(self, x):
        return self.fc(torch.flatten(torch.relu(self.conv(x)), 1))


def train(model, loader, optimizer):
    seen = {}
    for images, target in loader:
        optimizer.zero_grad()
        output = model(images)
        loss = nn.functional.cross_entropy(output.float(), target)
        loss.backward()
        optimizer.step()
        seen["dtype"] = str(output.dtype)
        seen["grads_none_after_zero"] = None
    optimizer.zero_grad()
    seen["grads_none_after_zero"] = all(p.grad is None for p in model.parameters())
    return seen


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1)
    args = parser.parse_args()
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 3, 8, 8), torch.randint(0, 4, (64,)))
    loader = DataLoader(
        data,
        batch_size=16,
        shuffle=True,
    )
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(args.epochs):
        seen = train(model, loader, optimizer)
    print("workers", loader.num_workers, "persistent", loader.persistent_workers)
    print("threads", torch.get_num_threads())
    print("dtype", seen["dtype"], "grads_none", seen["grads_none_after_zero"])
    print("compiled", getattr(model, "_compiled_call_impl", None) is not None)
    print("channels_last", model.conv.weight.is_contiguous(memory_format=torch.channels_last))


if __name__ == "__main__":
    main()
)";

using tb::test_util::line_of;

std::string run(const std::string& cmd) {
  std::string out;
  if (FILE* p = popen((cmd + " 2>&1").c_str(), "r")) {
    char buf[4096];
    while (fgets(buf, sizeof buf, p)) out += buf;
    const int rc = pclose(p);
    if (rc != 0) out += "\n[exit " + std::to_string(rc) + "]";
  }
  return out;
}

Trial held(const std::string& knob, double ratio) {
  Trial t;
  t.phase = "final";
  t.knob = knob;
  t.accepted = true;
  t.estimate.ratio = ratio;
  t.estimate.lo = ratio * 0.9;
  t.estimate.hi = ratio * 1.1;
  return t;
}

class ScriptPatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tb_patch_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "src");
    script_ = (dir_ / "src" / "train.py").string();
    std::ofstream(script_) << kScript;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A tune of the script as the launcher would have described it: where its DataLoader, optimizer and the
  // model's forward are.
  TuneResult tune(const Config& kept) {
    TuneResult r;
    const std::string text = kScript;
    auto site = [&](const char* kind, const char* needle) {
      const int n = line_of(text, needle);
      std::istringstream in(text);
      std::string l;
      for (int i = 0; i < n; ++i) std::getline(in, l);
      return nlohmann::json{{"kind", kind}, {"file", script_}, {"line", n}, {"code", l.substr(l.find_first_not_of(' '))}};
    };
    r.environment = {{"model", "script:" + script_},
                     {"device", "cpu: test"},
                     {"source", {site("dataloader", "loader = DataLoader("), site("optimizer", "torch.optim.SGD("),
                                 site("forward", "output = model(images)")}}};
    r.baseline = {{"workers", "0"}, {"persistent_workers", "off"}, {"amp", "off"}, {"intra_op_threads", "2"},
                  {"zero_grad_none", "on"}, {"compile", "off"}, {"channels_last", "off"}, {"cpu_allocator", "glibc"}};
    r.final_config = r.baseline;
    for (const auto& [k, v] : kept) {
      r.final_config[k] = v;
      r.trials.push_back(held(k, 1.25));
    }
    return r;
  }

  fs::path dir_;
  std::string script_;
};

TEST_F(ScriptPatchTest, AppliedThePlainScriptRunsTheTunedConfiguration) {
  // zero_grad_none=off: torch 2.x's zero_grad() already sets gradients to None, so the edit that shows is
  // set_to_none=False.
  const auto r = tune({{"workers", "2"}, {"persistent_workers", "on"}, {"amp", "bf16"}, {"intra_op_threads", "1"},
                       {"zero_grad_none", "off"}, {"compile", "on"}, {"channels_last", "on"},
                       {"cpu_allocator", "glibc_tuned"}});
  const ScriptPatch p = script_patch(r, dir_.string());
  EXPECT_TRUE(p.unplaced.empty()) << p.unplaced.front();
  ASSERT_FALSE(p.diff.empty());
  EXPECT_NE(p.diff.find("--- a/src/train.py\n+++ b/src/train.py\n"), std::string::npos) << p.diff;
  // Each change carries its measured gain.
  EXPECT_NE(p.diff.find("# tunebench: DataLoader(num_workers=2, persistent_workers=True): workers 1.25x [1.12, 1.38]"),
            std::string::npos) << p.diff;
  EXPECT_NE(p.diff.find("amp=bf16: 1.25x [1.12, 1.38]"), std::string::npos) << p.diff;
  // glibc's thresholds pinned from inside the script, for it and the loader workers it forks.
  EXPECT_NE(p.diff.find("+ctypes.CDLL(None).mallopt(-3, 256 << 20)  # M_MMAP_THRESHOLD"), std::string::npos) << p.diff;
  const std::string diff_path = (dir_ / "tuned.diff").string();
  std::ofstream(diff_path) << p.diff;

  const std::string before = run("cd " + dir_.string() + " && " + TB_TEST_PYTHON + " src/train.py");
  EXPECT_NE(before.find("workers 0 persistent False"), std::string::npos) << before;
  EXPECT_NE(before.find("dtype torch.float32 grads_none True"), std::string::npos) << before;

  const std::string check = run("cd " + dir_.string() + " && git apply --check " + diff_path);
  EXPECT_EQ(check, "") << check << "\n" << p.diff;
  const std::string applied = run("cd " + dir_.string() + " && patch -p1 < " + diff_path);
  ASSERT_EQ(applied.find("[exit"), std::string::npos) << applied << "\n" << p.diff;

  // The compiled model is what the patch places (model.compile(): the script reads its compiled wrapper back);
  // compiling it on a CPU, ~13 s here, tells nothing of the patch, so the run keeps the wrapper and skips the
  // compiler (TORCHDYNAMO_DISABLE: the wrapper then calls the model as it is).
  const std::string after =
      run("cd " + dir_.string() + " && TORCHDYNAMO_DISABLE=1 " + TB_TEST_PYTHON + " src/train.py");
  EXPECT_NE(after.find("workers 2 persistent True"), std::string::npos) << after << "\n" << p.diff;
  EXPECT_NE(after.find("threads 1"), std::string::npos) << after;
  EXPECT_NE(after.find("dtype torch.bfloat16 grads_none False"), std::string::npos) << after;
  EXPECT_NE(after.find("compiled True"), std::string::npos) << after;
  EXPECT_NE(after.find("channels_last True"), std::string::npos) << after;
}

// The figure in the patch is the confirmed one: a headline measured in fresh processes is what a plain start
// of the patched script gets, whatever the tune's own process measured (a script's tune wrote its in-process
// 12.82x beside a fresh-process 1.07x). An undecided headline keeps nothing, so there is no patch.
TEST_F(ScriptPatchTest, ThePatchCarriesTheFreshProcessFigure) {
  auto r = tune({{"workers", "2"}});
  r.trials.back().estimate = {12.82, 10.9, 15.1};  // in the tune's process
  r.verdict = "faster";
  r.speedup = {1.31, 1.12, 1.52};
  r.speedup_fresh_processes = true;
  ScriptPatch p = script_patch(r, dir_.string());
  EXPECT_NE(p.diff.find("workers 1.31x [1.12, 1.52] in fresh processes"), std::string::npos) << p.diff;
  EXPECT_EQ(p.diff.find("12.82"), std::string::npos) << p.diff;
  // Kept with another change: the figure says it is theirs together.
  r = tune({{"workers", "2"}, {"amp", "bf16"}});
  r.verdict = "faster";
  r.speedup = {1.31, 1.12, 1.52};
  r.speedup_fresh_processes = true;
  p = script_patch(r, dir_.string());
  EXPECT_NE(p.diff.find("amp=bf16: with the other kept changes, 1.31x [1.12, 1.52] in fresh processes"),
            std::string::npos) << p.diff;
}

// A kept compile carries its one-time cost and break-even beside its gain, from the trial that paid it (the
// final's re-measure found the variant compiled already and paid none).
TEST_F(ScriptPatchTest, AKeptCompileCarriesItsOneTimeCostAndBreakEven) {
  auto r = tune({{"compile", "on"}});
  Trial screen = held("compile", 1.1);
  screen.phase = "screen";
  screen.one_time_after_s = 55.0;
  screen.break_even_steps = 11'400;
  r.trials.insert(r.trials.begin(), screen);
  const ScriptPatch p = script_patch(r, dir_.string());
  EXPECT_NE(p.diff.find("# tunebench: compile=on: 1.25x [1.12, 1.38]; 55.0 s once, paid back after ~12,000 steps"),
            std::string::npos) << p.diff;
  r.trials.front().break_even_steps = std::nan("");  // nothing paid back: nothing said
  EXPECT_EQ(script_patch(r, dir_.string()).diff.find(" s once"), std::string::npos);
}

// Kept changes the script gives no place for are listed, not guessed; nothing kept, no patch.
TEST_F(ScriptPatchTest, WhatCannotBePlacedIsSaidAndNothingKeptIsNoPatch) {
  auto r = tune({{"compile", "on"}, {"amp", "fp16"}});
  for (auto& s : r.environment["source"])
    if (s["kind"] == "optimizer") s["code"] = "optimizer = make_optimizer(cfg)";
  const ScriptPatch p = script_patch(r, dir_.string());
  ASSERT_EQ(p.unplaced.size(), 2u);
  EXPECT_NE(p.unplaced[0].find("amp=fp16: fp16 autocast needs a torch.amp.GradScaler"), std::string::npos) << p.unplaced[0];
  EXPECT_NE(p.unplaced[1].find("compile=on: the model was not found"), std::string::npos) << p.unplaced[1];
  EXPECT_TRUE(p.diff.empty()) << p.diff;
  EXPECT_TRUE(script_patch(tune({}), dir_.string()).diff.empty());
}

TEST(UnifiedDiff, OneChangedLineWithThreeLinesOfContext) {
  const std::vector<std::string> a = {"a", "b", "c", "d", "e", "f", "g", "h"};
  std::vector<std::string> b = a;
  b[4] = "E";
  EXPECT_EQ(unified_diff("x.py", a, b), "--- a/x.py\n+++ b/x.py\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n");
  EXPECT_EQ(unified_diff("x.py", a, a), "");
}

}  // namespace
