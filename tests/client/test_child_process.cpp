// The child process of client/: protocol lines on fds 3/4, its prints kept apart, deadlines, termination.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>

#include "client/child_process.h"
#include "client/script_runner.h"

using tb::client::ChildProcess;

namespace {
double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

TEST(ChildProcess, ProtocolOnFdsThreeAndFourOutputApart) {
  ChildProcess c;
  std::vector<std::string> forwarded;
  std::mutex mu;
  ASSERT_TRUE(c.start({"sh", "-c", "echo '{\"type\":\"hello\"}' >&3; echo printed; read x <&4; echo \"got $x\" >&3; echo oops >&2; exit 3"},
                      {}, [&](const std::string& l) {
                        std::lock_guard<std::mutex> lock(mu);
                        forwarded.push_back(l);
                      }));
  auto first = c.read_line(10);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(*first, "{\"type\":\"hello\"}");
  EXPECT_TRUE(c.write_line("ping"));
  auto second = c.read_line(10);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(*second, "got ping");
  EXPECT_FALSE(c.read_line(10).has_value());  // the child exited: EOF, not a timeout
  EXPECT_TRUE(c.eof());
  EXPECT_EQ(c.terminate(5), 3);
  const auto tail = c.output_tail();
  ASSERT_GE(tail.size(), 1u);
  EXPECT_EQ(tail.front(), "printed");
  EXPECT_EQ(tail.back(), "oops");
}

TEST(ChildProcess, ReadTimesOutAndTerminateNeverHangs) {
  ChildProcess c;
  ASSERT_TRUE(c.start({"sh", "-c", "trap '' TERM; sleep 30 & sleep 30"}, {}));
  auto t = std::chrono::steady_clock::now();
  EXPECT_FALSE(c.read_line(0.3).has_value());
  EXPECT_FALSE(c.eof());
  EXPECT_LT(since(t), 2.0);
  t = std::chrono::steady_clock::now();
  const int code = c.terminate(0, 0.5);  // SIGTERM is ignored: SIGKILL after the grace period
  EXPECT_LT(since(t), 3.0);
  EXPECT_LT(code, 0);
}

TEST(ChildProcess, MissingProgramIsAnError) {
  ChildProcess c;
  EXPECT_FALSE(c.start({"/no/such/program"}, {}));
}

TEST(ScriptRunner, FindPythonNamesWhatItTried) {
  // An "interpreter" that cannot import torch.
  const std::string fake = testing::TempDir() + "tb_fake_python.sh";
  {
    std::ofstream f(fake);
    f << "#!/bin/sh\nexit 1\n";
  }
  ASSERT_EQ(std::system(("chmod +x " + fake).c_str()), 0);
  auto c = tb::client::find_python(fake);
  EXPECT_TRUE(c.path.empty());
  EXPECT_NE(c.error.find(fake), std::string::npos) << c.error;
  EXPECT_NE(c.error.find("cannot import torch"), std::string::npos) << c.error;
}

TEST(ScriptRunner, MissingScriptIsAOneLineError) {
  tb::client::ScriptRunner r;
  tb::client::ScriptOptions o;
  o.script = "/no/such/train.py";
  const tb::Status st = r.start(o);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message, "script not found: /no/such/train.py");
}
