// `tunebench-cli run|tune --remote` through a real sshd (sshd_fixture.h): the same results as a local run, the
// files brought back, one clear line for each way a connection fails, and no training left on the server when
// the client or its ssh dies.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "../engine/cli_runner.h"
#include "processes.h"
#include "remote_cli_fixture.h"

namespace fs = std::filesystem;
using tb::test_util::run_cli_shell;
using tb::test_util::processes_with;
using tb::test_util::read_json;
using tb::test_util::RemoteCli;
using tb::test_util::wait_for;
using tb::test_util::KillAtExit;
using tb::test_util::remote_runs;
using tb::test_util::start_cli;

namespace {

TEST_F(RemoteCli, RunGivesTheSameJsonAsALocalRunAndBringsTheTraceBack) {
  const std::string common = " --model mnist_cnn --data synthetic --steps 6 --warmup 2 --seed 3";
  const auto local = run_cli_shell("", "run" + common + " --json " + out_ + "/local.json", 300);
  ASSERT_EQ(local.code, 0) << local.err;
  const auto r = run_cli_shell("", "run " + remote() + common + " --json " + out_ + "/remote.json --trace " + out_ + "/t.json", 300);
  ASSERT_EQ(r.code, 0) << r.err;
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
  EXPECT_NE(r.err.find("trace written to " + out_ + "/t.json"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("tunebench-remote-"), std::string::npos) << r.err;
  EXPECT_EQ(b["trace"], out_ + "/t.json");
  EXPECT_TRUE(remote_tmp_empty()) << "the remote working directory was left behind";
}

TEST_F(RemoteCli, TuneBringsTheReportAndItsMarkdownBack) {
  const auto r = run_cli_shell("", "tune " + remote() + " --simulate --budget 40 -q --report " + out_ +
                                       "/r.html --json " + out_ + "/tune.json", 300);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::file_size(out_ + "/r.html") > 1000);
  EXPECT_TRUE(fs::exists(out_ + "/r.md"));
  const auto j = read_json(out_ + "/tune.json");
  ASSERT_TRUE(j.is_object());
  EXPECT_TRUE(j.contains("baseline_throughput"));
  EXPECT_NE(r.out.find("report    " + out_ + "/r.html"), std::string::npos) << r.out;
  EXPECT_TRUE(remote_tmp_empty());
}

TEST_F(RemoteCli, AUsersScriptRunsOnTheServerAndItsTraceComesBack) {
  if (std::system((std::string(TB_TEST_PYTHON) + " -c 'import torch' >/dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP() << "no Python with torch";
  const std::string script = out_ + "/train.py";  // the server's path (the server is this machine)
  std::ofstream(script) << "import torch\n"
                           "model = torch.nn.Linear(8, 2)\n"
                           "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                           "data = torch.utils.data.TensorDataset(torch.randn(256, 8), torch.randint(0, 2, (256,)))\n"
                           "for x, y in torch.utils.data.DataLoader(data, batch_size=8):\n"
                           "    opt.zero_grad()\n"
                           "    torch.nn.functional.cross_entropy(model(x), y).backward()\n"
                           "    opt.step()\n";
  const auto r = run_cli_shell("", "run " + remote() + " --script " + script + " --steps 12 --json " + out_ +
                                       "/script.json --trace " + out_ + "/script_trace.json", 300);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = read_json(out_ + "/script.json");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["steps"].size(), 12u);
  EXPECT_FALSE(read_json(out_ + "/script_trace.json")["traceEvents"].empty());
  EXPECT_TRUE(remote_tmp_empty());
}

TEST_F(RemoteCli, EachConnectionFailureIsOneClearLine) {
  struct Case {
    std::string host, says;
  };
  const Case cases[] = {
      {"nosuch.invalid", "cannot resolve the host name"},
      {"127.0.0.1:1", "refused the connection"},
      {"tbbadkey", "refused the authentication"},
  };
  for (const auto& c : cases) {
    const auto r = run_cli_shell("", "knobs " + remote(c.host), 120);
    EXPECT_EQ(r.code, 1) << c.host << ": " << r.err;
    EXPECT_NE(r.err.find("tunebench-cli: error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.host << ": " << r.err;
  }
  const auto bad = run_cli_shell("", "run --remote -oProxyCommand=x --model mnist_cnn --data synthetic", 30);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("starts with '-'"), std::string::npos) << bad.err;
}

TEST_F(RemoteCli, AMissingOrForeignRemoteCliIsNamed) {
  auto r = run_cli_shell("", "knobs --remote tbtest --remote-cli /nonexistent/tunebench-cli", 60);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("has no '/nonexistent/tunebench-cli'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--remote-cli"), std::string::npos) << r.err;
  // Another version of the protocol.
  const std::string fake = sshd_.dir() + "/old-cli";
  std::ofstream(fake) << "#!/bin/sh\necho 'tunebench-cli 0.0.1 (protocol 0)'\n";
  fs::permissions(fake, fs::perms::owner_all);
  r = run_cli_shell("", "knobs --remote tbtest --remote-cli " + fake, 60);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("does not speak (protocol 1)"), std::string::npos) << r.err;
}

TEST_F(RemoteCli, TheServersErrorsSayWhereTheyHappened) {
  // A CPU-only server asked for CUDA (on a CUDA server with a GPU the run just works).
  const auto r = run_cli_shell("", "run " + remote() + " --model mnist_cnn --data synthetic --steps 3 --device cuda", 120);
  if (r.code == 0) GTEST_SKIP() << "this server has CUDA";
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("tunebench-cli: error: on tbtest: device 'cuda' requested"), std::string::npos) << r.err;
}

TEST_F(RemoteCli, AnOutputIntoAMissingLocalDirectoryIsRefusedBeforeAnythingRuns) {
  const auto r = run_cli_shell("", "run " + remote() + " --model mnist_cnn --data synthetic --json /nonexistent/x.json", 30);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no directory /nonexistent here"), std::string::npos) << r.err;
}

// The markers the remote runs carry in their command lines: one per test (CTest runs them side by side).
constexpr const char* kClientKilled = "--steps 987651";
constexpr const char* kSshKilled = "--steps 987652";

TEST_F(RemoteCli, AKilledClientLeavesNoTrainingOnTheServer) {
  const pid_t cli = start_cli("run " + remote() + " --model mnist_cnn --data synthetic " + kClientKilled + " --json " +
                                  out_ + "/never.json",
                              out_ + "/log");
  KillAtExit guard{cli};
  ASSERT_TRUE(wait_for([&] { return remote_runs(kClientKilled) > 0; }, 60)) << "the remote run never started";
  ::kill(cli, SIGKILL);
  ::waitpid(cli, nullptr, 0);
  EXPECT_TRUE(wait_for([&] { return remote_runs(kClientKilled) == 0; }, 20)) << "the remote run outlived its client";
  EXPECT_TRUE(wait_for([&] { return remote_tmp_empty(); }, 5)) << "its working directory was left behind";
}

TEST_F(RemoteCli, AKilledSshEndsTheClientWithAMessageAndStopsTheRun) {
  const std::string log = out_ + "/log";
  const pid_t cli = start_cli("run " + remote() + " --model mnist_cnn --data synthetic " + kSshKilled, log);
  KillAtExit guard{cli};
  ASSERT_TRUE(wait_for([&] { return remote_runs(kSshKilled) > 0; }, 60)) << "the remote run never started";
  // The client's ssh (another test's ssh may be running beside it).
  pid_t ssh = -1;
  ASSERT_TRUE(wait_for([&] { return (ssh = tb::test_util::ssh_child_of(cli)) > 0; }, 10));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ::kill(ssh, SIGKILL);
  int status = 0;
  ASSERT_TRUE(wait_for([&] { return ::waitpid(cli, &status, WNOHANG) == cli; }, 30)) << "the client hung";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1);
  std::ifstream f(log);
  const std::string err(std::istreambuf_iterator<char>(f), {});
  EXPECT_NE(err.find("was killed (signal 9)"), std::string::npos) << err;
  EXPECT_TRUE(wait_for([&] { return remote_runs(kSshKilled) == 0; }, 20))
      << "the remote run outlived its ssh";
}

}  // namespace
