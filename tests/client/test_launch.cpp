// The one launcher (client/launch.h): starts with the fds asked for, stops down the ladder, never leaves a
// process behind, and says why a start failed.
#include "client/launch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

using namespace tb::client;

namespace {

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, size_t(n));
  return out;
}

bool alive(pid_t pid) { return ::kill(pid, 0) == 0; }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST(Launch, GivesTheChildItsFdsAndReportsTheExit) {
  int out[2], extra[2];
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(extra, O_CLOEXEC), 0);
  // stdout where stderr goes (one pipe), a second pipe on the child's fd 3, stdin /dev/null (cat ends).
  auto p = Process::launch({.argv = {"sh", "-c", "cat; echo out; echo err >&2; echo three >&3; exit 7"},
                            .in = kDevNull,
                            .out = kToStderr,
                            .err = out[1],
                            .fds = {{extra[1], 3}}});
  ::close(extra[1]);
  ::close(out[1]);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(read_all(out[0]), "out\nerr\n");
  EXPECT_EQ(read_all(extra[0]), "three\n");
  ::close(out[0]), ::close(extra[0]);
  ASSERT_TRUE(p->wait(10));
  EXPECT_EQ(p->exit_code(), 7);
  EXPECT_EQ(describe_exit(*p->status()), "exited with code 7");
}

TEST(Launch, AMissingProgramIsAOneLineError) {
  auto p = Process::launch({.argv = {"/no/such/program"}});
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().message, "cannot start /no/such/program: No such file or directory");
  auto q = Process::launch({.argv = {"no-such-program-anywhere"}, .dies_with_parent = true});
  ASSERT_FALSE(q);
  EXPECT_NE(q.error().message.find("cannot start no-such-program-anywhere"), std::string::npos);
  EXPECT_FALSE(Process::launch({}));
}

TEST(Launch, TheLadderEndsAChildThatIgnoresSigterm) {
  int out[2];
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  auto p = Process::launch(
      {.argv = {"sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"}, .out = out[1], .own_group = true});
  ::close(out[1]);
  ASSERT_TRUE(p) << p.error().message;
  char c = 0;
  ASSERT_EQ(::read(out[0], &c, 1), 1);  // the trap is set (a loaded machine may take a while to get there)
  ::close(out[0]);
  const auto t0 = std::chrono::steady_clock::now();
  const int status = p->stop(0.5);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << describe_exit(status);
  EXPECT_GE(seconds_since(t0), 0.45);
  EXPECT_LT(seconds_since(t0), 5.0);
  EXPECT_EQ(p->exit_code(), -SIGKILL);
  EXPECT_FALSE(alive(p->pid()));
}

TEST(Launch, StopReachesWhatAGroupLeaderStarted) {
  int out[2];
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  // The leader starts a grandchild (a DataLoader worker's place), says its pid and exits at SIGTERM.
  auto p = Process::launch({.argv = {"sh", "-c", "sleep 60 & echo $!; wait"}, .out = out[1], .own_group = true});
  ::close(out[1]);
  ASSERT_TRUE(p) << p.error().message;
  char buf[32] = {};
  ASSERT_GT(::read(out[0], buf, sizeof buf - 1), 0);
  ::close(out[0]);
  const pid_t grandchild = pid_t(std::atoi(buf));
  ASSERT_GT(grandchild, 0);
  ASSERT_TRUE(alive(grandchild));
  p->stop(2);
  // The grandchild is not ours to reap: it is gone once init has reaped it.
  const auto t0 = std::chrono::steady_clock::now();
  while (alive(grandchild) && seconds_since(t0) < 5) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(alive(grandchild));
}

TEST(Launch, StopAllStopsAGroupWithinTheGrace) {
  std::vector<Process> group;
  for (int i = 0; i < 3; ++i) {
    auto p = Process::launch({.argv = {"sleep", "60"}, .dies_with_parent = true});
    ASSERT_TRUE(p) << p.error().message;
    group.push_back(std::move(p).value());
  }
  ASSERT_TRUE(group[1].wait(0) == false);
  std::vector<Process*> all;
  for (auto& p : group) all.push_back(&p);
  const auto t0 = std::chrono::steady_clock::now();
  // A grace far longer than any machine takes to end `sleep` at SIGTERM: a ladder that waited it out anyway
  // (or sent SIGKILL after it) shows, however busy the machine.
  stop_all(all, 30);
  EXPECT_LT(seconds_since(t0), 15.0);
  for (auto& p : group) EXPECT_EQ(p.exit_code(), -SIGTERM);
}

// A rank must not outlive its launcher: the parent-death signal kills it when the launcher dies.
TEST(Launch, AChildThatDiesWithItsParentDoes) {
  int out[2];
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);  // the grandchild must not hold it open
  const pid_t launcher = ::fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    ::close(out[0]);
    auto p = Process::launch({.argv = {"sleep", "60"}, .dies_with_parent = true});
    if (!p) ::_exit(2);
    const std::string pid = std::to_string(p->pid()) + "\n";
    (void)!::write(out[1], pid.data(), pid.size());
    ::pause();  // killed below
    ::_exit(0);
  }
  ::close(out[1]);
  std::string line;
  for (char c; line.find('\n') == std::string::npos && ::read(out[0], &c, 1) == 1;) line += c;
  ::close(out[0]);
  const pid_t child = pid_t(std::atoi(line.c_str()));
  ASSERT_GT(child, 0) << line;
  ASSERT_TRUE(alive(child));
  ::kill(launcher, SIGKILL);
  ::waitpid(launcher, nullptr, 0);
  const auto t0 = std::chrono::steady_clock::now();
  while (alive(child) && seconds_since(t0) < 5) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(alive(child));
}

TEST(Launch, ADestroyedProcessLeavesNothingRunning) {
  pid_t pid = -1;
  {
    auto p = Process::launch({.argv = {"sleep", "60"}});
    ASSERT_TRUE(p);
    pid = p->pid();
  }
  EXPECT_FALSE(alive(pid));
}

TEST(Launch, AChildGetsNeitherOurRankNorOurAllocator) {
  ::setenv("WORLD_SIZE", "2", 1);
  ::setenv("TORCHELASTIC_RUN_ID", "x", 1);
  ::setenv("LD_PRELOAD", "/opt/a.so:/usr/lib/libjemalloc.so.2", 1);
  ::setenv("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=1", 1);
  const auto has = [](const std::vector<std::string>& env, const std::string& kv) {
    return std::find(env.begin(), env.end(), kv) != env.end();
  };
  const auto any_key = [](const std::vector<std::string>& env, const std::string& key) {
    return std::any_of(env.begin(), env.end(), [&](const std::string& kv) { return kv.rfind(key + "=", 0) == 0; });
  };
  const auto both = inherited_environment({.rank_variables = true, .allocator = true});
  EXPECT_FALSE(any_key(both, "WORLD_SIZE"));
  EXPECT_FALSE(any_key(both, "TORCHELASTIC_RUN_ID"));
  EXPECT_TRUE(has(both, "LD_PRELOAD=/opt/a.so"));  // the user's own preload stays
  EXPECT_FALSE(any_key(both, "GLIBC_TUNABLES"));
  const auto ranks_only = inherited_environment({.rank_variables = true});
  EXPECT_TRUE(has(ranks_only, "LD_PRELOAD=/opt/a.so:/usr/lib/libjemalloc.so.2"));
  EXPECT_TRUE(has(inherited_environment({}), "WORLD_SIZE=2"));
  for (const char* k : {"WORLD_SIZE", "TORCHELASTIC_RUN_ID", "LD_PRELOAD", "GLIBC_TUNABLES"}) ::unsetenv(k);
}
