// E2eRemote: `tunebench-cli run|tune|serve --remote` through a real OpenSSH server (sshd_fixture.h), started once
// for the suite; the server is this machine, reached as another host would be. One host: the same results as a
// local run with the files brought back, a user's script, a tune's report, one clear line for each way a
// connection fails, and no training left on the server when the client or its ssh dies. A group across hosts
// (`--remote HOST1,HOST2`, PyTorch's torchrun on every host over its own ssh; the "hosts" are this machine
// reached twice, so the group's clocks are one, tests/dist/two_hosts.py has hosts with their own): a run, a
// live group speaking the run protocol here, a node that cannot connect, a client killed or signalled.
//
// Every run is made once, in SetUpTestSuite, in two lanes side by side (the groups; one host): each on its own
// host alias, whose remote TMPDIR is its own (sshd_fixture.h), so each case still sees what its run left behind.
// Two lanes, not more: on two cores four took half as much CPU again (about 58 s against 40 s) for no shorter
// wall. The cases assert what holds on any machine, busy or quiet: exit codes, the one-line errors, the documents
// and their agreement, nothing left running or on disk; the waits are hang guards.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "../engine/cli_runner.h"
#include "../engine/serve_child.h"
#include "processes.h"
#include "remote_cli_fixture.h"
#include "sshd_fixture.h"

namespace {

namespace fs = std::filesystem;
using tb::test_util::CliOut;
using tb::test_util::read_json;
using tb::test_util::remote;
using tb::test_util::remote_runs;
using tb::test_util::run_cli_shell;
using tb::test_util::wait_for;

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// The markers the remote runs carry in their command lines, one per run (they run side by side).
constexpr const char* kClientKilled = "--steps 987651";
constexpr const char* kSshKilled = "--steps 987652";
constexpr const char* kNodeFails = "--steps 987653";
constexpr const char* kGroupClientKilled = "--steps 987654";
constexpr const char* kGroupSignalled = "--steps 987655";

// A client started, stopped by the test in some way, and what was left after it.
struct Stopped {
  bool started = false;      // the remote run(s) appeared
  bool client_ended = true;  // the client ended by itself within the guard (where it is asked to)
  int status = 0;            // its wait status
  std::string log;           // its stdout and stderr
  bool runs_gone = false;    // no run of it left on the server
  bool tmp_empty = false;    // its remote working directory removed
};

class E2eRemote : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    sshd_ = new tb::test_util::SshdFixture;
    skip_ = sshd_->start({"run", "tune", "script", "killed", "ssh", "group", "nodefail", "gkilled", "gterm", "gserve"});
    if (!skip_.empty()) return;
    ::setenv("TUNEBENCH_SSH_COMMAND", sshd_->ssh_command().c_str(), 1);
    out_ = sshd_->dir() + "/local";
    fs::create_directories(out_);
    have_torchrun_ = fs::exists(fs::path(TB_TEST_PYTHON).parent_path() / "torchrun");
    have_torch_ = std::system((std::string(TB_TEST_PYTHON) + " -c 'import torch' >/dev/null 2>&1").c_str()) == 0;
    std::vector<std::thread> lanes;
    lanes.emplace_back([] {
      group_run();
      group_node_fails();
      group_served();
      group_client_killed();
      group_signalled();
    });
    lanes.emplace_back([] {
      same_run();
      users_script();
      tune_simulated();
      failures();
      client_killed();
      ssh_killed();
    });
    for (auto& t : lanes) t.join();
  }
  static void TearDownTestSuite() {
    delete sshd_;  // stops the server, removes its directory (the local outputs with it)
    sshd_ = nullptr;
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << "cannot start a private sshd: " << skip_;
  }
  static bool tmp_empty(const std::string& name) { return fs::is_empty(sshd_->remote_tmp(name)); }

  // The same run here and on the server (alias tb-run), the second traced.
  static void same_run() {
    const std::string common = " --model mnist_cnn --data synthetic --steps 6 --warmup 2 --seed 3";
    local_ = run_cli_shell("", "run" + common + " --json " + out_ + "/local.json", 300);
    remote_ = run_cli_shell(
        "", "run " + remote("tb-run") + common + " --json " + out_ + "/remote.json --trace " + out_ + "/t.json", 300);
  }

  // A user's PyTorch script, written as people write them, run on the server (its path is the server's, which
  // is this machine).
  static void users_script() {
    if (!have_torch_) return;
    const std::string script = out_ + "/train.py";
    std::ofstream(script) << "import torch\n"
                             "model = torch.nn.Linear(8, 2)\n"
                             "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                             "data = torch.utils.data.TensorDataset(torch.randn(256, 8), torch.randint(0, 2, (256,)))\n"
                             "for x, y in torch.utils.data.DataLoader(data, batch_size=8):\n"
                             "    opt.zero_grad()\n"
                             "    torch.nn.functional.cross_entropy(model(x), y).backward()\n"
                             "    opt.step()\n";
    script_ = run_cli_shell("", "run " + remote("tb-script") + " --script " + script + " --steps 12 --json " + out_ +
                                    "/script.json --trace " + out_ + "/script_trace.json",
                            300);
  }

  static void tune_simulated() {
    tune_ = run_cli_shell("", "tune " + remote("tb-tune") + " --simulate --budget 40 -q --report " + out_ +
                                  "/r.html --json " + out_ + "/tune.json",
                          300);
  }

  // Each way a connection fails; a remote CLI missing or of another protocol; the server's own error.
  static void failures() {
    for (const char* host : {"nosuch.invalid", "127.0.0.1:1", "tbbadkey"})
      connect_.push_back({host, run_cli_shell("", "knobs " + remote(host), 120)});
    missing_cli_ = run_cli_shell("", "knobs --remote tbtest --remote-cli /nonexistent/tunebench-cli", 60);
    const std::string fake = sshd_->dir() + "/old-cli";
    std::ofstream(fake) << "#!/bin/sh\necho 'tunebench-cli 0.0.1 (protocol 0)'\n";
    fs::permissions(fake, fs::perms::owner_all);
    foreign_cli_ = run_cli_shell("", "knobs --remote tbtest --remote-cli " + fake, 60);
    // A CPU-only server asked for CUDA (on a CUDA server with a GPU the run just works).
    cuda_ = run_cli_shell("", "run " + remote("tbtest") + " --model mnist_cnn --data synthetic --steps 3 --device cuda",
                          120);
  }

  // The client killed (SIGKILL) while its run trains on the server.
  static void client_killed() {
    const pid_t cli = tb::test_util::start_cli(
        "run " + remote("tb-killed") + " --model mnist_cnn --data synthetic " + kClientKilled, out_ + "/killed.log");
    tb::test_util::KillAtExit guard{cli};
    killed_.started = wait_for([&] { return remote_runs(kClientKilled) > 0; }, 60);
    ::kill(cli, SIGKILL);
    ::waitpid(cli, nullptr, 0);
    guard.pid = -1;
    killed_.runs_gone = wait_for([&] { return remote_runs(kClientKilled) == 0; }, 20);
    killed_.tmp_empty = wait_for([&] { return tmp_empty("killed"); }, 5);
  }

  // The client's ssh killed: the client ends with a message, and the run on the server stops.
  static void ssh_killed() {
    const std::string log = out_ + "/ssh.log";
    const pid_t cli = tb::test_util::start_cli(
        "run " + remote("tb-ssh") + " --model mnist_cnn --data synthetic " + kSshKilled, log);
    tb::test_util::KillAtExit guard{cli};
    ssh_.started = wait_for([&] { return remote_runs(kSshKilled) > 0; }, 60);
    pid_t ssh = -1;
    if (ssh_.started && wait_for([&] { return (ssh = tb::test_util::ssh_child_of(cli)) > 0; }, 10)) {
      ::kill(ssh, SIGKILL);
      ssh_.client_ended = wait_for([&] { return ::waitpid(cli, &ssh_.status, WNOHANG) == cli; }, 30);
      if (ssh_.client_ended) guard.pid = -1;
    } else {
      ssh_.client_ended = false;
    }
    ssh_.runs_gone = wait_for([&] { return remote_runs(kSshKilled) == 0; }, 20);
    ssh_.tmp_empty = wait_for([&] { return tmp_empty("ssh"); }, 5);
    ssh_.log = slurp(log);
  }

  // Two nodes of one rank each, traced.
  static void group_run() {
    if (!have_torchrun_) return;
    group_ = run_cli_shell("", "run " + remote("tb-group,tb-group") +
                                   " --model mnist_cnn --data synthetic --steps 6 --warmup 2 --dist-timeout 30" +
                                   " --json " + out_ + "/g.json --trace " + out_ + "/g.trace.json",
                           300);
    group_tmp_empty_ = wait_for([&] { return tmp_empty("group"); }, 5);
  }

  // Node 1 cannot connect (a key the server does not know).
  static void group_node_fails() {
    if (!have_torchrun_) return;
    node_fails_ = run_cli_shell("", "run " + remote("tb-nodefail,tbbadkey") + " --model mnist_cnn --data synthetic " +
                                        kNodeFails + " --dist-timeout 30",
                                120);
    node_fails_gone_ = wait_for([] { return tb::test_util::processes_with(kNodeFails).empty(); }, 20);
    node_fails_tmp_empty_ = wait_for([&] { return tmp_empty("nodefail"); }, 5);
  }

  // The client killed mid-run (a laptop closed): both ssh channels close.
  static void group_client_killed() {
    if (!have_torchrun_) return;
    const pid_t cli = tb::test_util::start_cli("run " + remote("tb-gkilled,tb-gkilled") +
                                                   " --model mnist_cnn --data synthetic " + kGroupClientKilled,
                                               out_ + "/gkilled.log");
    tb::test_util::KillAtExit guard{cli};
    group_killed_.started = wait_for([&] { return remote_runs(kGroupClientKilled) >= 2; }, 90);
    ::kill(cli, SIGKILL);
    ::waitpid(cli, nullptr, 0);
    guard.pid = -1;
    group_killed_.runs_gone = wait_for([&] { return tb::test_util::processes_with(kGroupClientKilled).empty(); }, 30);
    group_killed_.tmp_empty = wait_for([&] { return tmp_empty("gkilled"); }, 5);
  }

  // SIGTERM to the client (the GUI stopping a group that does not end by itself).
  static void group_signalled() {
    if (!have_torchrun_) return;
    const std::string log = out_ + "/gterm.log";
    const pid_t cli = tb::test_util::start_cli(
        "run " + remote("tb-gterm,tb-gterm") + " --model mnist_cnn --data synthetic " + kGroupSignalled, log);
    tb::test_util::KillAtExit guard{cli};
    group_signalled_.started = wait_for([&] { return remote_runs(kGroupSignalled) >= 2; }, 90);
    ::kill(cli, SIGTERM);
    group_signalled_.client_ended =
        wait_for([&] { return ::waitpid(cli, &group_signalled_.status, WNOHANG) == cli; }, 40);
    if (group_signalled_.client_ended) guard.pid = -1;
    // Right when the client ends: it waits for its hosts.
    group_signalled_.runs_gone = tb::test_util::processes_with(kGroupSignalled).empty();
    group_signalled_.tmp_empty = wait_for([&] { return tmp_empty("gterm"); }, 5);
    group_signalled_.log = slurp(log);
  }

  // What the GUI runs for a group across hosts: `serve --remote HOST1,HOST2` here, rank 0's run protocol on this
  // process's stdin/stdout. A toggle at step 3; at step 10 the GUI goes away (stdin closes).
  static void group_served() {
    if (!have_torchrun_) return;
    tb::test_util::ServeChild s({"--remote", "tb-gserve,tb-gserve", "--remote-cli", TB_CLI_PATH, "--model", "mnist_cnn",
                                 "--data", "synthetic", "--set", "batch_size=4", "--warmup", "1", "--drift-steps", "0",
                                 "--dist-timeout", "20", "--trace-dir", out_ + "/chunks", "--trace-every", "3"});
    int steps = 0, applied = 0;
    served_ended_ = s.until(
        [&](const nlohmann::json& m) {
          served_.push_back(m);
          const std::string type = m.value("type", "");
          if (type == "config_applied") ++applied;
          if (type == "step") {
            served_samples_.push_back({m.value("samples", -1), applied});
            if (++steps == 3) s.send({{"type", "set"}, {"knob", "batch_size"}, {"value", 6}});
            if (applied && steps == 10) ::close(std::exchange(s.in, -1));  // the GUI went away
          }
          return type == "done";
        },
        240);
    served_exit_ = s.wait_exit();
    served_err_ = s.err_text;
    served_tmp_empty_ = wait_for([&] { return tmp_empty("gserve"); }, 15);
  }

  static tb::test_util::SshdFixture* sshd_;
  static std::string skip_, out_, served_err_;
  static bool have_torchrun_, have_torch_, group_tmp_empty_, node_fails_gone_, node_fails_tmp_empty_, served_ended_,
      served_tmp_empty_;
  static CliOut local_, remote_, script_, tune_, missing_cli_, foreign_cli_, cuda_, group_, node_fails_;
  static std::vector<std::pair<std::string, CliOut>> connect_;
  static Stopped killed_, ssh_, group_killed_, group_signalled_;
  static std::vector<nlohmann::json> served_;
  static std::vector<std::pair<int, int>> served_samples_;  // each step: its samples, knob changes applied before it
  static int served_exit_;
};
tb::test_util::SshdFixture* E2eRemote::sshd_ = nullptr;
std::string E2eRemote::skip_, E2eRemote::out_, E2eRemote::served_err_;
bool E2eRemote::have_torchrun_ = false, E2eRemote::have_torch_ = false, E2eRemote::group_tmp_empty_ = false,
     E2eRemote::node_fails_gone_ = false, E2eRemote::node_fails_tmp_empty_ = false, E2eRemote::served_ended_ = false,
     E2eRemote::served_tmp_empty_ = false;
CliOut E2eRemote::local_, E2eRemote::remote_, E2eRemote::script_, E2eRemote::tune_, E2eRemote::missing_cli_,
    E2eRemote::foreign_cli_, E2eRemote::cuda_, E2eRemote::group_, E2eRemote::node_fails_;
std::vector<std::pair<std::string, CliOut>> E2eRemote::connect_;
Stopped E2eRemote::killed_, E2eRemote::ssh_, E2eRemote::group_killed_, E2eRemote::group_signalled_;
std::vector<nlohmann::json> E2eRemote::served_;
std::vector<std::pair<int, int>> E2eRemote::served_samples_;
int E2eRemote::served_exit_ = -1;

TEST_F(E2eRemote, RunGivesTheSameJsonAsALocalRunAndBringsTheTraceBack) {
  ASSERT_EQ(local_.code, 0) << local_.err;
  ASSERT_EQ(remote_.code, 0) << remote_.err;
  const auto a = read_json(out_ + "/local.json"), b = read_json(out_ + "/remote.json");
  ASSERT_TRUE(a.is_object());
  ASSERT_TRUE(b.is_object()) << "no JSON came back";
  for (const auto& [key, value] : a.items()) EXPECT_TRUE(b.contains(key)) << key;
  EXPECT_EQ(a["steps"].size(), b["steps"].size());
  EXPECT_EQ(b["model"], "mnist_cnn");
  // Same seed, same data, same model: the first loss is the same computation on the same machine.
  EXPECT_EQ(a["steps"][0]["loss"], b["steps"][0]["loss"]);
  const auto trace = read_json(out_ + "/t.json");
  ASSERT_TRUE(trace.is_object());
  EXPECT_FALSE(trace["traceEvents"].empty());
  // The messages name the local paths, not the server's working directory.
  EXPECT_NE(remote_.err.find("trace written to " + out_ + "/t.json"), std::string::npos) << remote_.err;
  EXPECT_EQ(remote_.err.find("tunebench-remote-"), std::string::npos) << remote_.err;
  EXPECT_EQ(b["trace"], out_ + "/t.json");
  EXPECT_TRUE(tmp_empty("run")) << "the remote working directory was left behind";
}

TEST_F(E2eRemote, TuneBringsTheReportAndItsMarkdownBack) {
  ASSERT_EQ(tune_.code, 0) << tune_.err;
  EXPECT_TRUE(fs::file_size(out_ + "/r.html") > 1000);
  EXPECT_TRUE(fs::exists(out_ + "/r.md"));
  const auto j = read_json(out_ + "/tune.json");
  ASSERT_TRUE(j.is_object());
  EXPECT_TRUE(j.contains("baseline_throughput"));
  EXPECT_NE(tune_.out.find("report    " + out_ + "/r.html"), std::string::npos) << tune_.out;
  EXPECT_TRUE(tmp_empty("tune"));
}

TEST_F(E2eRemote, AUsersScriptRunsOnTheServerAndItsTraceComesBack) {
  if (!have_torch_) GTEST_SKIP() << "no Python with torch";
  ASSERT_EQ(script_.code, 0) << script_.err;
  const auto j = read_json(out_ + "/script.json");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["steps"].size(), 12u);
  EXPECT_FALSE(read_json(out_ + "/script_trace.json")["traceEvents"].empty());
  EXPECT_TRUE(tmp_empty("script"));
}

TEST_F(E2eRemote, EachConnectionFailureIsOneClearLine) {
  const std::map<std::string, std::string> says = {{"nosuch.invalid", "cannot resolve the host name"},
                                                   {"127.0.0.1:1", "refused the connection"},
                                                   {"tbbadkey", "refused the authentication"}};
  ASSERT_EQ(connect_.size(), 3u);
  for (const auto& [host, r] : connect_) {
    EXPECT_EQ(r.code, 1) << host << ": " << r.err;
    EXPECT_NE(r.err.find("tunebench-cli: error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(says.at(host)), std::string::npos) << host << ": " << r.err;
  }
}

TEST_F(E2eRemote, AMissingOrForeignRemoteCliIsNamed) {
  EXPECT_EQ(missing_cli_.code, 1);
  EXPECT_NE(missing_cli_.err.find("has no '/nonexistent/tunebench-cli'"), std::string::npos) << missing_cli_.err;
  EXPECT_NE(missing_cli_.err.find("--remote-cli"), std::string::npos) << missing_cli_.err;
  // Another version of the protocol.
  EXPECT_EQ(foreign_cli_.code, 1);
  EXPECT_NE(foreign_cli_.err.find("does not speak (protocol 1)"), std::string::npos) << foreign_cli_.err;
}

TEST_F(E2eRemote, TheServersErrorsSayWhereTheyHappened) {
  if (cuda_.code == 0) GTEST_SKIP() << "this server has CUDA";
  EXPECT_EQ(cuda_.code, 2);
  EXPECT_NE(cuda_.err.find("tunebench-cli: error: on tbtest: device 'cuda' requested"), std::string::npos) << cuda_.err;
}

TEST_F(E2eRemote, AKilledClientLeavesNoTrainingOnTheServer) {
  ASSERT_TRUE(killed_.started) << "the remote run never started";
  EXPECT_TRUE(killed_.runs_gone) << "the remote run outlived its client";
  EXPECT_TRUE(killed_.tmp_empty) << "its working directory was left behind";
}

TEST_F(E2eRemote, AKilledSshEndsTheClientWithAMessageAndStopsTheRun) {
  ASSERT_TRUE(ssh_.started) << "the remote run never started";
  ASSERT_TRUE(ssh_.client_ended) << "the client hung (or had no ssh child): " << ssh_.log;
  EXPECT_TRUE(WIFEXITED(ssh_.status) && WEXITSTATUS(ssh_.status) == 1);
  EXPECT_NE(ssh_.log.find("was killed (signal 9)"), std::string::npos) << ssh_.log;
  EXPECT_TRUE(ssh_.runs_gone) << "the remote run outlived its ssh";
}

// Two nodes of one rank each: the ranks train in step (equal weights, disjoint shards), rank 0's JSON and the
// trace with both ranks come back here, and neither node keeps a working directory.
TEST_F(E2eRemote, AGroupAcrossTwoHostsRunsUnderTorchrunOnEach) {
  if (!have_torchrun_) GTEST_SKIP() << "torchrun is not installed";
  ASSERT_EQ(group_.code, 0) << group_.err;
  EXPECT_NE(group_.err.find("a group of 2 hosts x 1 rank(s), rendezvous at 127.0.0.1:"), std::string::npos)
      << group_.err;
  const auto j = read_json(out_ + "/g.json");
  ASSERT_TRUE(j.is_object()) << group_.err;
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
  EXPECT_TRUE(group_tmp_empty_) << "a node kept its working directory";
}

// A node that cannot connect: one line for it, one for the group, and the node that did start is stopped (its
// run and its directory gone), never a hang.
TEST_F(E2eRemote, ANodeThatCannotConnectStopsTheGroup) {
  if (!have_torchrun_) GTEST_SKIP() << "torchrun is not installed";
  EXPECT_EQ(node_fails_.code, 1) << node_fails_.err;
  EXPECT_NE(node_fails_.err.find("tbbadkey refused the authentication"), std::string::npos) << node_fails_.err;
  EXPECT_NE(node_fails_.err.find("the group ended: node 1 (tbbadkey) failed (exit status 255), and the other nodes "
                                 "were stopped"),
            std::string::npos) << node_fails_.err;
  EXPECT_TRUE(node_fails_gone_) << "node 0's run outlived the group";
  EXPECT_TRUE(node_fails_tmp_empty_);
}

// The client killed mid-run (a laptop closed): each node's watcher stops torchrun and its rank, and nothing of
// the run is left on either node.
TEST_F(E2eRemote, AKilledClientLeavesNoRankOnAnyNode) {
  if (!have_torchrun_) GTEST_SKIP() << "torchrun is not installed";
  ASSERT_TRUE(group_killed_.started) << "the ranks never started";
  EXPECT_TRUE(group_killed_.runs_gone) << "a rank, torchrun or a shell outlived the client";
  EXPECT_TRUE(group_killed_.tmp_empty);
}

// SIGTERM to the client: it stops every host, waits for them, and ends with what it said, nothing left on
// either host.
TEST_F(E2eRemote, ASignalledClientStopsEveryHostBeforeItEnds) {
  if (!have_torchrun_) GTEST_SKIP() << "torchrun is not installed";
  ASSERT_TRUE(group_signalled_.started) << "the ranks never started";
  ASSERT_TRUE(group_signalled_.client_ended) << "the client did not end: " << group_signalled_.log;
  EXPECT_NE(group_signalled_.log.find("Terminated: stopping every host"), std::string::npos) << group_signalled_.log;
  EXPECT_EQ(group_signalled_.log.find("the group ended"), std::string::npos)
      << "a stop is no failure of a host: " << group_signalled_.log;
  EXPECT_TRUE(group_signalled_.runs_gone) << "a rank outlived the client";
  EXPECT_TRUE(group_signalled_.tmp_empty);
}

// A toggle reaches both ranks, the trace chunks travel inside the protocol, closing stdin ends the group, and no
// node keeps a working directory.
TEST_F(E2eRemote, AServedGroupAcrossHostsSpeaksTheRunProtocolHere) {
  if (!have_torchrun_) GTEST_SKIP() << "torchrun is not installed";
  ASSERT_TRUE(served_ended_) << served_err_;
  EXPECT_EQ(served_exit_, 0) << served_err_;
  int chunks = 0;
  nlohmann::json done;
  for (const auto& m : served_) {
    const std::string type = m.value("type", "");
    if (type == "error") ADD_FAILURE() << m.dump();
    if (type == "trace") {
      ++chunks;
      EXPECT_TRUE(m.contains("data")) << "the chunk travels in the message: " << m.dump().substr(0, 300);
    }
    if (type == "done") done = m;
  }
  for (size_t i = 0; i < served_samples_.size(); ++i)
    EXPECT_EQ(served_samples_[i].first, served_samples_[i].second ? 12 : 8) << "step " << i + 1;
  EXPECT_GE(chunks, 2);
  const auto& ranks = done["summary"]["ranks"];
  ASSERT_EQ(ranks.size(), 2u) << done.dump();
  EXPECT_EQ(ranks[1]["config"]["batch_size"], "6");
  EXPECT_EQ(ranks[0]["config"], ranks[1]["config"]);
  EXPECT_EQ(ranks[0]["parameter_digest"], ranks[1]["parameter_digest"]);
  EXPECT_TRUE(served_tmp_empty_) << "a node kept its working directory";
}

}  // namespace
