// tunebench-cli gate's one-line errors that need no script process: a bad revision, option or tolerance, a script
// outside a git repository, a file that is not a stored baseline, an engine gate where nothing differs, options
// that do not mix. Each is one line on stderr, exit 3, and leaves no worktree. The gates that run a script (a
// verdict, a script that fails or hangs, a cancel, a stored baseline, a launcher knob) are E2eGate's
// (test_gate_e2e.cpp).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "gate_repo.h"
#include "gate_scripts.h"

namespace fs = std::filesystem;
using tb::test_util::CliOut;
using tb::test_util::GateRepo;
using tb::test_util::run_cli_shell;
using tb::test_util::train_py;

namespace {

// The error is stderr's one line and the last: "tunebench-cli: error: ...".
std::string one_line(const CliOut& r) {
  const size_t at = r.err.find("tunebench-cli: error: ");
  if (at == std::string::npos || r.err.find('\n', at) != r.err.size() - 1) return "not one line: " + r.err;
  return r.err.substr(at + 22, r.err.size() - at - 23);
}

}  // namespace

TEST(GateCli, ABadRevisionOptionOrBaselineFileIsOneLineAndExitThree) {
  GateRepo repo(fs::temp_directory_path() / ("tb_gate_cli_" + std::to_string(::getpid())));
  ASSERT_TRUE(repo.commit(train_py(64), "MLP baseline", "c1"));
  auto expect_error = [&](const std::string& args, const std::string& says) {
    const CliOut r = repo.gate(args, 60);
    EXPECT_EQ(r.code, 3) << args << "\n" << r.out << r.err;
    EXPECT_NE(one_line(r).find(says), std::string::npos) << args << "\n" << r.err;
  };
  expect_error("--baseline no-such-rev", "no revision 'no-such-rev' in ");
  expect_error("--baseline c1 --tolerance 2", "the tolerance must be a share between 0 and 1");
  expect_error("--baseline c1 --confidence 1", "the confidence must be at least 0.5");
  // The one --steps rule (client/inputs.h) from the gate's least: a whole number of steps.
  expect_error("--baseline c1 --steps 2", "--steps needs an integer from 5 to 1000000, got '2'");
  expect_error("--baseline c1 --steps 80.5", "--steps needs an integer from 5 to 1000000, got '80.5'");
  expect_error("--baseline c1 --why maybe", "bad option or value: --why maybe");
  expect_error("--baseline c1 --max-time", "--max-time needs a value");
  expect_error("--baseline c1 --max-time 0", "--max-time must be between 1 and 86400 seconds, got 0");
  expect_error("", "--script needs --baseline REV");
  expect_error("--against train.py", "train.py is not a stored gate baseline (made by gate --save-baseline)");
  expect_error("--against base.json --baseline c1", "--against B.json is the baseline: no --baseline REV beside it");
  expect_error("--save-baseline b.json --against base.json", "--save-baseline and --against do not mix");
  expect_error("--baseline c1 --baseline-script train.py", "do not mix");
  expect_error("--baseline c1 --set warp_speed", "warp_speed");
  EXPECT_EQ(repo.worktrees(), 1) << "a worktree was left behind";
  fs::remove_all(repo.dir);

  // Outside a repository; the engine with nothing that differs; two files, one missing.
  CliOut r = run_cli_shell("cd /tmp &&", "gate --script /etc/hostname --baseline HEAD", 60);
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(one_line(r).find("/etc/hostname is not in a git repository"), std::string::npos) << r.err;
  r = run_cli_shell("", "gate --model mnist_cnn", 60);
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(one_line(r).find("--model needs --baseline-set K=V and/or --candidate-set K=V"), std::string::npos)
      << r.err;
  r = run_cli_shell("", "gate --baseline-script /no/such/a.py --candidate-script /etc/hostname", 60);
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(one_line(r).find("script not found: /no/such/a.py"), std::string::npos) << r.err;
}
