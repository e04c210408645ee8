// The patch a script's tune writes is checked before it is written (engine/patch_check.h): the patched script
// and the original, each run plainly in fresh processes, alternated (AB, BA, ...). The check's rule is tested here
// on recorded windows (a workload whose fresh processes return the figures a world gives): a patch that pays is
// confirmed with its figure, one that loses is not, an undecided one takes more pairs, one that fails says why,
// and the patched copies it runs are the patch's text in the original's place, removed after. Whether a real
// patch pays on this machine is a measurement: bench/bench_engine_patch_check.cpp (the same script in a world
// where workers pay and one where they lose).
//
// Small real pieces: a patched copy run in a fresh process really replaces the original (a broken copy fails where
// the original trains), and the live script stands still while a fresh process is measured beside it
// (client/script_runner.h pause): a step that spanned the fresh process never enters the next in-process window.
// The script reads its samples the way a slow store is read (a sleep per sample).
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

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

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  return {std::istreambuf_iterator<char>(f), {}};
}

// Fresh processes as a world gives them, recorded: the original at `before` samples/s, the patched script at
// `after`, each window off by a fixed pattern of `spread` (0.02: -2%, 0, +2%, ...) so that pairs have a spread to
// pool. Each call's sources are kept, with the text each copy held when it ran. `fail`: the patched arm's
// process fails with this message.
class RecordedFresh : public Workload {
 public:
  RecordedFresh(double before, double after, double spread = 0.02) : before_(before), after_(after), spread_(spread) {}
  std::vector<std::vector<std::pair<std::string, std::string>>> calls;
  std::vector<std::string> copy_texts;
  std::string fail;

  std::optional<tb::measure::Window> measure_patched(const std::vector<std::pair<std::string, std::string>>& sources,
                                                 int steps) override {
    calls.push_back(sources);
    for (const auto& [original, copy] : sources) copy_texts.push_back(read_file(copy));
    if (!sources.empty() && !fail.empty()) throw TrialFailure(fail, false);
    const double off = 1 + spread_ * double(int(calls.size() % 3) - 1);
    tb::measure::Window w;
    w.steps = steps;
    w.samples = 4 * steps;
    w.wall_s = double(w.samples) / ((sources.empty() ? before_ : after_) * off);
    return w;
  }
  std::vector<KnobState> knobs() override { return {}; }
  Config baseline() override { return {}; }
  void apply(const Config&) override {}
  tb::measure::Window measure(int) override { throw TrialFailure("no in-process windows here", false); }
  std::vector<double> loss_probe(const Config&, int) override { throw TrialFailure("no loss probe", false); }
  double now_s() override { return 0; }
  int cpu_cores() override { return 2; }
  nlohmann::json describe() override { return nlohmann::json::object(); }

 private:
  double before_, after_, spread_;
};

class PatchCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tb_patch_check_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    script_ = (dir_ / "train.py").string();
    std::ofstream(script_) << script_text(5);
  }
  void TearDown() override { fs::remove_all(dir_); }

  tb::client::ScriptOptions options() const {
    tb::client::ScriptOptions o;
    o.script = script_;
    o.python = TB_TEST_PYTHON;
    return o;
  }

  // A tune that kept workers=2, as the launcher would have described the script.
  TuneResult kept_workers() const {
    const std::string text = script_text(5);
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

  ScriptPatch patch() const {
    ScriptPatch p = script_patch(kept_workers(), dir_.string());
    EXPECT_EQ(p.files.size(), 1u);
    EXPECT_NE(p.diff.find("num_workers=2"), std::string::npos) << p.diff;
    if (!p.files.empty()) {
      EXPECT_EQ(p.files[0].first, fs::absolute(script_).lexically_normal().string());
      EXPECT_NE(p.files[0].second.find("num_workers=2"), std::string::npos) << p.files[0].second;
    }
    return p;
  }

  // The check of `p` over `w` with `pairs` pairs at least and `most` at most; the user's file is as it was.
  PatchCheck check(Workload& w, const ScriptPatch& p, int pairs = 3, int most = 3) {
    PatchCheckOptions o;
    o.steps = 10;
    o.min_pairs = pairs;
    o.max_pairs = most;
    PatchCheck c = check_script_patch(w, p, o);
    EXPECT_EQ(read_file(script_), script_text(5));
    return c;
  }

  fs::path dir_;
  std::string script_;
};

TEST_F(PatchCheckTest, APatchThatPaysIsConfirmedWithItsOwnFigure) {
  const ScriptPatch p = patch();
  ASSERT_EQ(p.files.size(), 1u);
  RecordedFresh w(100, 150);
  const PatchCheck c = check(w, p);
  EXPECT_EQ(c.verdict, "faster") << c.text();
  EXPECT_TRUE(c.confirmed());
  EXPECT_EQ(c.pairs, 3);
  EXPECT_NEAR(c.estimate.ratio, 1.5, 0.05) << c.text();
  EXPECT_NEAR(c.before, 100, 3) << c.text();
  EXPECT_NEAR(c.after, 150, 4) << c.text();
  EXPECT_EQ(c.text().rfind("the patched script against the original, each run plainly in fresh processes: " +
                            c.estimate.text(2) + " (3 alternated pairs, ",
                            0),
            0u)
      << c.text();
  EXPECT_EQ(c.text().substr(c.text().size() - 8), ": faster") << c.text();
  // AB, BA, AB: the original first in even pairs, the patched script first in odd ones; the patched arm runs the
  // patch's text in a copy that stands for the user's file, removed when the check is over.
  ASSERT_EQ(w.calls.size(), 6u);
  const std::vector<bool> patched_arm = {false, true, true, false, false, true};
  for (size_t i = 0; i < w.calls.size(); ++i) {
    EXPECT_EQ(!w.calls[i].empty(), patched_arm[i]) << "call " << i;
    if (w.calls[i].empty()) continue;
    ASSERT_EQ(w.calls[i].size(), 1u);
    EXPECT_EQ(w.calls[i][0].first, p.files[0].first);
    EXPECT_NE(w.calls[i][0].second, p.files[0].first);
    EXPECT_FALSE(fs::exists(w.calls[i][0].second)) << "a patched copy left behind: " << w.calls[i][0].second;
  }
  ASSERT_EQ(w.copy_texts.size(), 3u);
  for (const auto& t : w.copy_texts) EXPECT_EQ(t, p.files[0].second);
  // The figure that goes into a confirmed patch is the check's, not the tune's 1.80x.
  const ScriptPatch confirmed = script_patch(kept_workers(), dir_.string(), c.estimate);
  EXPECT_NE(confirmed.diff.find("the patched script against the original, in fresh processes"), std::string::npos)
      << confirmed.diff;
  EXPECT_EQ(confirmed.diff.find("1.80x"), std::string::npos) << confirmed.diff;
}

TEST_F(PatchCheckTest, APatchThatLosesIsNotConfirmed) {
  RecordedFresh w(100, 60);
  const PatchCheck c = check(w, patch());
  EXPECT_EQ(c.verdict, "slower") << c.text();
  EXPECT_NEAR(c.estimate.ratio, 0.6, 0.03) << c.text();
  EXPECT_NE(c.text().find(": SLOWER"), std::string::npos) << c.text();
  EXPECT_FALSE(c.confirmed());
}

// An interval that covers both 1 and a 5% gain takes more pairs, up to the most it may; then it says so.
TEST_F(PatchCheckTest, AnUndecidedCheckTakesMorePairsAndSaysItCouldNotDecide) {
  RecordedFresh w(100, 101, 0.15);
  const PatchCheck c = check(w, patch(), 3, 5);
  EXPECT_EQ(c.pairs, 5) << c.text();
  EXPECT_EQ(w.calls.size(), 10u);
  EXPECT_EQ(c.verdict, "undecided") << c.text();
  EXPECT_NE(c.text().find(": could not decide"), std::string::npos) << c.text();
  EXPECT_FALSE(c.confirmed());
  // Decided (a gain beyond the interval) at the first look: no pair past the least.
  RecordedFresh clear(100, 200, 0.01);
  EXPECT_EQ(check(clear, patch(), 3, 5).pairs, 3);
}

TEST_F(PatchCheckTest, APatchedScriptThatFailsSaysWhyAndLeavesNothing) {
  const ScriptPatch p = patch();
  RecordedFresh w(100, 150);
  w.fail = "the script ended before 10 measured steps";
  const PatchCheck c = check(w, p);
  EXPECT_EQ(c.verdict, "failed") << c.text();
  EXPECT_EQ(c.failure, w.fail);
  EXPECT_EQ(c.text(), "the patched script against the original, each run plainly in fresh processes: could not run: " +
                          w.fail);
  EXPECT_FALSE(c.confirmed());
  ASSERT_EQ(w.calls.size(), 2u);  // the original, then the patched script that failed
  EXPECT_FALSE(fs::exists(fs::path(w.calls[1][0].second).parent_path())) << "the copies' folder left behind";
  // A workload that runs no script measures nothing: no verdict.
  struct NoScript : RecordedFresh {
    NoScript() : RecordedFresh(1, 1) {}
    std::optional<tb::measure::Window> measure_patched(const std::vector<std::pair<std::string, std::string>>&,
                                                   int) override {
      return std::nullopt;
    }
  } none;
  EXPECT_EQ(check(none, p).verdict, "");
  EXPECT_EQ(check(none, ScriptPatch{}).verdict, "");  // nothing to check
}

// While a fresh process is measured the live script stands still (client/script_runner.h pause: its whole
// process group stopped), and goes on after.
TEST_F(PatchCheckTest, APausedScriptSendsNothingAndGoesOnWhenResumed) {
  tb::client::ScriptRunner r;
  ASSERT_TRUE(r.start(options()));
  ASSERT_TRUE(r.pause());
  while (r.next(0.5)) {
  }  // what it sent before it stopped
  const int64_t seen = r.steps_seen();
  EXPECT_FALSE(r.next(1.0)) << "a paused script sent a message";
  EXPECT_EQ(r.steps_seen(), seen);
  r.resume();
  EXPECT_GT(r.resumed_ns(), 0);
  bool stepped = false;
  for (int i = 0; i < 60 && !stepped; ++i)
    if (auto m = r.next(1.0)) stepped = m->value("type", std::string()) == "step";
  EXPECT_TRUE(stepped);
  r.stop(5);
}

// A real fresh process of a patched copy runs the copy in the original's place: a broken copy fails, in one line,
// where the original trains. Meanwhile the live script stood still, and the step it was in when stopped is in no
// in-process window after (it once trained on until its unread messages filled the pipe, beside the fresh
// process, and a step as long as the fresh process entered the next window).
TEST_F(PatchCheckTest, APatchedCopyRunsInTheOriginalsPlaceWhileTheLiveScriptStandsStill) {
  auto w = make_script_workload(options());
  const std::string copy = (dir_ / "broken_train.py").string();
  std::ofstream(copy) << "import sys\nsys.exit('the patched text is broken')\n";
  const auto t0 = std::chrono::steady_clock::now();
  std::string failure;
  try {
    w->measure_patched({{fs::absolute(script_).lexically_normal().string(), copy}}, 5);
  } catch (const TrialFailure& f) {
    failure = f.what();
  }
  const double paused_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(failure.find("the patched text is broken"), std::string::npos) << failure;
  EXPECT_EQ(read_file(script_), script_text(5));
  // The live script stood still for the whole fresh process: a step that spanned it would be as long. The next
  // window's 10 steps together are shorter than the start of a process.
  const tb::measure::Window after = w->measure(10);
  EXPECT_EQ(after.steps, 10);
  EXPECT_LT(after.wall_s, paused_s) << "a step spanned the fresh process: " << after.wall_s << " s for 10 steps, paused "
                                    << paused_s << " s";
}

}  // namespace
