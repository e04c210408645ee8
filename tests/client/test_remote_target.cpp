// client/remote.h: the host spec, the quoting of what the remote shell runs, the ssh command, and the one-line
// explanations of ssh's failures (their texts are OpenSSH 9's).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "client/remote.h"

using namespace tb::client;

TEST(RemoteTarget, ParsesUserHostAndPort) {
  auto t = parse_remote("alice@gpu-01:2222");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->destination, "alice@gpu-01");
  EXPECT_EQ(t->port, 2222);
  EXPECT_EQ(t->display(), "alice@gpu-01:2222");
  t = parse_remote("gpu");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->destination, "gpu");
  EXPECT_EQ(t->port, 0);
  t = parse_remote("bob@[::1]:22");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->destination, "bob@::1");
  EXPECT_EQ(t->port, 22);
}

TEST(RemoteTarget, RefusesWhatSshWouldMisread) {
  EXPECT_FALSE(parse_remote(""));
  const auto option = parse_remote("-oProxyCommand=evil");
  EXPECT_FALSE(option);
  EXPECT_NE(option.error().message.find("starts with '-'"), std::string::npos);
  EXPECT_FALSE(parse_remote("host:0"));
  EXPECT_FALSE(parse_remote("host:99999"));
  EXPECT_FALSE(parse_remote("host:22x"));
  EXPECT_FALSE(parse_remote("user@"));
  EXPECT_FALSE(parse_remote("a b"));
  EXPECT_FALSE(parse_remote("fe80::1"));  // IPv6 needs brackets when a port could follow
}

TEST(RemoteTarget, ShellQuotingKeepsEveryWordWhole) {
  EXPECT_EQ(shell_quote("plain/path-1.json"), "plain/path-1.json");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's $HOME `x`"), "'it'\\''s $HOME `x`'");
  // Through a real shell: the word comes out as it went in.
  const std::string word = "it's a \"test\" $HOME; rm -rf /tmp/nothing `true` \\ end";
  FILE* p = ::popen(("printf %s " + shell_quote(word)).c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[256] = {};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, p);
  ::pclose(p);
  EXPECT_EQ(std::string(buf, n), word);
}

TEST(RemoteTarget, SshArgvNeverPromptsAndTakesTheUsersCommand) {
  ::unsetenv("TUNEBENCH_SSH_COMMAND");
  RemoteTarget t{"alice@gpu", 2222, "tunebench-cli"};
  auto argv = ssh_argv(t, "echo hi");
  ASSERT_GE(argv.size(), 5u);
  EXPECT_EQ(argv[0], "ssh");
  EXPECT_NE(std::find(argv.begin(), argv.end(), "BatchMode=yes"), argv.end());
  EXPECT_EQ(argv[argv.size() - 3], "--");  // the host can never be read as an option
  EXPECT_EQ(argv[argv.size() - 2], "alice@gpu");
  EXPECT_EQ(argv.back(), "echo hi");
  EXPECT_NE(std::find(argv.begin(), argv.end(), "2222"), argv.end());
  ::setenv("TUNEBENCH_SSH_COMMAND", "/opt/ssh -F /tmp/cfg", 1);
  argv = ssh_argv(t, "true");
  EXPECT_EQ(argv[0], "/opt/ssh");
  EXPECT_EQ(argv[1], "-F");
  EXPECT_EQ(argv[2], "/tmp/cfg");
  ::unsetenv("TUNEBENCH_SSH_COMMAND");
}

TEST(RemoteTarget, ExplainsSshFailuresInOneLine) {
  RemoteTarget t{"gpu", 0, "tunebench-cli"};
  auto says = [&](const std::string& line, const std::string& expect) {
    const std::string why = explain_ssh_failure(t, {line});
    EXPECT_NE(why.find(expect), std::string::npos) << line << " -> " << why;
    EXPECT_EQ(why.find('\n'), std::string::npos);
  };
  says("ssh: Could not resolve hostname gpu: Name or service not known", "cannot resolve");
  says("ssh: connect to host 10.0.0.1 port 22: Connection refused", "refused the connection");
  says("ssh: connect to host 10.0.0.1 port 22: Connection timed out", "unreachable");
  says("ssh: connect to host 10.0.0.1 port 22: No route to host", "no route to host");
  says("alice@gpu: Permission denied (publickey).", "set up a key");
  says("Host key verification failed.", "host key");
  says("Timeout, server gpu not responding.", "connection to gpu was lost");
  says("Connection to gpu closed by remote host.", "was lost");
  says("something new", "something new");
}
