// A data-parallel group across hosts started from here (`run|tune --remote HOST1,HOST2`): PyTorch's torchrun on
// every host over its own ssh, through a real sshd (sshd_fixture.h). The "hosts" are this machine reached twice,
// so the group's clocks are one; docs/distributed.md's namespace test covers hosts with their own clocks.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <utility>
#include <string>

#include "../engine/cli_runner.h"
#include "../engine/serve_child.h"
#include "processes.h"
#include "remote_cli_fixture.h"

using tb::test_util::read_json;
using tb::test_util::RemoteCli;
using tb::test_util::run_cli_shell;
using tb::test_util::wait_for;

namespace {

// The servers' torchrun: the one of the torch environment on their PATH (sshd_fixture.h).
bool have_torchrun() {
  return std::filesystem::exists(std::filesystem::path(TB_TEST_PYTHON).parent_path() / "torchrun");
}

std::string group(const std::string& hosts) {
  return std::string("--remote ") + hosts + " --remote-cli " + TB_CLI_PATH;
}

// Two nodes of one rank each: the ranks train in step (equal weights, disjoint shards), rank 0's JSON and the
// trace with both ranks come back here, and neither node keeps a working directory.
TEST_F(RemoteCli, AGroupAcrossTwoHostsRunsUnderTorchrunOnEach) {
  if (!have_torchrun()) GTEST_SKIP() << "torchrun is not installed";
  const auto r = run_cli_shell("", "run " + group("tbtest,tbtest") + " --model mnist_cnn --data synthetic --steps 6 "
                                   "--warmup 2 --dist-timeout 30 --json " + out_ + "/g.json --trace " + out_ + "/g.trace.json",
                               300);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("a group of 2 hosts x 1 rank(s), rendezvous at 127.0.0.1:"), std::string::npos) << r.err;
  const auto j = read_json(out_ + "/g.json");
  ASSERT_TRUE(j.is_object()) << r.err;
  ASSERT_EQ(j["world_size"], 2);
  ASSERT_EQ(j["ranks"].size(), 2u);
  EXPECT_EQ(j["ranks"][0]["parameter_digest"], j["ranks"][1]["parameter_digest"]);
  EXPECT_EQ(j["ranks"][1]["steps"].size(), 6u);
  EXPECT_NE(j["ranks"][0]["steps"][0]["loss"], j["ranks"][1]["steps"][0]["loss"]) << "the shards differ";
  EXPECT_EQ(j["ranks"][1]["distributed"]["rank"], 1);
  const auto t = read_json(out_ + "/g.trace.json");
  ASSERT_TRUE(t.is_object());
  std::set<int64_t> step_pids;
  for (const auto& e : t["traceEvents"])
    if (e.value("name", "") == "step") step_pids.insert(e["pid"].get<int64_t>());
  EXPECT_EQ(step_pids.size(), 2u) << "the trace holds both ranks";
  EXPECT_TRUE(wait_for([&] { return remote_tmp_empty(); }, 5)) << "a node kept its working directory";
}

// A node that cannot connect: one line for it, one for the group, and the node that did start is stopped
// (its run and its directory gone), never a hang.
TEST_F(RemoteCli, ANodeThatCannotConnectStopsTheGroup) {
  if (!have_torchrun()) GTEST_SKIP() << "torchrun is not installed";
  const auto r = run_cli_shell("", "run " + group("tbtest,tbbadkey") + " --model mnist_cnn --data synthetic "
                                   "--steps 987653 --dist-timeout 30", 120);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("tbbadkey refused the authentication"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the group ended: node 1 (tbbadkey) failed (exit status 255), and the other nodes were stopped"),
            std::string::npos) << r.err;
  EXPECT_TRUE(wait_for([] { return tb::test_util::processes_with("--steps 987653").empty(); }, 20))
      << "node 0's run outlived the group";
  EXPECT_TRUE(wait_for([&] { return remote_tmp_empty(); }, 5));
}

// The client killed mid-run (a laptop closed): both ssh channels close, each node's watcher stops torchrun and
// its rank, and nothing of the run is left on either node.
TEST_F(RemoteCli, AKilledClientLeavesNoRankOnAnyNode) {
  if (!have_torchrun()) GTEST_SKIP() << "torchrun is not installed";
  const std::string marker = "--steps 987654";
  const pid_t cli = tb::test_util::start_cli("run " + group("tbtest,tbtest") + " --model mnist_cnn --data synthetic " +
                                                 marker + " --json " + out_ + "/never.json",
                                             out_ + "/log");
  tb::test_util::KillAtExit guard{cli};
  ASSERT_TRUE(wait_for([&] { return tb::test_util::remote_runs(marker) >= 2; }, 90)) << "the ranks never started";
  ::kill(cli, SIGKILL);
  ::waitpid(cli, nullptr, 0);
  EXPECT_TRUE(wait_for([&] { return tb::test_util::processes_with(marker).empty(); }, 30))
      << "a rank, torchrun or a shell outlived the client";
  EXPECT_TRUE(wait_for([&] { return remote_tmp_empty(); }, 5));
}

// SIGTERM to the client (the GUI stopping a group that does not end by itself): it stops every host, waits
// for them, and ends with what it said, and nothing is left on either host.
TEST_F(RemoteCli, ASignalledClientStopsEveryHostBeforeItEnds) {
  if (!have_torchrun()) GTEST_SKIP() << "torchrun is not installed";
  const std::string marker = "--steps 987655";
  const std::string log = out_ + "/log";
  const pid_t cli = tb::test_util::start_cli("run " + group("tbtest,tbtest") + " --model mnist_cnn --data synthetic " +
                                                 marker, log);
  tb::test_util::KillAtExit guard{cli};
  ASSERT_TRUE(wait_for([&] { return tb::test_util::remote_runs(marker) >= 2; }, 90)) << "the ranks never started";
  ::kill(cli, SIGTERM);
  int status = 0;
  ASSERT_TRUE(wait_for([&] { return ::waitpid(cli, &status, WNOHANG) == cli; }, 40)) << "the client did not end";
  guard.pid = -1;
  std::ifstream f(log);
  const std::string err(std::istreambuf_iterator<char>(f), {});
  EXPECT_NE(err.find("Terminated: stopping every host"), std::string::npos) << err;
  EXPECT_EQ(err.find("the group ended"), std::string::npos) << "a stop is no failure of a host: " << err;
  EXPECT_TRUE(tb::test_util::processes_with(marker).empty()) << "a rank outlived the client";
  EXPECT_TRUE(wait_for([&] { return remote_tmp_empty(); }, 5));
}

// What the GUI runs for a group across hosts: `serve --remote HOST1,HOST2` here, rank 0's run protocol on
// this process's stdin/stdout. A toggle reaches both ranks, the trace chunks travel inside the protocol with
// both ranks in them, closing stdin ends the group, and no node keeps a working directory.
TEST_F(RemoteCli, AServedGroupAcrossHostsSpeaksTheRunProtocolHere) {
  if (!have_torchrun()) GTEST_SKIP() << "torchrun is not installed";
  tb::test_util::ServeChild s({"--remote", "tbtest,tbtest", "--remote-cli", TB_CLI_PATH, "--model", "mnist_cnn",
                               "--data", "synthetic", "--set", "batch_size=4", "--warmup", "1", "--drift-steps", "0",
                               "--dist-timeout", "20", "--trace-dir", out_ + "/chunks", "--trace-every", "3"});
  int steps = 0, applied = 0, chunks = 0;
  nlohmann::json done;
  ASSERT_TRUE(s.until([&](const nlohmann::json& m) {
    const std::string type = m.value("type", "");
    if (type == "error") ADD_FAILURE() << m.dump();
    if (type == "config_applied") ++applied;
    if (type == "trace") {
      ++chunks;
      EXPECT_TRUE(m.contains("data")) << "the chunk travels in the message: " << m.dump().substr(0, 300);
    }
    if (type == "step") {
      EXPECT_EQ(m["samples"], applied ? 12 : 8) << "step " << steps;
      if (++steps == 3) s.send({{"type", "set"}, {"knob", "batch_size"}, {"value", 6}});
      if (applied && steps == 10) ::close(std::exchange(s.in, -1));  // the GUI went away
    }
    if (type == "done") done = m;
    return type == "done";
  }, 240)) << s.err_text;
  EXPECT_EQ(s.wait_exit(), 0) << s.err_text;
  EXPECT_GE(chunks, 2);
  const auto& ranks = done["summary"]["ranks"];
  ASSERT_EQ(ranks.size(), 2u) << done.dump();
  EXPECT_EQ(ranks[1]["config"]["batch_size"], "6");
  EXPECT_EQ(ranks[0]["config"], ranks[1]["config"]);
  EXPECT_EQ(ranks[0]["parameter_digest"], ranks[1]["parameter_digest"]);
  EXPECT_TRUE(wait_for([&] { return remote_tmp_empty(); }, 15)) << "a node kept its working directory";
}

TEST_F(RemoteCli, BadGroupRequestsAreRefusedBeforeAnythingRuns) {
  struct Case {
    std::string args, says;
  };
  const Case cases[] = {
      {"run " + group("tbtest,tbtest") + " --ranks-per-host 0 --model mnist_cnn", "--ranks-per-host needs an integer"},
      {"run " + group("tbtest,") + " --model mnist_cnn", "--remote tbtest,: "},
      {"run " + group("tbtest") + " --ranks-per-host 2 --model mnist_cnn", "are for a group across hosts"},
      {"serve " + group("tbtest") + " --model mnist_cnn", "serve --remote takes a group's hosts"},
  };
  for (const auto& c : cases) {
    const auto r = run_cli_shell("", c.args, 30);
    EXPECT_EQ(r.code, 2) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << ": " << r.err;
  }
}

}  // namespace
