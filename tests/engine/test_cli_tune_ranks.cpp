// Tuning a data-parallel run (docs/distributed.md): `tune --ranks N` measures its windows on a live group of N real ranks
// (Gloo over 127.0.0.1, PyTorch's Reducer) whose rank 0 orders every change, or with --fresh-groups every
// window in a fresh group; either way all ranks change together and the group's throughput is every rank's
// samples over the group's wall time. Here the pieces: the group's window, the fresh group's window and loss
// probe, a one-process tune's ranks knob, the refused requests. A real tune of a group is E2eRanks's
// (test_e2e_ranks.cpp); what it decides, bench/bench_ranks.py --tune's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "rank_test_data.h"
#include "engine/tuner.h"
#include "tuner/workloads/fresh_run.h"

namespace {

using Out = tb::test_util::CliOut;

class CliTuneRanks : public testing::Test {
 protected:
  static void SetUpTestSuite() { dir_ = tb::test_util::make_rank_test_images("tb_tune_ranks_"); }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }
  static std::string model_args() {
    return "--model mnist_cnn --data imagefolder:" + dir_ + "/images --input 1,28,28 --warmup 2 --dist-timeout 20";
  }
  static std::string tmp(const std::string& name) { return dir_ + "/" + name; }
  // The same model on the same folder, for the workloads built in this process.
  static tb::engine::SessionOptions options() {
    tb::engine::SessionOptions o;
    o.model = "mnist_cnn";
    o.data = "imagefolder:" + dir_ + "/images";
    o.input_channels = 1;
    o.input_height = o.input_width = 28;
    o.warmup_steps = 1;
    o.knobs["batch_size"] = "4";
    return o;
  }
  static std::string dir_;
};
std::string CliTuneRanks::dir_;

// The group's window: every rank's samples over the longest rank's wall time (the sum of their rates); a
// single process's window is its own; a rank without a window fails the measurement.
TEST(GroupWindow, SumsTheRanksSamplesOverTheLongestWall) {
  const nlohmann::json group = {
      {"window", {{"steps", 5}, {"samples", 20}, {"wall_s", 1.0}, {"warmup_steps", 2}}},
      {"ranks",
       {{{"rank", 0}, {"window", {{"steps", 5}, {"samples", 20}, {"wall_s", 1.0}}}},
        {{"rank", 1}, {"window", {{"steps", 5}, {"samples", 20}, {"wall_s", 1.25}}}}}}};
  const auto w = tb::engine::window_of_run(group);
  EXPECT_EQ(w.steps, 5);
  EXPECT_EQ(w.samples, 40);
  EXPECT_DOUBLE_EQ(w.wall_s, 1.25);
  EXPECT_DOUBLE_EQ(w.throughput(), 32.0);

  const nlohmann::json one = {{"window", {{"steps", 5}, {"samples", 20}, {"wall_s", 0.5}}}};
  EXPECT_DOUBLE_EQ(tb::engine::window_of_run(one).throughput(), 40.0);

  nlohmann::json partial = group;
  partial["ranks"][1].erase("window");
  EXPECT_THROW(tb::engine::window_of_run(partial), tb::engine::TrialFailure);
  EXPECT_THROW(tb::engine::window_of_run(nlohmann::json{{"error", "rank 1 died"}}), tb::engine::TrialFailure);
}

// The fresh groups' workload (--fresh-groups, and the live tune's loss probes): the DDP knobs apply in it, and
// the loss probe trains the group with the knob: fp16 gradient compression leaves the first loss (before any
// update) and changes the later ones. (Its windows are run_fresh's of a group, which the test below measures.)
TEST_F(CliTuneRanks, TheLossProbeOfAFreshGroupTrainsTheGroupWithTheKnob) {
  ::setenv("TUNEBENCH_CLI", TB_CLI_PATH, 1);
  auto w = tb::engine::make_group_workload(options(), 2, 20);
  ::unsetenv("TUNEBENCH_CLI");
  bool ddp_applies = false;
  for (const auto& k : w->knobs())
    if (k.info.id == "comm_hook") ddp_applies = k.applicability.applicable;
  EXPECT_TRUE(ddp_applies) << "the DDP knobs act in a group";
  EXPECT_EQ(w->cpu_cores(), std::max(1, int(std::thread::hardware_concurrency()) / 2));
  EXPECT_FALSE(w->fresh_windows().empty());
  tb::engine::Config base = w->baseline();
  const auto plain = w->loss_probe(base, 3);
  tb::engine::Config fp16 = base;
  fp16["comm_hook"] = "fp16";
  const auto compressed = w->loss_probe(fp16, 3);
  ASSERT_EQ(plain.size(), 3u);
  ASSERT_EQ(compressed.size(), 3u);
  EXPECT_DOUBLE_EQ(plain[0], compressed[0]) << "same weights, same batch before any update";
  EXPECT_NE(plain[2], compressed[2]) << "the compressed gradients train differently";
  EXPECT_NEAR(plain[2], compressed[2], 0.05 * std::abs(plain[2]));
}

// A one-process tune on a machine with cores to share tries `ranks` like the other process knobs (the search on
// simulated worlds, test_tuner_search.cpp, holds that those are measured in fresh processes): here, that it is
// one of them, and that its fresh window is a group of 2 (run --ranks 2) whose samples are both ranks'.
TEST_F(CliTuneRanks, ASingleProcessTunesRanksKnobIsMeasuredInAFreshGroup) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core: ranks does not apply";
  ::setenv("TUNEBENCH_CLI", TB_CLI_PATH, 1);
  auto w = tb::engine::make_session_workload(options());
  bool applicable = false, process = false;
  for (const auto& k : w->knobs())
    if (k.info.id == "ranks") {
      applicable = k.applicability.applicable;
      process = k.info.process_scope;
    }
  EXPECT_TRUE(applicable) << "a machine of " << std::thread::hardware_concurrency() << " cores";
  EXPECT_TRUE(process) << "a group starts with its processes: the tuner measures it in fresh ones";
  tb::engine::Config two = w->baseline();
  two["ranks"] = "2";
  const auto win = w->measure_fresh(two, 3);
  ::unsetenv("TUNEBENCH_CLI");
  ASSERT_TRUE(win.has_value());
  EXPECT_EQ(win->steps, 3);
  EXPECT_EQ(win->samples, 2 * 4 * 3) << "both ranks' samples";
}

TEST_F(CliTuneRanks, BadRequestsAreOneLineErrors) {
  Out r = tb::test_util::run_cli_shell("", "tune --simulate --ranks 2", 60);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("(--ranks, or under torchrun) runs the engine's own data-parallel run"), std::string::npos)
      << r.err;
  r = tb::test_util::run_cli_shell("WORLD_SIZE=2 RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=1",
                                   "tune " + model_args() + " --ranks 2", 60);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("drop --ranks under torchrun"), std::string::npos) << r.err;
  r = tb::test_util::run_cli_shell("WORLD_SIZE=2 RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=1", "tune --simulate", 60);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("(--ranks, or under torchrun) runs the engine's own"), std::string::npos) << r.err;
  // A group that cannot start its baseline fails before the budget is spent, with the rank's reason (live:
  // rank 0 says it, and the other rank its own; in fresh groups, the first group's rank).
  for (const char* mode : {"", " --fresh-groups"}) {
    r = tb::test_util::run_cli_shell("", "tune --model mnist_cnn --data imagefolder:" + tmp("nowhere") + " --ranks 2" + mode, 120);
    EXPECT_EQ(r.code, 2) << mode;
    EXPECT_NE(r.err.find("error: the baseline group cannot run"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("nowhere"), std::string::npos) << r.err;
    EXPECT_LE(std::count(r.err.begin(), r.err.end(), '\n'), 4) << r.err;
  }
}

}  // namespace
