// Tuning a data-parallel run (docs/distributed.md): `tune --ranks N` measures its windows on a live group of N real ranks
// (Gloo over 127.0.0.1, PyTorch's Reducer) whose rank 0 orders every change, or with --fresh-groups every
// window in a fresh group; either way all ranks change together, the group's throughput is every rank's
// samples over the group's wall time, and the snapshots show the ranks' wait for their all-reduces.
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

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f, nullptr, false);
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

class CliTuneRanks : public testing::Test {
 protected:
  static void SetUpTestSuite() { dir_ = tb::test_util::make_rank_test_images("tb_tune_ranks_"); }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }
  static std::string model_args() {
    return "--model mnist_cnn --data imagefolder:" + dir_ + "/images --input 1,28,28 --warmup 2 --dist-timeout 20";
  }
  static std::string tmp(const std::string& name) { return dir_ + "/" + name; }
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

// A real tune of two ranks, live and in fresh groups: the DDP knobs are tried (they apply only in a group),
// every trial's windows are group windows, the loss guard runs for gradient compression, and the baseline
// snapshot has the ranks' communication wait. The report says how it measured.
TEST_F(CliTuneRanks, TunesTheGroupWithTheDdpKnobsAndReportsTheCommunication) {
  for (const bool fresh : {false, true}) {
  SCOPED_TRACE(fresh ? "--fresh-groups" : "live group");
  const std::string measured = fresh ? "fresh group of 2 ranks" : "the running group of 2 ranks";
  const std::string js = tmp("tune.json"), rep = tmp("tune.html");
  Out r = tb::test_util::run_cli_shell(
      "", "tune " + model_args() + " --ranks 2 --set batch_size=4 --knobs bucket_cap_mb,comm_hook,static_graph " +
              (fresh ? "--fresh-groups --budget 70" : "--budget 40") + " --rounds 2 --json " + js + " --report " + rep,
      600);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = read_json(js);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["environment"]["ranks"], 2);
  EXPECT_NE(j["environment"]["measurement"].get<std::string>().find(measured), std::string::npos);
  std::set<std::string> tried;
  for (const auto& t : j["trials"]) {
    tried.insert(t["knob"].get<std::string>());
    if (t["knob"] == "comm_hook" && (t["accepted"].get<bool>() || t["outcome"] == "drift"))
      EXPECT_TRUE(t["loss_drift"].is_number()) << "fp16 compression changes the gradients: the guard must run";
    EXPECT_NE(t["outcome"], "failed") << t.dump();
  }
  std::map<std::string, std::string> skipped;
  for (const auto& s : j.value("skipped", nlohmann::json::array()))
    skipped[s.value("knob", std::string())] = s.value("reason", std::string());
  for (const char* k : {"bucket_cap_mb", "comm_hook", "static_graph"})
    EXPECT_TRUE(tried.count(k) || skipped.count(k)) << k << " was neither tried nor said skipped";
  // A live group's windows are cheap: its first DDP knob fits the budget. A fresh group costs ~15-30 s a
  // window pair here and more under CI's parallel load, where the tuner may skip even the first knob: then
  // it must say it was the budget.
  if (!fresh || !skipped.count("bucket_cap_mb"))
    EXPECT_TRUE(tried.count("bucket_cap_mb")) << "the first DDP knob fits the budget";
  else
    EXPECT_EQ(skipped["bucket_cap_mb"].rfind("budget", 0), 0u) << skipped["bucket_cap_mb"];
  // The baseline's snapshot: rank 0 of the group waits for its all-reduces.
  ASSERT_FALSE(j["snapshots"].empty());
  double comm = -1;
  for (const auto& [part, ms] : j["snapshots"][0]["breakdown_ms"].items())
    if (part == "comm wait") comm = ms.get<double>();
  EXPECT_GT(comm, 0) << j["snapshots"][0].dump();
  EXPECT_EQ(j["snapshots"][0]["ranks"], 2) << "every rank's trace analysed (the straggler needs them)";
  const std::string html = slurp(rep);
  EXPECT_NE(html.find(measured), std::string::npos);
  }
}

// The workload itself: a window holds both ranks' samples, and the loss probe trains the group with the
// knob: fp16 gradient compression leaves the first loss (before any update) and changes the later ones.
TEST_F(CliTuneRanks, GroupWindowsCountEveryRankAndTheLossProbeTrainsTheGroup) {
  ::setenv("TUNEBENCH_CLI", TB_CLI_PATH, 1);
  tb::engine::SessionOptions o;
  o.model = "mnist_cnn";
  o.data = "imagefolder:" + dir_ + "/images";
  o.input_channels = 1;
  o.input_height = o.input_width = 28;
  o.warmup_steps = 1;
  o.knobs["batch_size"] = "4";
  auto w = tb::engine::make_group_workload(o, 2, 20);
  ::unsetenv("TUNEBENCH_CLI");
  bool ddp_applies = false;
  for (const auto& k : w->knobs())
    if (k.info.id == "comm_hook") ddp_applies = k.applicability.applicable;
  EXPECT_TRUE(ddp_applies) << "the DDP knobs act in a group";
  EXPECT_EQ(w->cpu_cores(), std::max(1, int(std::thread::hardware_concurrency()) / 2));
  EXPECT_FALSE(w->fresh_windows().empty());
  tb::engine::Config base = w->baseline();
  w->apply(base);
  const auto win = w->measure(3);
  EXPECT_EQ(win.steps, 3);
  EXPECT_EQ(win.samples, 2 * 4 * 3) << "both ranks' samples";
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

// A one-process tune on a machine with cores to share tries `ranks` like the other process knobs: in fresh
// processes, the candidate a group of 2 (run --ranks 2), against the baseline. The budget leaves room for the
// trial and its final check when the machine is loaded (at 40 s, a loaded 2-core machine skipped it for budget).
TEST_F(CliTuneRanks, ASingleProcessTuneTriesTwoRanksInFreshProcesses) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core: ranks does not apply";
  const std::string js = tmp("ranks_knob_tune.json");
  Out r = tb::test_util::run_cli_shell(
      "", "tune " + model_args() + " --set batch_size=4 --knobs ranks --budget 60 --rounds 2 --json " + js, 600);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = read_json(js);
  bool tried = false;
  for (const auto& t : j["trials"])
    if (t["knob"] == "ranks") {
      tried = true;
      EXPECT_EQ(t["phase"], "process");
      EXPECT_EQ(t["value"], "2");
      EXPECT_TRUE(t["fresh_processes"].get<bool>());
      EXPECT_NE(t["outcome"], "failed") << t["reason"];
    }
  EXPECT_TRUE(tried) << r.out;
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
