// tunebench-cli gate on a training script as people write them (an MLP on a DataLoader, AdamW, a cosine
// schedule, gradient clipping, argparse, a checkpoint at the end), its history in a git repository made at test
// time: a commit that widens the hidden layers from 640 to 686 (15% more multiply-adds in them) is a regression, a
// commit that only adds a comment is never one, a revision whose script fails or hangs exits 3 with the
// script's own line, and no worktree is left behind in any case. A regression says why: a traced process of each
// side and what grew (the matrix products of the wider layers).
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "../engine/cli_runner.h"
#include "gate_scripts.h"
#include "gate/git.h"

namespace fs = std::filesystem;
using tb::test_util::run_cli_shell;
using tb::test_util::train_py;

namespace {

// A git repository in a fresh folder, one commit per text of train.py, tagged c1, c2, ...
struct Repo {
  fs::path dir;
  explicit Repo(const std::vector<std::pair<std::string, std::string>>& commits) {
    static std::atomic<int> n{0};
    dir = fs::temp_directory_path() / ("tb_gate_repo_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::remove_all(dir);
    fs::create_directories(dir);
    sh("git init -q -b main .");
    int k = 0;
    for (const auto& [message, text] : commits) {
      std::ofstream(dir / "train.py") << text;
      sh("git add train.py && git -c user.email=t@example.com -c user.name=t commit -q -m '" + message + "' && git tag c" +
         std::to_string(++k));
    }
  }
  ~Repo() { fs::remove_all(dir); }
  void sh(const std::string& cmd) const {
    ASSERT_EQ(std::system(("cd '" + dir.string() + "' && " + cmd + " >/dev/null 2>&1").c_str()), 0) << cmd;
  }
  // The gate run from inside the repository, as a CI job does.
  tb::test_util::CliOut gate(const std::string& args, int timeout_s = 600, const std::string& env = "") const {
    auto r = run_cli_shell("cd '" + dir.string() + "' && " + env, "gate --script train.py " + args, timeout_s);
    std::cout << r.err << r.out;  // the gate's log, in CTest's
    return r;
  }
  int worktrees() const {
    auto list = tb::gate::git(dir.string(), {"worktree", "list", "--porcelain"});
    int count = 0;
    for (size_t at = 0; list && (at = list->find("worktree ", at)) != std::string::npos; at += 9) ++count;
    return count;
  }
  std::string read(const std::string& name) const {
    std::ifstream f(dir / name);
    return {std::istreambuf_iterator<char>(f), {}};
  }
};

const char* kFast = "--steps 80 --max-time 300 --first-step-timeout 120";

}  // namespace

TEST(GateCli, ACommitThatWidensTheModelIsARegression) {
  Repo repo({{"MLP baseline", train_py(640)}, {"Wider hidden layers", train_py(686)}});
  const auto r = repo.gate(std::string("--baseline c1 --candidate c2 ") + kFast +
                           " --json gate.json --junit gate.xml --markdown gate.md --traces traces -- --epochs 100");
  const auto j = nlohmann::json::parse(repo.read("gate.json"), nullptr, false);
  ASSERT_TRUE(j.is_object()) << repo.read("gate.json") << r.out << r.err;
  // On a busy machine (a load of 4 on 2 cores: an A/A floor of ±18% a pair) 300 s can end undecided (0.948x
  // [0.852, 1.056], "about 58 more pairs would likely decide"): the right answer there, said as such, with an
  // interval that holds the regression; never "no regression".
  if (r.code == 2 && r.out.find("gate: warning: the machine was busy") != std::string::npos) {
    EXPECT_NE(r.out.find("gate: undecided: too noisy to tell"), std::string::npos) << r.out;
    EXPECT_EQ(j["verdict"], "undecided");
    EXPECT_LT(j["interval"][0].get<double>(), 0.95) << j.dump(1);
    EXPECT_EQ(repo.worktrees(), 1) << "a worktree was left behind";
    return;
  }
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("gate: regression: the candidate is"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(j["verdict"], "regression");
  EXPECT_LT(j["ratio"].get<double>(), 0.95) << j.dump(1);
  EXPECT_GT(j["ratio"].get<double>(), 0.6) << j.dump(1);
  EXPECT_LT(j["interval"][1].get<double>(), 1.0);
  EXPECT_GE(j["pairs"].get<int>(), 3);
  EXPECT_NE(j["candidate"]["describe"].get<std::string>().find("Wider hidden layers (c2)"), std::string::npos);
  EXPECT_NE(repo.read("gate.xml").find("<failure message=\"regression"), std::string::npos) << repo.read("gate.xml");
  EXPECT_NE(repo.read("gate.md").find("TuneBench gate: regression"), std::string::npos) << repo.read("gate.md");
  EXPECT_EQ(repo.worktrees(), 1) << "a worktree was left behind";
  EXPECT_FALSE(fs::exists(repo.dir / "model.pt"));
  // Why: a traced process of each side, and what grew: the hidden layers' matrix products.
  const auto& why = j["why"];
  ASSERT_TRUE(why.is_object()) << j.dump(1);
  EXPECT_EQ(why["error"], "") << why.dump(1);
  ASSERT_FALSE(why["lines"].empty());
  EXPECT_EQ(why["lines"][0].get<std::string>().rfind("median step", 0), 0u) << why.dump(1);
  // What grew: the matrix products; or, when a process a side was too noisy to show the change (a busy
  // machine: CTest runs another test beside this one), the note that says so, never a wrong "why" unqualified.
  bool grew_mm = false, said_noisy = false;
  for (const auto& l : why["lines"]) {
    const std::string s = l.get<std::string>();
    grew_mm |= s.rfind("grew: ", 0) == 0 && (s.find("mm") != std::string::npos || s.find("linear") != std::string::npos);
    said_noisy |= s.rfind("note: the traced processes", 0) == 0;
  }
  EXPECT_TRUE(grew_mm || said_noisy) << why.dump(1);
  EXPECT_EQ(why["lines"][1].get<std::string>().rfind("memory peak (host RSS): ", 0), 0u) << why.dump(1);
  EXPECT_TRUE(fs::exists(repo.dir / "traces" / "candidate.json"));
  EXPECT_NE(repo.read("gate.md").find("**What changed**"), std::string::npos);
  EXPECT_NE(r.out.find("gate: why: median step "), std::string::npos) << r.out;
}

TEST(GateCli, ACommentIsNeverARegressionAndTheWorkingTreeIsTheDefaultCandidate) {
  std::string commented = train_py(640);
  commented.insert(commented.find("def main"), "# Trains the MLP; see the README for the data.\n");
  Repo repo({{"MLP baseline", train_py(640)}, {"Document main", commented}});
  // 90 s: to prove "no change" within 3% takes ~25 pairs at this machine's ~4% per pair; undecided is a fine end.
  const auto r = repo.gate("--baseline c1 --steps 80 --max-time 90 --json gate.json -- --epochs 100");
  EXPECT_TRUE(r.code == 0 || r.code == 2) << r.out << r.err;
  EXPECT_EQ(r.out.find("regression"), std::string::npos) << r.out << r.err;
  const auto j = nlohmann::json::parse(repo.read("gate.json"), nullptr, false);
  ASSERT_TRUE(j.is_object());
  EXPECT_NE(j["candidate"]["describe"].get<std::string>().find("the working tree"), std::string::npos);
  EXPECT_EQ(j["exit_code"].get<int>(), r.code);
  EXPECT_EQ(repo.worktrees(), 1);
}

TEST(GateCli, AScriptThatFailsAtOneRevisionExitsThreeWithItsOwnError) {
  std::string broken = train_py(640);
  broken.replace(broken.find("loss.backward()"), 15, "loss.backwards()");
  Repo repo({{"MLP baseline", train_py(640)}, {"Typo", broken}});
  const auto r = repo.gate(std::string("--baseline c1 --candidate c2 ") + kFast + " --junit gate.xml -- --epochs 100");
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("candidate ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Typo (c2)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("AttributeError"), std::string::npos) << r.err;
  EXPECT_NE(repo.read("gate.xml").find("<error message=\"could not run"), std::string::npos);
  EXPECT_EQ(repo.worktrees(), 1);
}

TEST(GateCli, AScriptThatHangsAtOneRevisionExitsThree) {
  const std::string hangs = train_py(384, "import time", "            if epoch == 0 and step == 20:\n                time.sleep(3600)\n");
  Repo repo({{"MLP baseline", train_py(640)}, {"Debug pause", hangs}});
  const auto r = repo.gate("--baseline c1 --candidate c2 --steps 80 --step-timeout 8 -- --epochs 100", 300);
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("hangs"), std::string::npos) << r.err;
  EXPECT_LT(r.seconds, 120);
  EXPECT_EQ(repo.worktrees(), 1);
}

TEST(GateCli, ACancelledGateEndsCleanly) {
  // A CI cancelling the job sends SIGTERM: the gate stops at the script's next step, exits 3, removes its worktrees.
  Repo repo({{"MLP baseline", train_py(640)}, {"Wider hidden layers", train_py(686)}});
  const auto r = repo.gate("--baseline c1 --candidate c2 --steps 80 -- --epochs 100", 0,
                           "timeout --preserve-status -s TERM 10");
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("cancelled"), std::string::npos) << r.err;
  EXPECT_LT(r.seconds, 30);
  EXPECT_EQ(repo.worktrees(), 1) << "a worktree was left behind";
}

// ... also while a process has not made its first step (a script that loads its data for minutes first): the
// gate does not wait for that step.
TEST(GateCli, ACancelDuringAFirstStepEndsAtOnce) {
  Repo repo({{"MLP baseline", train_py(640, "import time\ntime.sleep(120)  # loading a dataset")},
             {"Wider hidden layers", train_py(686, "import time\ntime.sleep(120)  # loading a dataset")}});
  const auto r = repo.gate("--baseline c1 --candidate c2 --steps 80 -- --epochs 100", 0,
                           "timeout --preserve-status -s TERM 6");
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("cancelled"), std::string::npos) << r.err;
  EXPECT_LT(r.seconds, 20) << "the gate waited for the first step";
  EXPECT_EQ(repo.worktrees(), 1) << "a worktree was left behind";
}

TEST(GateCli, AStoredBaselineFindsTheRegressionAndWarnsWhenTheEnvironmentDiffers) {
  // Stored and compared at different times, the two sides see different loads (CTest runs another test beside
  // this one): not alternated, so a load that changed between them is not cancelled. One thread a process and
  // twice the work (640 -> 900 wide) keep the change larger than what the load can do here.
  Repo repo({{"MLP baseline", train_py(640)}, {"Much wider hidden layers", train_py(900)}});
  const std::string one_thread = "OMP_NUM_THREADS=1";
  auto r = repo.gate("--baseline c1 --save-baseline base.json --runs 5 --steps 60 -- --epochs 100", 600, one_thread);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("gate: stored "), std::string::npos) << r.out;
  auto stored = nlohmann::json::parse(repo.read("base.json"), nullptr, false);
  ASSERT_TRUE(stored.is_object());
  EXPECT_EQ(stored["runs"].size(), 5u);
  EXPECT_EQ(repo.worktrees(), 1);
  // The stored one as if made with another torch: the verdict stands, with a warning.
  stored["environment"]["torch"] = "2.0.0";
  std::ofstream(repo.dir / "base.json") << stored.dump();
  r = repo.gate("--against base.json --candidate c2 --steps 60 --max-time 200 --json gate.json -- --epochs 100", 600,
                one_thread);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("gate: warning: the environment differs from the stored baseline's: torch 2.0.0 then"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stored baseline ones (Welch; not alternated"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(repo.read("gate.json"), nullptr, false);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["against_stored_baseline"], true);
  EXPECT_EQ(j["verdict"], "regression");
  EXPECT_FALSE(j.contains("why"));  // the stored side cannot be traced again
  // Not a stored baseline: one line, exit 3.
  r = repo.gate("--against train.py");
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("is not a stored gate baseline"), std::string::npos) << r.err;
  EXPECT_EQ(repo.worktrees(), 1);
}

TEST(GateCli, TheEnginesOwnRunWithADebugKnobIsARegressionAndSaysWhere) {
  if (run_cli_shell("", "knobs").code != 0) GTEST_SKIP() << "this build has no engine";
  const auto r = run_cli_shell("cd /tmp &&", "gate --model mnist_cnn --candidate-set anomaly_detection=on --steps 40 --json "
                               "/tmp/tb_gate_engine_" + std::to_string(::getpid()) + ".json", 600);
  std::cout << r.err << r.out;
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("gate: candidate mnist_cnn on synthetic, --set anomaly_detection=on"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gate: regression: the candidate is"), std::string::npos) << r.out;
  // Anomaly mode records a traceback per op: the forward grew most.
  EXPECT_NE(r.out.find("gate: why: grew: forward "), std::string::npos) << r.out;
  fs::remove("/tmp/tb_gate_engine_" + std::to_string(::getpid()) + ".json");
  // Nothing differs: one line, exit 3.
  const auto bad = run_cli_shell("", "gate --model mnist_cnn");
  EXPECT_EQ(bad.code, 3);
  EXPECT_NE(bad.err.find("--baseline-set"), std::string::npos) << bad.err;
}

// The same script with and without a launcher knob (no revision at all): autograd's anomaly detection records a
// traceback per op, a regression; an unknown knob is the launcher's one line and exit 3.
TEST(GateCli, TheSameScriptWithAndWithoutALauncherKnob) {
  Repo repo({{"MLP baseline", train_py(640)}});
  const std::string script = (repo.dir / "train.py").string();
  auto r = run_cli_shell("", "gate --baseline-script " + script + " --candidate-script " + script +
                             " --candidate-set anomaly_detection=on --why off " + kFast + " -- --epochs 100", 600);
  std::cout << r.err << r.out;
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("--set anomaly_detection=on"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("gate: regression: the candidate is"), std::string::npos) << r.out;
  r = run_cli_shell("", "gate --baseline-script " + script + " --candidate-script " + script +
                        " --candidate-set warp_speed=on --why off " + kFast + " -- --epochs 100", 300);
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("warp_speed"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n', r.err.find("tunebench-cli: error:")), r.err.size() - 1) << r.err;
}

TEST(GateCli, ABadRevisionOrOptionIsOneLineAndExitThree) {
  Repo repo({{"MLP baseline", train_py(640)}});
  auto r = repo.gate("--baseline no-such-rev");
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("no revision 'no-such-rev'"), std::string::npos) << r.err;
  r = repo.gate("--baseline c1 --tolerance 2");
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("tolerance"), std::string::npos) << r.err;
  // A script that ends by itself before a process measures anything (2 steps of its own): its arguments, not
  // --steps, would lengthen it, and the line says so.
  r = repo.gate("--baseline c1 --steps 80 --why off -- --epochs 1 --batch-size 4096");
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("the script ended by itself after 2 optimizer steps"), std::string::npos) << r.err;
  r = run_cli_shell("cd /tmp &&", "gate --script /etc/hostname --baseline HEAD");
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("not in a git repository"), std::string::npos) << r.err;
  EXPECT_EQ(repo.worktrees(), 1);
}
