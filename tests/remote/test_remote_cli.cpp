// `tunebench-cli run|serve --remote` requests refused here, before any ssh starts: one line and exit 2. What a
// remote run does through a real sshd is E2eRemote's (test_e2e_remote.cpp).
#include <gtest/gtest.h>

#include <string>

#include "../engine/cli_runner.h"
#include "remote_cli_fixture.h"

using tb::test_util::remote;
using tb::test_util::run_cli_shell;

namespace {

TEST(RemoteCliRequests, AnOutputIntoAMissingLocalDirectoryIsRefusedBeforeAnythingRuns) {
  const auto r = run_cli_shell(
      "", "run " + remote("tbtest") + " --model mnist_cnn --data synthetic --json /nonexistent/x.json", 30);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no directory /nonexistent here"), std::string::npos) << r.err;
}

// A host that ssh would read as an option is refused (it would run a command here).
TEST(RemoteCliRequests, AHostThatLooksLikeAnOptionIsRefused) {
  const auto bad = run_cli_shell("", "run --remote -oProxyCommand=x --model mnist_cnn --data synthetic", 30);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("starts with '-'"), std::string::npos) << bad.err;
}

TEST(RemoteCliRequests, BadGroupRequestsAreRefusedBeforeAnythingRuns) {
  struct Case {
    std::string args, says;
  };
  const Case cases[] = {
      {"run " + remote("tbtest,tbtest") + " --ranks-per-host 0 --model mnist_cnn", "--ranks-per-host needs an integer"},
      {"run " + remote("tbtest,") + " --model mnist_cnn", "--remote tbtest,: "},
      {"run " + remote("tbtest") + " --ranks-per-host 2 --model mnist_cnn", "are for a group across hosts"},
      {"serve " + remote("tbtest") + " --model mnist_cnn", "serve --remote takes a group's hosts"},
  };
  for (const auto& c : cases) {
    const auto r = run_cli_shell("", c.args, 30);
    EXPECT_EQ(r.code, 2) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << ": " << r.err;
  }
}

}  // namespace
