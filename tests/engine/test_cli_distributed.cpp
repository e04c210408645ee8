// Data-parallel runs (docs/distributed.md): `run --ranks N`, a rank that dies, torchrun's environment. Real processes,
// a real Gloo process group over 127.0.0.1 and PyTorch's own Reducer.
#include <arpa/inet.h>
#include <fcntl.h>
#include <signal.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "../remote/processes.h"
#include "cli_runner.h"
#include "rank_test_data.h"
#include "torch_version.h"

namespace {

using Out = tb::test_util::CliOut;

// 240 s: the test's own guard against a hang.
Out cli(const std::string& env, const std::string& args) { return tb::test_util::run_cli_shell(env, args, 240); }

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f, nullptr, false);
}

class CliDistributed : public testing::Test {
 protected:
  static void SetUpTestSuite() { dir_ = tb::test_util::make_rank_test_images("tb_dist_data_"); }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }
  static std::string run_args(const std::string& json, const std::string& set = "batch_size=4") {
    return "run --model mnist_cnn --data imagefolder:" + dir_ + "/images --input 1,28,28 --steps 6 --warmup 2 --set " +
           set + " --json " + json + " --dist-timeout 15";
  }
  static std::string tmp(const std::string& name) { return dir_ + "/" + name; }
  static std::string dir_;
};
std::string CliDistributed::dir_;

// The DDP invariant: after k steps every rank holds the same parameters, although each trained on its own
// shard (their losses differ). Without the gradient all-reduce the digests would part after step 0.
void expect_ranks_in_step(const nlohmann::json& j, int steps, int reduced_iterations) {
  ASSERT_EQ(j["world_size"], 2);
  ASSERT_EQ(j["ranks"].size(), 2u);
  EXPECT_TRUE(j["missing_ranks"].empty());
  EXPECT_FALSE(j.contains("error")) << j["error"];
  const auto& r0 = j["ranks"][0];
  const auto& r1 = j["ranks"][1];
  EXPECT_EQ(r0["parameter_digest"], r1["parameter_digest"]);
  ASSERT_EQ(r0["steps"].size(), size_t(steps));
  ASSERT_EQ(r1["steps"].size(), size_t(steps));
  EXPECT_NE(r0["steps"][0]["loss"].get<double>(), r1["steps"][0]["loss"].get<double>()) << "the shards differ";
  EXPECT_EQ(r0["distributed"]["iterations"], reduced_iterations);
  EXPECT_EQ(r1["distributed"]["rank"], 1);
  // The group's rate is the sum of the ranks' rates.
  const double sum = r0["throughput"]["samples_per_s"].get<double>() + r1["throughput"]["samples_per_s"].get<double>();
  EXPECT_NEAR(j["throughput"]["samples_per_s"].get<double>(), sum, 1e-6 * sum);
  for (const auto& e : j.value("exits", nlohmann::json::array())) EXPECT_TRUE(e["ok"].get<bool>()) << e.dump();
}

TEST_F(CliDistributed, TwoRanksStayInStepOnDisjointShardsAndShareOneTrace) {
  const std::string js = tmp("two.json"), tr = tmp("two_trace.json");
  Out r = cli("", run_args(js) + " --ranks 2 --trace " + tr);
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = read_json(js);
  expect_ranks_in_step(j, 6, 6);
  EXPECT_NE(r.out.find("(2 ranks)"), std::string::npos) << r.out;
  // One trace, one process per rank, each with its bucket all-reduces on a communication thread.
  auto t = read_json(tr);
  ASSERT_TRUE(t.is_object());
  std::set<int64_t> step_pids, comm_pids, fault_pids;
  for (const auto& e : t["traceEvents"]) {
    const std::string name = e.value("name", "");
    if (name == "step") step_pids.insert(e["pid"].get<int64_t>());
    if (name == "gloo:allreduce") comm_pids.insert(e["pid"].get<int64_t>());
    if (e.value("ph", "") == "C" && name == "page_faults") fault_pids.insert(e["pid"].get<int64_t>());
  }
  EXPECT_EQ(step_pids.size(), 2u);
  EXPECT_EQ(comm_pids, step_pids);
  EXPECT_EQ(fault_pids, step_pids) << "each rank's counters under its own process, not one track of both";
  // The analysis reads the all-reduce and the part backward did not hide (rank 0's process).
  const std::string aj = tmp("two_analysis.json");
  Out a = cli("", "analyze " + tr + " --json " + aj);
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_NE(a.out.find("training thread waiting for all-reduce"), std::string::npos) << a.out;
  auto an = read_json(aj);
  const double total = an["communication"]["total_us"].get<double>();
  const double exposed = an["communication"]["exposed_us"].get<double>();
  EXPECT_GT(total, 0);
  EXPECT_GE(exposed, 0);
  EXPECT_LE(exposed, total) << "exposed = waiting while an all-reduce runs";
}

TEST_F(CliDistributed, DdpKnobsChangeTheWorkAndKeepTheInvariant) {
  // no_sync accumulation (reduce every 2nd micro-batch), fp16 compression, bucket views, 1 MB buckets and
  // static_graph (whose first iteration all-reduces after backward) all at once.
  const std::string js = tmp("knobs.json");
  Out r = cli("", run_args(js, "batch_size=4,grad_accumulation=2,comm_hook=fp16,gradient_as_bucket_view=on,"
                               "bucket_cap_mb=1,static_graph=on") +
                      " --ranks 2");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = read_json(js);
  expect_ranks_in_step(j, 6, 3);
  const auto& d = j["ranks"][0]["distributed"];
  EXPECT_EQ(d["comm_hook"], "fp16");
  EXPECT_EQ(d["bucket_cap_mb"], 1);
  // From LibTorch 2.1 a static graph stays off under gradient accumulation (engine/src/compat.h: its Reducer
  // would stop all-reducing after the first step), and says so; then static_graph is checked alone.
  const bool static_refused = TB_TORCH_AT_LEAST(2, 1);
  EXPECT_EQ(d["static_graph"].get<bool>(), !static_refused);
  if (static_refused) {
    EXPECT_NE(j["warnings"].dump().find("static_graph stays off while grad_accumulation > 1"), std::string::npos)
        << j["warnings"].dump();
    const std::string js2 = tmp("static.json");
    Out r2 = cli("", run_args(js2, "batch_size=4,static_graph=on") + " --ranks 2");
    ASSERT_EQ(r2.code, 0) << r2.err;
    auto j2 = read_json(js2);
    expect_ranks_in_step(j2, 6, 6);
    EXPECT_TRUE(j2["ranks"][0]["distributed"]["static_graph"].get<bool>());
  }
  // In one process the DDP knobs say why they do nothing.
  Out k = cli("", "knobs --json");
  ASSERT_EQ(k.code, 0);
  auto kj = nlohmann::json::parse(k.out);
  bool seen = false;
  for (const auto& knob : kj["knobs"])
    if (knob["id"] == "bucket_cap_mb") {
      seen = true;
      EXPECT_FALSE(knob["applicable"].get<bool>());
      EXPECT_NE(knob["reason"].get<std::string>().find("--ranks"), std::string::npos);
    }
  EXPECT_TRUE(seen);
}

TEST_F(CliDistributed, AKilledRankEndsTheGroupWithinTheTimeoutAndRankZeroKeepsItsSteps) {
  const std::string js = tmp("killed.json");
  Out r = cli("TUNEBENCH_TEST_KILL_RANK=1:3", run_args(js) + " --ranks 2");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_LT(r.seconds, 120) << "rank 0 must give up at its next collective or the 15 s timeout";
  EXPECT_NE(r.err.find("rank 1 was killed by signal 9"), std::string::npos) << r.err;
  auto j = read_json(js);
  ASSERT_TRUE(j.is_object()) << "rank 0 writes what it measured";
  EXPECT_EQ(j["missing_ranks"], nlohmann::json::array({1}));
  EXPECT_NE(j["error"].get<std::string>().find("rank 0: training step 3 failed"), std::string::npos) << j["error"];
  EXPECT_EQ(j["ranks"][0]["steps"].size(), 3u);
  ASSERT_EQ(j["exits"].size(), 2u);
  EXPECT_NE(j["exits"][1]["how"].get<std::string>().find("signal 9"), std::string::npos);
}

// `--set ranks=2` is --ranks 2 (what the tuner's fresh trials and a report's settings pass); a disagreeing
// --ranks is a one-line error.
TEST_F(CliDistributed, RanksAsAKnobStartsTheGroup) {
  const std::string js = tmp("ranks_knob.json");
  Out r = cli("", run_args(js, "batch_size=4,ranks=2"));
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = read_json(js);
  EXPECT_EQ(j["world_size"], 2);
  EXPECT_EQ(j["config"]["ranks"], "2");
  r = cli("", run_args(tmp("ranks_bad.json"), "batch_size=4,ranks=2") + " --ranks 3");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--ranks 3 disagrees with --set ranks=2"), std::string::npos) << r.err;
}

// A launcher killed without a word (SIGKILL: a tuner's deadline, the OOM killer) takes its ranks with it:
// left alone they would train on, holding the cores of whatever is measured next.
TEST_F(CliDistributed, RanksDieWithTheirLauncher) {
  const std::string marker = tmp("orphans.json"), data = "imagefolder:" + dir_ + "/images";
  const pid_t launcher = ::fork();
  if (launcher == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execl(TB_CLI_PATH, TB_CLI_PATH, "run", "--model", "mnist_cnn", "--data", data.c_str(), "--input", "1,28,28",
            "--steps", "100000", "--warmup", "0", "--set", "batch_size=4", "--json", marker.c_str(), "--ranks", "2",
            "--dist-timeout", "15", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_GT(launcher, 0);
  std::vector<pid_t> ranks;
  for (int i = 0; i < 1200 && ranks.size() < 2; ++i) {
    ranks.clear();
    for (pid_t p : tb::test_util::processes_with(marker))
      if (p != launcher && tb::test_util::parent_of(p) == launcher) ranks.push_back(p);
    if (ranks.size() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(ranks.size(), 2u) << "the launcher did not start its two ranks within 60 s";
  ::kill(launcher, SIGKILL);
  ::waitpid(launcher, nullptr, 0);
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = true;
    for (pid_t p : ranks) gone = gone && tb::test_util::command_line(p).find(marker) == std::string::npos;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (pid_t p : ranks)
    if (!gone) ::kill(p, SIGKILL);  // leave nothing behind even when the test fails
  EXPECT_TRUE(gone) << "the ranks outlived their launcher by 10 s";
}

// The launcher's free port can be taken before rank 0 listens on it: rank 0 says so and the group starts
// again on another port instead of failing (or its other ranks talking to whatever holds the port).
TEST_F(CliDistributed, APortTakenBeforeRankZeroListensIsRetriedOnAnother) {
  const int held = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(held, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = 0;
  ASSERT_EQ(::bind(held, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(held, 1), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(::getsockname(held, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const int port = ntohs(a.sin_port);
  const std::string js = tmp("retry.json");
  Out r = cli("TUNEBENCH_RANKS_FIRST_PORT=" + std::to_string(port), run_args(js) + " --ranks 2");
  ::close(held);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("rank 0: cannot open the rendezvous store on port " + std::to_string(port)), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("run: port " + std::to_string(port) + " was taken before rank 0 could listen on it"),
            std::string::npos) << r.err;
  std::ifstream f(js);
  auto j = nlohmann::json::parse(f, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.err;
  EXPECT_EQ(j["world_size"], 2);
}

TEST_F(CliDistributed, TorchrunEnvironmentIsJoinedAndMismatchesAreClearErrors) {
  // Bad environments: one line, exit 2, nothing started.
  const auto refused = [&](const std::string& env, const std::string& extra, const std::string& message) {
    Out o = cli(env, run_args(tmp("bad.json")) + extra);
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
  Out cpu_nccl = cli("TUNEBENCH_DIST_BACKEND=nccl", run_args(tmp("nccl.json")) + " --ranks 2");
  EXPECT_NE(cpu_nccl.code, 0);
  EXPECT_NE(cpu_nccl.err.find("TUNEBENCH_DIST_BACKEND=nccl needs --device cuda"), std::string::npos) << cpu_nccl.err;

  // A rank told to find the store on loopback while the group spans nodes (torchrun's c10d rendezvous on a
  // first node whose host name resolves to itself only): the error says what to change.
  std::string two_nodes = run_args(tmp("bad.json"));
  two_nodes.replace(two_nodes.find("--dist-timeout 15"), 17, "--dist-timeout 2");
  Out lonely = cli("WORLD_SIZE=2 RANK=1 LOCAL_WORLD_SIZE=1 MASTER_ADDR=localhost MASTER_PORT=1", two_nodes);
  EXPECT_NE(lonely.code, 0);
  EXPECT_NE(lonely.err.find("cannot reach the rendezvous store at localhost:1"), std::string::npos) << lonely.err;
  EXPECT_NE(lonely.err.find("only 1 of the 2 ranks run here"), std::string::npos) << lonely.err;
  EXPECT_NE(lonely.err.find("--master_addr"), std::string::npos) << lonely.err;

  // PyTorch's own launcher: the torchrun of the environment whose torch the engine links.
  const std::string torchrun = (std::filesystem::path(TB_TEST_PYTHON).parent_path() / "torchrun").string();
  if (!std::filesystem::exists(torchrun)) GTEST_SKIP() << torchrun << " is not installed";
  const std::string js = tmp("torchrun.json");
  const std::string cmd = "timeout 240 " + torchrun + " --standalone --nproc_per_node 2 --no_python " +
                          std::string(TB_CLI_PATH) + " " + run_args(js) + " >/dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
  auto j = read_json(js);
  expect_ranks_in_step(j, 6, 6);
}

}  // namespace
