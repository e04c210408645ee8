// Data-parallel runs (docs/distributed.md), the logic around the groups: torchrun's environment read into a
// rank, rank 0's one document from every rank's, and the requests refused with one line before a group forms.
// The groups themselves (run --ranks 2, torchrun, a killed rank, a killed launcher) are E2eRanks's
// (test_e2e_ranks.cpp): each runs once there.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "engine/distributed.h"
#include "engine/rank_group.h"

namespace {

using Out = tb::test_util::CliOut;

// 60 s: the test's own guard against a hang.
Out cli(const std::string& env, const std::string& args) { return tb::test_util::run_cli_shell(env, args, 60); }

std::string run_args(const std::string& extra = "") {
  return "run --model mnist_cnn --data synthetic --steps 6 --warmup 2 --set batch_size=4 --dist-timeout 15" + extra;
}

// Sets torchrun's variables for one test and restores the environment after it.
class TorchrunEnv {
 public:
  explicit TorchrunEnv(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const char* k : {"WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                          "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_RESTART_COUNT", "TUNEBENCH_DIST_TIMEOUT",
                          "TUNEBENCH_DIST_BACKEND"}) {
      if (const char* v = std::getenv(k)) saved_.emplace_back(k, v);
      ::unsetenv(k);
      names_.push_back(k);
    }
    for (const auto& [k, v] : vars) ::setenv(k, v, 1);
  }
  ~TorchrunEnv() {
    for (const auto& k : names_) ::unsetenv(k.c_str());
    for (const auto& [k, v] : saved_) ::setenv(k.c_str(), v.c_str(), 1);
  }

 private:
  std::vector<std::string> names_;
  std::vector<std::pair<std::string, std::string>> saved_;
};

// What torchrun's elastic agent sets for the second rank of a two-node job (one rank a node): the rank on its
// machine, the agent's store and restart count, the store's host; TuneBench's timeout on top.
TEST(TorchrunEnvironment, IsReadIntoTheRanksOptions) {
  {
    TorchrunEnv env({});
    auto d = tb::engine::dist_from_env();
    ASSERT_TRUE(d.ok());
    EXPECT_FALSE(d.value().has_value()) << "no WORLD_SIZE: not a rank";
  }
  TorchrunEnv env({{"WORLD_SIZE", "2"}, {"RANK", "1"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "1"},
                   {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29500"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                   {"TORCHELASTIC_RESTART_COUNT", "3"}, {"TUNEBENCH_DIST_TIMEOUT", "7"}});
  auto d = tb::engine::dist_from_env();
  ASSERT_TRUE(d.ok()) << d.error().message;
  ASSERT_TRUE(d.value().has_value());
  const auto& o = *d.value();
  EXPECT_TRUE(o.enabled());
  EXPECT_EQ(o.rank, 1);
  EXPECT_EQ(o.world_size, 2);
  EXPECT_EQ(o.local_rank, 0);
  EXPECT_EQ(o.local_world_size, 1);
  EXPECT_EQ(o.master_addr, "node0");
  EXPECT_EQ(o.master_port, 29500);
  EXPECT_TRUE(o.agent_store);
  EXPECT_EQ(o.restart_count, 3);
  EXPECT_EQ(o.timeout_s, 7);
  EXPECT_EQ(o.backend, "auto");
}

// Bad environments: one line, exit 2, nothing started.
TEST(CliDistributed, TorchrunEnvironmentMismatchesAreOneLineErrors) {
  const auto refused = [&](const std::string& env, const std::string& extra, const std::string& message) {
    Out o = cli(env, run_args(extra));
    EXPECT_EQ(o.code, 2) << env;
    EXPECT_NE(o.err.find(message), std::string::npos) << o.err;
  };
  refused("WORLD_SIZE=2 RANK=5 MASTER_PORT=29999", "", "RANK=5 is outside WORLD_SIZE=2");
  refused("WORLD_SIZE=2 RANK=0 MASTER_PORT=29999", " --ranks 3", "WORLD_SIZE=2");
  refused("WORLD_SIZE=2 RANK=0", "", "MASTER_PORT is not set");

  // The backend: a name c10d does not have here is refused up front; NCCL on a CPU run by every rank before
  // any group forms.
  refused("WORLD_SIZE=2 RANK=0 MASTER_PORT=29999 TUNEBENCH_DIST_BACKEND=mpi", "",
          "TUNEBENCH_DIST_BACKEND='mpi' is not auto, gloo or nccl");
  Out cpu_nccl = cli("TUNEBENCH_DIST_BACKEND=nccl", run_args(" --ranks 2"));
  EXPECT_NE(cpu_nccl.code, 0);
  EXPECT_NE(cpu_nccl.err.find("TUNEBENCH_DIST_BACKEND=nccl needs --device cuda"), std::string::npos) << cpu_nccl.err;
}

// A rank told to find the store on loopback while the group spans nodes (torchrun's c10d rendezvous on a first
// node whose host name resolves to itself only): the error says what to change.
TEST(CliDistributed, ALonelyRankOnLoopbackSaysToSetTheMastersAddress) {
  std::string args = run_args();
  args.replace(args.find("--dist-timeout 15"), 17, "--dist-timeout 2");
  Out lonely = cli("WORLD_SIZE=2 RANK=1 LOCAL_WORLD_SIZE=1 MASTER_ADDR=localhost MASTER_PORT=1", args);
  EXPECT_NE(lonely.code, 0);
  EXPECT_NE(lonely.err.find("cannot reach the rendezvous store at localhost:1"), std::string::npos) << lonely.err;
  EXPECT_NE(lonely.err.find("only 1 of the 2 ranks run here"), std::string::npos) << lonely.err;
  EXPECT_NE(lonely.err.find("--master_addr"), std::string::npos) << lonely.err;
}

// `--set ranks=2` is --ranks 2 (E2eRanks runs it); a disagreeing --ranks is a one-line error.
TEST(CliDistributed, ARanksFlagThatDisagreesWithTheKnobIsRefused) {
  Out r = cli("", "run --model mnist_cnn --data synthetic --set batch_size=4,ranks=2 --ranks 3");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--ranks 3 disagrees with --set ranks=2"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// A rank's run document as `run --json` writes it (the fields rank 0's merge reads).
nlohmann::json rank_doc(int rank, double sps, double window_sps, int steps) {
  nlohmann::json d = {{"pid", 1000 + rank},
                      {"throughput", {{"samples_per_s", sps}}},
                      {"window", {{"samples_per_s", window_sps}, {"steps", steps}}},
                      {"steps", nlohmann::json::array()},
                      {"parameter_digest", "abc"},
                      {"distributed", {{"rank", rank}}}};
  for (int i = 0; i < steps; ++i) d["steps"].push_back({{"loss", 1.0 + rank}});
  return d;
}

// Every rank trains its own shard at the same time: the group's rates are the sums of the ranks'; each rank
// keeps its own entry; rank 0's document is the base.
TEST(RankDocuments, TheGroupsRatesAreTheSumsOfTheRanks) {
  const auto j = tb::engine::merge_rank_results({rank_doc(0, 100, 90, 6).dump(), rank_doc(1, 110, 80, 6).dump()});
  EXPECT_EQ(j["world_size"], 2);
  EXPECT_TRUE(j["missing_ranks"].empty());
  EXPECT_FALSE(j.contains("error"));
  ASSERT_EQ(j["ranks"].size(), 2u);
  EXPECT_EQ(j["ranks"][1]["rank"], 1);
  EXPECT_EQ(j["ranks"][1]["pid"], 1001);
  EXPECT_DOUBLE_EQ(j["throughput"]["samples_per_s"].get<double>(), 210);
  EXPECT_DOUBLE_EQ(j["throughput"]["rank0_samples_per_s"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(j["window"]["samples_per_s"].get<double>(), 170);
  EXPECT_EQ(j["steps"].size(), 6u) << "rank 0's own steps";
}

// A rank that never posted (killed) is named and the group has no window; a rank that failed says so first.
TEST(RankDocuments, AMissingRankIsNamedAndThePartialGroupHasNoWindow) {
  nlohmann::json r0 = rank_doc(0, 100, 90, 3);
  r0["error"] = "training step 3 failed";
  const auto j = tb::engine::merge_rank_results({r0.dump(), ""});
  EXPECT_EQ(j["world_size"], 2);
  EXPECT_EQ(j["missing_ranks"], nlohmann::json::array({1}));
  EXPECT_EQ(j["ranks"].size(), 1u);
  EXPECT_FALSE(j.contains("window"));
  EXPECT_EQ(j["error"], "training step 3 failed; rank(s) 1 did not report within the collective timeout");

  nlohmann::json r1 = rank_doc(1, 0, 0, 2);
  r1["error"] = "out of memory";
  r1.erase("window");
  const auto k = tb::engine::merge_rank_results({rank_doc(0, 100, 90, 6).dump(), r1.dump()});
  EXPECT_TRUE(k["missing_ranks"].empty());
  EXPECT_EQ(k["error"], "rank 1: out of memory");
  EXPECT_FALSE(k.contains("window")) << "a group window needs every rank's";
}

}  // namespace
