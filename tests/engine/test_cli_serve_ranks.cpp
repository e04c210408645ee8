// A live data-parallel run (docs/distributed.md): `serve --ranks N` speaks the run protocol for a group of real ranks
// (Gloo over 127.0.0.1, PyTorch's Reducer). A toggle reaches every rank at the same step, the trace chunks
// hold every rank, and a rank that dies ends the run with a reason, never a hang.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve_child.h"

namespace {

using Serve = tb::test_util::ServeChild;

const std::vector<std::string> kGroup = {"--model", "mnist_cnn", "--data", "synthetic", "--set", "batch_size=4",
                                         "--warmup", "1", "--drift-steps", "0", "--ranks", "2", "--dist-timeout", "20"};

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& more) {
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

// Two knob changes in one live group: the samples of a step are the group's (2 x batch), both ranks end with
// the same configuration and weights and as many steps, and every trace chunk holds both ranks. The first
// port tried is taken: the group starts again on another, and the parent hears one hello.
TEST(ServeRanks, LiveChangesReachEveryRankAtTheSameStep) {
  const int held = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(held, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(held, 1), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(::getsockname(held, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::string dir = (std::filesystem::temp_directory_path() / ("tb_serve_ranks_" + std::to_string(getpid()))).string();
  std::filesystem::remove_all(dir);
  Serve s(with(kGroup, {"--trace-dir", dir, "--trace-every", "3"}),
          {"TUNEBENCH_RANKS_FIRST_PORT=" + std::to_string(ntohs(a.sin_port))});
  int hellos = 0, steps = 0, applied = 0;
  std::vector<std::string> chunks;
  nlohmann::json done;
  const bool ended = s.until([&](const nlohmann::json& m) {
    const std::string type = m.value("type", "");
    if (type == "hello") ++hellos;
    if (type == "started") EXPECT_EQ(m["config"]["ranks"], "2");
    if (type == "error") ADD_FAILURE() << m.dump();
    if (type == "trace") chunks.push_back(m["path"]);
    if (type == "config_applied") ++applied;
    if (type == "step") {
      ++steps;
      EXPECT_EQ(m["samples"], applied == 2 ? 12 : 8) << "step " << steps;
      if (steps == 4) {
        s.send({{"type", "set"}, {"knob", "bucket_cap_mb"}, {"value", 5}});
        s.send({{"type", "set"}, {"knob", "batch_size"}, {"value", 6}});
      }
      if (applied == 2 && steps >= 12) s.send({{"type", "stop"}});
    }
    if (type == "done") done = m;
    return type == "done";
  });
  ::close(held);
  ASSERT_TRUE(ended) << s.err_text;
  EXPECT_EQ(s.wait_exit(), 0) << s.err_text;
  EXPECT_EQ(hellos, 1);
  EXPECT_NE(s.err_text.find("serve: port " + std::to_string(ntohs(a.sin_port)) + " was taken"), std::string::npos)
      << s.err_text;
  const auto& summary = done["summary"];
  EXPECT_EQ(summary["world_size"], 2);
  ASSERT_EQ(summary["ranks"].size(), 2u) << summary.dump();
  const auto& r0 = summary["ranks"][0];
  const auto& r1 = summary["ranks"][1];
  EXPECT_EQ(r1["rank"], 1);
  EXPECT_EQ(r0["steps"], r1["steps"]);
  EXPECT_EQ(r0["steps"].get<int>(), steps);
  EXPECT_EQ(r1["config"]["bucket_cap_mb"], "5");
  EXPECT_EQ(r1["config"]["batch_size"], "6");
  EXPECT_EQ(r0["config"], r1["config"]);
  EXPECT_EQ(r0["config_rev"], r1["config_rev"]);
  EXPECT_EQ(r0["parameter_digest"], r1["parameter_digest"]) << "DDP keeps the ranks' weights equal";
  // Every chunk: both ranks' processes, each with its steps.
  ASSERT_GE(chunks.size(), 3u);
  for (const auto& path : chunks) {
    std::ifstream f(path);
    auto j = nlohmann::json::parse(f, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << path;
    std::set<int64_t> pids;
    for (const auto& e : j.is_object() ? j["traceEvents"] : j)
      if (e.value("ph", "") == "X" && e.value("name", "") == "step") pids.insert(e.value("pid", int64_t(-1)));
    EXPECT_EQ(pids, std::set<int64_t>({r0["pid"].get<int64_t>(), r1["pid"].get<int64_t>()})) << path;
  }
  std::filesystem::remove_all(dir);
}

// A bigger batch that fits on rank 0 but not on rank 1 (a GPU with less free memory): the ranks decide
// together, so every rank reverts, the warning names the rank, and the group trains on at the old size with
// one configuration. Before, rank 1 alone reverted and the ranks trained on different batch sizes.
TEST(ServeRanks, ABatchThatDoesNotFitOnOneRankRevertsOnEveryRank) {
  Serve s(kGroup, {"TUNEBENCH_TEST_OOM_ABOVE_BATCH=1:4"});
  int steps = 0;
  std::string warning;
  nlohmann::json done;
  ASSERT_TRUE(s.until([&](const nlohmann::json& m) {
    const std::string type = m.value("type", "");
    if (type == "step") {
      EXPECT_EQ(m["samples"], 8) << "two ranks at batch 4, step " << steps;
      if (++steps == 3) s.send({{"type", "set"}, {"knob", "batch_size"}, {"value", 8}});
      if (steps == 8) s.send({{"type", "stop"}});
    }
    if (type == "warning" && m["message"].get<std::string>().find("batch_size 8") != std::string::npos)
      warning = m["message"];
    if (type == "error") ADD_FAILURE() << m.dump();
    if (type == "done") done = m;
    return type == "done";
  })) << s.err_text;
  EXPECT_EQ(s.wait_exit(), 0) << s.err_text;
  EXPECT_EQ(warning, "batch_size 8 runs out of memory on rank 1; every rank reverted to 4");
  const auto& ranks = done["summary"]["ranks"];
  ASSERT_EQ(ranks.size(), 2u) << done.dump();
  EXPECT_EQ(ranks[0]["config"]["batch_size"], "4");
  EXPECT_EQ(ranks[0]["config"], ranks[1]["config"]);
  EXPECT_EQ(ranks[0]["parameter_digest"], ranks[1]["parameter_digest"]);
}

// The GUI's Auto-tune on a running group: the tuner's windows are steps of the live group (every rank
// changes together), its DDP knobs are tried first, the report says how it measured, and the group trains on
// afterwards in step.
TEST(ServeRanks, AutoTuneRunsOnTheLiveGroup) {
  Serve s(kGroup);
  int steps = 0, after = 0;
  bool tuned = false;
  std::vector<std::string> screened;
  nlohmann::json tune_done, done;
  ASSERT_TRUE(s.until([&](const nlohmann::json& m) {
    const std::string type = m.value("type", "");
    // Two DDP knobs only: the budget goes to them, not to the allocator's fresh groups (30 s under load).
    if (type == "step" && ++steps == 2)
      s.send({{"type", "tune"}, {"budget_s", 30}, {"knobs", {"bucket_cap_mb", "static_graph"}}});
    if (type == "step" && tuned && ++after == 3) s.send({{"type", "stop"}});
    if (type == "tune_progress" && m["phase"] == "screen" && m["message"].get<std::string>().rfind("screen: ", 0) == 0)
      screened.push_back(m["message"]);
    if (type == "tune_done") {
      tuned = true;
      tune_done = m;
    }
    if (type == "error") ADD_FAILURE() << m.dump();
    if (type == "done") done = m;
    return type == "done";
  }, 240)) << s.err_text;
  EXPECT_EQ(s.wait_exit(), 0) << s.err_text;
  ASSERT_FALSE(screened.empty());
  EXPECT_NE(screened.front().find("bucket_cap_mb"), std::string::npos) << screened.front();
  EXPECT_GT(tune_done["trials"].get<int>(), 1);
  std::ifstream f(tune_done["report_json"].get<std::string>());
  const auto report = nlohmann::json::parse(f, nullptr, false);
  ASSERT_TRUE(report.is_object());
  EXPECT_NE(report.dump().find("the running group of 2 ranks"), std::string::npos);
  ASSERT_FALSE(report["snapshots"].empty());
  EXPECT_EQ(report["snapshots"][0]["ranks"], 2) << "the snapshot recorded every rank";
  const auto& ranks = done["summary"]["ranks"];
  ASSERT_EQ(ranks.size(), 2u) << done.dump();
  EXPECT_EQ(ranks[0]["config"], ranks[1]["config"]);
  EXPECT_EQ(ranks[0]["parameter_digest"], ranks[1]["parameter_digest"]);
  EXPECT_EQ(ranks[0]["steps"], ranks[1]["steps"]);
  EXPECT_GT(ranks[1]["steps"].get<int>(), steps + 20) << "the tune's windows were the group's steps";
}

// Stop answers at once, and closing stdin (a GUI that went away) ends the whole group too.
TEST(ServeRanks, StdinClosedEndsEveryRank) {
  Serve s(kGroup);
  const std::vector<pid_t> ranks = s.ranks_after_steps(3);
  ASSERT_EQ(ranks.size(), 2u) << s.err_text;
  close(s.in);
  s.in = -1;
  nlohmann::json done;
  ASSERT_TRUE(s.until([&](const nlohmann::json& m) { return m.value("type", "") == "done" && !(done = m).is_null(); }, 30));
  EXPECT_EQ(done["summary"]["reason"], "stdin closed");
  EXPECT_EQ(s.wait_exit(), 0) << s.err_text;
  for (pid_t p : ranks) EXPECT_FALSE(std::filesystem::exists("/proc/" + std::to_string(p))) << "rank " << p << " left";
}

// A follower killed mid-run: rank 0 ends the run with a non-recoverable error within the collective timeout,
// the launcher names the rank, the steps before are kept (done's summary counts them).
TEST(ServeRanks, AFollowerThatDiesEndsTheRunWithItsName) {
  Serve s(kGroup);
  const std::vector<pid_t> ranks = s.ranks_after_steps(4);
  ASSERT_EQ(ranks.size(), 2u) << s.err_text;
  const auto t0 = std::chrono::steady_clock::now();
  kill(ranks[1], SIGKILL);
  std::string error;
  nlohmann::json done;
  ASSERT_TRUE(s.until([&](const nlohmann::json& m) {
    if (m.value("type", "") == "error") {
      EXPECT_FALSE(m["recoverable"].get<bool>());
      error = m["message"];
    }
    if (m.value("type", "") == "done") done = m;
    return !done.is_null();
  }, 60)) << s.err_text;
  EXPECT_NE(s.wait_exit(), 0);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 40.0);
  EXPECT_FALSE(error.empty());
  EXPECT_GE(done["summary"]["steps"].get<int>(), 4);
  EXPECT_NE(s.err_text.find("serve: rank 1 was killed by signal 9"), std::string::npos) << s.err_text;
}

// Rank 0 (the one that speaks) killed: the launcher still sends an error and `done`, and the follower ends.
TEST(ServeRanks, ARankZeroThatDiesStillAnswers) {
  Serve s(kGroup);
  const std::vector<pid_t> ranks = s.ranks_after_steps(3);
  ASSERT_EQ(ranks.size(), 2u) << s.err_text;
  kill(ranks[0], SIGKILL);
  std::string error;
  ASSERT_TRUE(s.until([&](const nlohmann::json& m) {
    if (m.value("type", "") == "error") error = m["message"];
    return m.value("type", "") == "done";
  }, 30)) << s.err_text;
  EXPECT_NE(error.find("rank 0 of the data-parallel group was killed by signal 9"), std::string::npos) << error;
  EXPECT_NE(s.wait_exit(), 0);
  EXPECT_FALSE(std::filesystem::exists("/proc/" + std::to_string(ranks[1])));
}

TEST(ServeRanks, BadRequestsAreOneLineErrors) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--ranks", "2"},                                                      // no model
           {"--model", "mnist_cnn", "--ranks", "2", "--set", "ranks=3"},          // disagreement
           {"--model", "mnist_cnn", "--ranks", "0"}}) {
    Serve s(args);
    close(s.in);
    s.in = -1;
    EXPECT_EQ(s.wait_exit(), 2);
    EXPECT_EQ(std::count(s.err_text.begin(), s.err_text.end(), '\n'), 1) << s.err_text;
    EXPECT_NE(s.err_text.find("error: serve:"), std::string::npos) << s.err_text;
  }
}

}  // namespace
