// The patch a script's tune writes is checked before it is written (engine/patch_check.h): the patched script
// and the original, each run plainly in fresh processes, alternated. The script reads its samples the way a
// slow store is read (a sleep per sample, so the figures hold on a busy machine): from a loader worker the
// read takes as long as in the main process (workers pay), or, in the other world, eight times as long (a
// store that serialises its readers: workers lose). The same patch (num_workers=2) is faster in one world and
// slower in the other; a check that ran the original twice would decide neither.
//
// Also the live script standing still while a fresh process is measured beside it (client/script_runner.h
// pause): a step that spanned the fresh window never enters the next in-process window.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <unistd.h>

#include "client/script_runner.h"
#include "engine/patch_check.h"
#include "engine/script_patch.h"
#include "script_lines.h"
#include "engine/tuner.h"

using namespace tb::engine;
namespace fs = std::filesystem;

namespace {

std::string script_text(int worker_ms) {
  return R"(import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info


class Store(Dataset):
    """Samples from a store that takes 5 ms a read, and )" + std::to_string(worker_ms) + R"( ms from a worker process."""

    def __len__(self):
        return 400

    def __getitem__(self, i):
        time.sleep()" + std::to_string(worker_ms) + R"( / 1000 if get_worker_info() is not None else 0.005)
        return torch.full((8,), float(i % 7)), torch.ones(1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=100)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1)
    loader = DataLoader(Store(), batch_size=4, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
    for epoch in range(args.epochs):
        for x, y in loader:
            optimizer.zero_grad()
            out = model(x)
            torch.nn.functional.mse_loss(out, y).backward()
            optimizer.step()


if __name__ == "__main__":
    main()
)";
}

using tb::test_util::line_of;

class PatchCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tb_patch_check_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    script_ = (dir_ / "train.py").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  tb::client::ScriptOptions options() const {
    tb::client::ScriptOptions o;
    o.script = script_;
    o.python = TB_TEST_PYTHON;
    return o;
  }

  // A tune that kept workers=2, as the launcher would have described the script.
  TuneResult kept_workers(const std::string& text) const {
    TuneResult r;
    const int n = line_of(text, "loader = DataLoader(");
    r.environment = {{"model", "script:" + script_},
                     {"device", "cpu: test"},
                     {"source", {{{"kind", "dataloader"}, {"file", script_}, {"line", n},
                                  {"code", "loader = DataLoader(Store(), batch_size=4, shuffle=True)"}}}}};
    r.baseline = {{"workers", "0"}, {"cpu_allocator", "glibc"}};
    r.final_config = {{"workers", "2"}, {"cpu_allocator", "glibc"}};
    r.verdict = "faster";
    r.speedup = {1.8, 1.5, 2.1};
    r.speedup_fresh_processes = true;
    return r;
  }

  // The check of the workers=2 patch in the world where a worker reads at `worker_ms` a sample. One workload
  // (its live script released, as the CLI does) checks every world: its fresh processes read the file as it is.
  PatchCheck check(Workload& w, int worker_ms) {
    const std::string text = script_text(worker_ms);
    std::ofstream(script_) << text;
    const TuneResult r = kept_workers(text);
    const ScriptPatch p = script_patch(r, dir_.string());
    EXPECT_EQ(p.files.size(), 1u);
    EXPECT_NE(p.diff.find("num_workers=2"), std::string::npos) << p.diff;
    if (p.files.empty()) return {};
    EXPECT_EQ(p.files[0].first, fs::absolute(script_).lexically_normal().string());
    EXPECT_NE(p.files[0].second.find("num_workers=2"), std::string::npos) << p.files[0].second;
    PatchCheckOptions o;
    o.steps = 10;
    o.min_pairs = o.max_pairs = 3;
    PatchCheck c = check_script_patch(w, p, o);
    // The user's file is as it was.
    std::ifstream in(script_);
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_EQ(ss.str(), text);
    return c;
  }

  fs::path dir_;
  std::string script_;
};

TEST_F(PatchCheckTest, APatchThatPaysIsConfirmedOneThatLosesIsNotAndOneThatFailsSaysWhy) {
  std::ofstream(script_) << script_text(5);
  auto w = make_script_workload(options());
  w->release();
  const PatchCheck pays = check(*w, 5);
  EXPECT_EQ(pays.verdict, "faster") << pays.text();
  EXPECT_EQ(pays.pairs, 3);
  EXPECT_GT(pays.estimate.ratio, 1.3) << pays.text();
  EXPECT_TRUE(pays.confirmed());
  EXPECT_NE(pays.text().find("the patched script against the original, each run plainly in fresh processes: "),
            std::string::npos) << pays.text();

  const PatchCheck loses = check(*w, 40);
  EXPECT_EQ(loses.verdict, "slower") << loses.text();
  EXPECT_LT(loses.estimate.ratio, 0.7) << loses.text();
  EXPECT_NE(loses.text().find("SLOWER"), std::string::npos) << loses.text();
  EXPECT_FALSE(loses.confirmed());

  // The figure that goes into a confirmed patch is the check's.
  const std::string text = script_text(5);
  std::ofstream(script_) << text;
  ScriptPatch p = script_patch(kept_workers(text), dir_.string(), pays.estimate);
  EXPECT_NE(p.diff.find("the patched script against the original, in fresh processes"), std::string::npos) << p.diff;
  EXPECT_EQ(p.diff.find("1.80x"), std::string::npos) << p.diff;

  // A patched text that fails: one line, nothing confirmed.
  ASSERT_EQ(p.files.size(), 1u);
  p.files[0].second = "import sys\nsys.exit('the patched text is broken')\n";
  PatchCheckOptions o;
  o.steps = 5;
  const PatchCheck failed = check_script_patch(*w, p, o);
  EXPECT_EQ(failed.verdict, "failed") << failed.text();
  EXPECT_NE(failed.text().find("could not run: "), std::string::npos) << failed.text();
  EXPECT_FALSE(failed.confirmed());
}

// While a fresh process is measured the live script stands still, and the step it was in when stopped is in
// no in-process window: the next window's steps are the script's ~20 ms ones, not one step as long as the
// fresh window (it once trained on until its unread messages filled the pipe, beside the fresh process).
TEST_F(PatchCheckTest, TheLiveScriptStandsStillWhileAFreshProcessIsMeasured) {
  std::ofstream(script_) << script_text(5);
  {
    tb::client::ScriptRunner r;
    ASSERT_TRUE(r.start(options()));
    ASSERT_TRUE(r.pause());
    while (r.next(0.5)) {
    }  // what it sent before it stopped
    const int64_t seen = r.steps_seen();
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    EXPECT_FALSE(r.next(0.2)) << "a paused script sent a message";
    EXPECT_EQ(r.steps_seen(), seen);
    r.resume();
    EXPECT_GT(r.resumed_ns(), 0);
    bool stepped = false;
    for (int i = 0; i < 50 && !stepped; ++i)
      if (auto m = r.next(1.0)) stepped = m->value("type", std::string()) == "step";
    EXPECT_TRUE(stepped);
    r.stop(5);
  }
  auto w = make_script_workload(options());
  const tb::measure::Window before = w->measure(10);
  const auto fresh = w->measure_fresh(w->baseline(), 10);
  ASSERT_TRUE(fresh);
  const tb::measure::Window after = w->measure(10);
  const double step_before = before.wall_s / double(before.steps), step_after = after.wall_s / double(after.steps);
  EXPECT_LT(step_after, 3 * step_before + 0.05) << "a step spanned the fresh window: " << step_after * 1e3 << " ms a step after, "
                                                << step_before * 1e3 << " ms before";
}

}  // namespace
