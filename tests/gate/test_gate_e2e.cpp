// E2eGate: `tunebench-cli gate` end to end on a training script as people write them (an MLP on a DataLoader,
// AdamW, a cosine schedule, gradient clipping, argparse), its history in git repositories made at test time: the
// MLP at two widths, and on a side branch a revision with a typo, one that hangs in its loop and one that loads
// its data for minutes before its first step. SetUpTestSuite runs every gate once, side by side (each in its own
// copy of the repository, as each CI job has its own checkout, with its own TMPDIR for the worktrees): the two
// widths alternated (the working tree as the candidate; JSON, JUnit, Markdown and the traced why), a stored
// baseline saved and compared against, the typo, the hang, two cancels by SIGTERM, a launcher knob known and
// unknown, and the engine's own run. Each case reads what they left.
//
// What holds on any machine, busy or quiet: the exit code and the verdict agree in every output, the pairs
// alternate, a why is there exactly when a change was found, a stored baseline's environment warning and its
// lack of a why, the one-line errors of a script that fails, hangs or is cancelled, and nothing left behind.
// Whether the wider model is found a regression (the gate's power), whether a comment or the same script is
// never one (its false alarms) and how long a decision takes are measurements of this machine:
// bench/bench_gate_cli.py runs the real gate for them, bench/bench_gate_power.cpp simulates its rule.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/xml.h"
#include "gate_repo.h"
#include "gate_scripts.h"

namespace {

namespace fs = std::filesystem;
using tb::test_util::CliOut;
using tb::test_util::GateRepo;
using tb::test_util::run_cli_shell;
using tb::test_util::train_py;

// The script's own arguments for every gate: batches of 32 keep a process to its start-up (Python, torch) and a
// second of steps. 40 steps a process: the warm-up rule (measure/warmup.h) ends by step 30 at the latest, so a
// process always measures some.
const char* kSteps = "--steps 40";
const char* kScriptArgs = "-- --epochs 100 --batch-size 32";

std::string read_file(const fs::path& p) {
  std::ifstream f(p);
  return {std::istreambuf_iterator<char>(f), {}};
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// The exit code docs/ci.md's table gives a verdict.
int exit_code_of(const std::string& verdict) {
  if (verdict == "no change" || verdict == "improvement") return 0;
  if (verdict == "regression") return 1;
  if (verdict == "undecided") return 2;
  if (verdict == "could not run") return 3;
  return -1;
}

// One gate's run and what it wrote.
struct GateRun {
  CliOut r;
  nlohmann::json j;  // --json, else null
  std::string xml, md;
  // The stdout and stderr, for a failure's message.
  std::string log() const { return "--- stdout\n" + r.out + "--- stderr\n" + r.err; }
};

GateRun gate_in(const GateRepo& repo, const std::string& args, int timeout_s, const std::string& env,
                const std::string& wrap = "") {
  GateRun g;
  g.r = repo.gate(args, timeout_s, env, wrap);
  g.j = nlohmann::json::parse(repo.read("gate.json"), nullptr, false);
  if (g.j.is_discarded()) g.j = nullptr;
  g.xml = repo.read("gate.xml");
  g.md = repo.read("gate.md");
  return g;
}

// Whether the process of `pid_text` (the script wrote it: the launcher's own process) has ended; a zombie has.
bool ended(const std::string& pid_text) {
  const std::string stat = read_file("/proc/" + std::to_string(std::stoi(pid_text)) + "/stat");
  if (stat.empty()) return true;
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

class E2eGate : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / ("tb_e2e_gate_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    tmp_ = root_ / "tmp";
    fs::create_directories(tmp_);
    const std::string env = "TMPDIR='" + tmp_.string() + "'";

    // The history: c1 and c2 on main (the working tree is c2, clean), the broken revisions on a side branch.
    GateRepo made(root_ / "template");
    const std::string pid = "open(\"script.pid\", \"w\").write(str(os.getpid()))";
    made_ = made.commit(train_py(256), "MLP baseline", "c1") &&
            made.sh("git checkout -q -b debug") &&
            made.commit(typo(), "Typo", "typo") &&
            made.commit(train_py(256, "import os\nimport time",
                                 "            if step == 3:\n"
                                 "                " + pid + "\n"
                                 "                time.sleep(3600)\n"),
                        "Debug pause", "hang") &&
            made.commit(train_py(256, "import os\nimport time\n" + pid + "\ntime.sleep(600)  # loading a dataset"),
                        "Load the dataset first", "slow") &&
            made.sh("git checkout -q main") &&
            made.commit(train_py(1024), "Wider hidden layers", "c2");
    if (!made_) return;
    for (auto [repo, name] : {std::pair{&main_, "main"}, {&stored_, "stored"}, {&typo_, "typo"}, {&hang_, "hang"},
                              {&cancel_steps_, "cancel_steps"}, {&cancel_first_, "cancel_first"}})
      *repo = std::make_unique<GateRepo>(made, root_ / name);
    std::ofstream(root_ / "small.py") << train_py(64);  // for the two-file gates

    const std::string steps = std::string(kSteps) + " ", args = std::string(" ") + kScriptArgs;
    const std::string in_root = "cd '" + root_.string() + "' && " + env;
    // Three streams of gates side by side (two cores, and the cancels mostly wait): the gate of the two widths;
    // the stored baseline; the failures one after the other. Each gate is guarded (300 s; a cancel 90 s).
    std::vector<std::future<void>> all;
    auto start = [&](auto f) { all.push_back(std::async(std::launch::async, f)); };
    // The two widths alternated, no warm-up pair: 40 s hold 3 pairs (the least a verdict needs) beside the other
    // streams on a quiet machine; a busy one gets fewer, and says so.
    start([=] {
      main_run_ = gate_in(*main_, "--baseline c1 " + steps + "--warmup-pairs 0 --max-time 40 --json gate.json "
                                  "--junit gate.xml --markdown gate.md --traces traces" + args, 300, env);
    });
    // A stored baseline of c1, and c2 against it (25 s: 3 candidate processes beside the other streams).
    start([=] {
      save_ = gate_in(*stored_, "--baseline c1 --save-baseline base.json --runs 3 --warmup-pairs 0 " + steps + args,
                      300, env);
      stored_json_ = nlohmann::json::parse(stored_->read("base.json"), nullptr, false);
      if (!stored_json_.is_object()) return;
      // As if made with another torch, and on a quiet machine: its processes (which ran beside the other gates
      // here) made alike, their median ±1%, so that the comparison rests on the candidate's processes: a change
      // this large is then decided at the first look (3 processes), and a why would show there.
      nlohmann::json edited = stored_json_;
      edited["environment"]["torch"] = "2.0.0";
      std::vector<double> rates;
      for (const auto& r : edited["runs"]) rates.push_back(r.value("samples", 0.0) / r.value("wall_s", 1.0));
      std::sort(rates.begin(), rates.end());
      for (size_t i = 0; i < edited["runs"].size(); ++i) {
        auto& r = edited["runs"][i];
        r["wall_s"] = r.value("samples", 0.0) / (rates[rates.size() / 2] * (1 + 0.01 * (double(i) - 1)));
      }
      std::ofstream(stored_->dir / "base.json") << edited.dump(2);
      against_ = gate_in(*stored_, "--against base.json --candidate c2 --warmup-pairs 0 --max-time 25 " + steps +
                                       "--json gate.json --markdown gate.md" + args, 300, env);
    });
    start([=] {
      // The typo at the baseline, which the warm-up pair runs first; the hang likewise.
      typo_run_ = gate_in(*typo_, "--baseline typo --candidate c1 " + steps + "--json gate.json --junit gate.xml "
                                  "--markdown gate.md" + args, 300, env);
      hang_run_ = gate_in(*hang_, "--baseline hang --candidate c1 --step-timeout 2 " + steps + args, 300, env);
      // Two files, a launcher knob on the baseline: a known one (the script then ends by itself after its 2 steps
      // of 4096, before it measures anything), an unknown one.
      knob_ = run_cli_shell(in_root, "gate --baseline-script small.py --candidate-script small.py --baseline-set "
                                     "anomaly_detection=on " + steps + "-- --epochs 1 --batch-size 4096", 300);
      unknown_knob_ = run_cli_shell(in_root, "gate --baseline-script small.py --candidate-script small.py "
                                             "--baseline-set warp_speed=on " + steps + args, 300);
      // The engine's own run with a debug knob: one pair (--max-time 1 starts no second); 8 steps, as `run`
      // leaves at most half of them to the warm-up.
      engine_present_ = fs::exists(fs::path(TB_CLI_PATH).parent_path() / "tunebench-engine");
      if (!engine_present_) return;
      engine_.r = run_cli_shell(in_root, "gate --model mnist_cnn --candidate-set anomaly_detection=on --steps 8 "
                                         "--warmup-pairs 0 --max-time 1 --json engine.json", 300);
      engine_.j = nlohmann::json::parse(read_file(root_ / "engine.json"), nullptr, false);
    });
    // A CI cancelling the job sends SIGTERM: once the script is in its loop (the hang, with the default step
    // timeout of 300 s), once before its first step (the slow load). The guard would end a gate that waits.
    start([=] {
      cancel_steps_run_ = gate_in(*cancel_steps_, "--baseline hang --candidate c1 " + steps + args, 90,
                                  env, "timeout --preserve-status -s TERM 8");
    });
    start([=] {
      cancel_first_run_ = gate_in(*cancel_first_, "--baseline slow --candidate c1 " + steps + args, 90,
                                  env, "timeout --preserve-status -s TERM 4");
    });
    for (auto& f : all) f.wait();
  }

  static void TearDownTestSuite() {
    // A script a failed case left running is ended here, not left to the machine.
    for (auto* r : {&hang_, &cancel_steps_, &cancel_first_}) {
      const std::string pid = *r ? (*r)->read("script.pid") : "";
      if (!pid.empty() && !ended(pid)) ::kill(std::stoi(pid), SIGKILL);
    }
    fs::remove_all(root_);
  }

  static std::string typo() {
    std::string s = train_py(256);
    s.replace(s.find("loss.backward()"), 15, "loss.backwards()");
    return s;
  }

  // The verdict of `g` the same in its exit code, its JSON, its log's last line and, when written, its Markdown
  // and JUnit XML.
  static void expect_one_verdict(const GateRun& g) {
    ASSERT_TRUE(g.j.is_object()) << g.log();
    const std::string verdict = g.j["verdict"], line = g.j["line"];
    EXPECT_EQ(g.r.code, exit_code_of(verdict)) << verdict << "\n" << g.log();
    EXPECT_EQ(g.j["exit_code"].get<int>(), g.r.code);
    const auto out = lines_of(g.r.out);
    ASSERT_FALSE(out.empty()) << g.log();
    EXPECT_EQ(out.back(), "gate: " + line) << g.log();
    if (!g.md.empty()) {
      EXPECT_NE(g.md.find(" TuneBench gate: " + verdict + "\n"), std::string::npos) << g.md;
      EXPECT_NE(g.md.find("\n" + line + "\n"), std::string::npos) << g.md;
    }
    if (!g.xml.empty()) {
      auto count = [&](const char* name, bool one) { return std::string(name) + "=\"" + (one ? "1" : "0") + "\""; };
      EXPECT_NE(g.xml.find(count("failures", verdict == "regression")), std::string::npos) << g.xml;
      EXPECT_NE(g.xml.find(count("skipped", verdict == "undecided")), std::string::npos) << g.xml;
      EXPECT_NE(g.xml.find(count("errors", verdict == "could not run")), std::string::npos) << g.xml;
      const char* element = verdict == "regression" ? "failure" : verdict == "undecided" ? "skipped"
                            : verdict == "could not run" ? "error" : nullptr;
      // The attribute holds the line as XML text (base/xml.h: an apostrophe of a Python error is &#39;).
      if (element)
        EXPECT_NE(g.xml.find("<" + std::string(element) + " message=\"" + tb::xml_escape(line)), std::string::npos)
            << g.xml;
    }
  }

  static fs::path root_, tmp_;
  static bool made_, engine_present_;
  static std::unique_ptr<GateRepo> main_, stored_, typo_, hang_, cancel_steps_, cancel_first_;
  static GateRun main_run_, save_, against_, typo_run_, hang_run_, cancel_steps_run_, cancel_first_run_, engine_;
  static nlohmann::json stored_json_;
  static CliOut knob_, unknown_knob_;
};
fs::path E2eGate::root_, E2eGate::tmp_;
bool E2eGate::made_ = false, E2eGate::engine_present_ = false;
std::unique_ptr<GateRepo> E2eGate::main_, E2eGate::stored_, E2eGate::typo_, E2eGate::hang_, E2eGate::cancel_steps_,
    E2eGate::cancel_first_;
GateRun E2eGate::main_run_, E2eGate::save_, E2eGate::against_, E2eGate::typo_run_, E2eGate::hang_run_,
    E2eGate::cancel_steps_run_, E2eGate::cancel_first_run_, E2eGate::engine_;
nlohmann::json E2eGate::stored_json_;
CliOut E2eGate::knob_, E2eGate::unknown_knob_;

TEST_F(E2eGate, TheTwoRevisionsGetOneVerdictInTheExitCodeJsonMarkdownAndJunit) {
  ASSERT_TRUE(made_);
  const auto& g = main_run_;
  std::cout << g.log();  // the gate's own log, in CTest's
  EXPECT_NE(g.r.code, 3) << g.log();
  expect_one_verdict(g);
  ASSERT_TRUE(g.j.is_object());
  EXPECT_FALSE(g.md.empty());
  EXPECT_FALSE(g.xml.empty());
  // Which revisions, the same in the log, the JSON and the Markdown: the baseline's tag, the working tree by default.
  const std::string base = g.j["baseline"]["describe"], cand = g.j["candidate"]["describe"];
  EXPECT_NE(base.find(" MLP baseline (c1)"), std::string::npos) << base;
  EXPECT_EQ(cand.rfind("the working tree (", 0), 0u) << cand;
  EXPECT_NE(cand.find(" Wider hidden layers)"), std::string::npos) << cand;
  EXPECT_NE(g.r.out.find("gate: baseline  " + base + "\n"), std::string::npos) << g.log();
  EXPECT_NE(g.r.out.find("gate: candidate " + cand + "\n"), std::string::npos) << g.log();
  EXPECT_NE(g.md.find("| candidate | " + cand + " | "), std::string::npos) << g.md;
  EXPECT_NE(g.xml.find("throughput of " + cand + " against " + base), std::string::npos) << g.xml;
  EXPECT_EQ(g.j["steps_per_process"], 40);
  EXPECT_EQ(g.j["args"], nlohmann::json({"--epochs", "100", "--batch-size", "32"}));
  EXPECT_EQ(g.j["against_stored_baseline"], false);
}

TEST_F(E2eGate, ItsPairsAlternateInFreshProcessesEachCountedOnce) {
  ASSERT_TRUE(main_run_.j.is_object()) << main_run_.log();
  const auto& j = main_run_.j;
  const auto& runs = j["runs"];
  const int pairs = j["pairs"];
  ASSERT_GE(pairs, 1) << main_run_.log();
  ASSERT_EQ(runs.size(), size_t(2 * pairs)) << j.dump(1);
  // AB BA AB ...: pair k runs the baseline first when k is odd; each process ran its 40 steps, the warm-up's
  // among them, and measured some.
  for (int k = 1; k <= pairs; ++k) {
    const auto& first = runs[size_t(2 * (k - 1))];
    const auto& second = runs[size_t(2 * k - 1)];
    EXPECT_EQ(first["pair"], k);
    EXPECT_EQ(second["pair"], k);
    EXPECT_EQ(first["side"], k % 2 == 1 ? "baseline" : "candidate") << j.dump(1);
    EXPECT_EQ(second["side"], k % 2 == 1 ? "candidate" : "baseline") << j.dump(1);
    for (const auto* p : {&first, &second}) {
      EXPECT_GE((*p)["steps"].get<int>(), 3) << p->dump();
      EXPECT_EQ((*p)["steps"].get<int>() + (*p)["warmup_steps"].get<int>(), 40) << p->dump();
      EXPECT_GT((*p)["throughput"].get<double>(), 0) << p->dump();
    }
  }
  // A progress line per process on stderr, and the count in the log's summary.
  int progress = 0;
  for (const auto& l : lines_of(main_run_.r.err)) progress += l.rfind("gate: pair ", 0) == 0;
  EXPECT_EQ(progress, 2 * pairs) << main_run_.r.err;
  EXPECT_NE(main_run_.r.out.find("gate: " + std::to_string(pairs) + " alternated pairs of fresh processes"),
            std::string::npos) << main_run_.log();
  if (pairs >= 3) EXPECT_NE(main_run_.r.err.find("gate: look at 3 pairs: "), std::string::npos) << main_run_.r.err;
}

// After a regression or an improvement, one more process of each side with every step traced, and what changed;
// after no change or an undecided gate, none. Which of the two came is this machine's (bench/bench_gate_cli.py).
TEST_F(E2eGate, AChangeFoundSaysWhyFromATracedProcessOfEachSideAndNoChangeHasNone) {
  ASSERT_TRUE(made_);
  ASSERT_TRUE(main_run_.j.is_object()) << main_run_.log();
  const auto& j = main_run_.j;
  const std::string verdict = j["verdict"];
  const fs::path traces = main_->dir / "traces";
  if (verdict != "regression" && verdict != "improvement") {
    std::cout << "no why to check: the gate ended " << verdict << "\n";
    EXPECT_FALSE(j.contains("why")) << j.dump(1);
    EXPECT_EQ(main_run_.md.find("**What changed**"), std::string::npos) << main_run_.md;
    EXPECT_EQ(main_run_.r.out.find("gate: why: "), std::string::npos) << main_run_.log();
    EXPECT_FALSE(fs::exists(traces / "candidate.json"));
    return;
  }
  ASSERT_TRUE(j.contains("why")) << j.dump(1);
  const auto& why = j["why"];
  EXPECT_EQ(why["error"], "") << why.dump(1);
  ASSERT_GE(why["lines"].size(), 2u) << why.dump(1);
  EXPECT_EQ(why["lines"][0].get<std::string>().rfind("median step ", 0), 0u) << why.dump(1);
  EXPECT_EQ(why["lines"][1].get<std::string>().rfind("memory peak (host RSS): ", 0), 0u) << why.dump(1);
  // What grew: the wider layers' matrix products; or, when one process a side was too noisy to show the change,
  // the note that says so, never a why unqualified.
  bool grew_mm = false, said_noisy = false;
  for (const auto& l : why["lines"]) {
    const std::string s = l;
    grew_mm |= s.rfind("grew: ", 0) == 0 &&
               (s.find("mm") != std::string::npos || s.find("linear") != std::string::npos);
    said_noisy |= s.rfind("note: the traced processes", 0) == 0;
  }
  EXPECT_TRUE(grew_mm || said_noisy) << why.dump(1);
  // The same lines in the log and the Markdown, and the traces kept where --traces said.
  for (const auto& l : why["lines"]) {
    EXPECT_NE(main_run_.r.out.find("gate: why: " + l.get<std::string>() + "\n"), std::string::npos) << main_run_.log();
    EXPECT_NE(main_run_.md.find("- " + l.get<std::string>() + "\n"), std::string::npos) << main_run_.md;
  }
  EXPECT_NE(main_run_.md.find("**What changed**"), std::string::npos) << main_run_.md;
  EXPECT_TRUE(fs::exists(traces / "baseline.json"));
  EXPECT_TRUE(fs::exists(traces / "candidate.json"));
  EXPECT_EQ(fs::path(why["traces"]["candidate"].get<std::string>()).filename(), "candidate.json")
      << why["traces"].dump();
}

TEST_F(E2eGate, AStoredBaselineIsComparedNotAlternatedWithAWarningAndNoWhy) {
  ASSERT_EQ(save_.r.code, 0) << save_.log();
  EXPECT_NE(save_.r.out.find("gate: stored "), std::string::npos) << save_.log();
  EXPECT_NE(save_.r.out.find(" MLP baseline (c1): "), std::string::npos) << save_.log();
  EXPECT_NE(save_.r.out.find(" over 3 processes in base.json"), std::string::npos) << save_.log();
  ASSERT_TRUE(stored_json_.is_object()) << save_.log();
  EXPECT_EQ(stored_json_["tunebench_gate_baseline"], 1);
  EXPECT_EQ(stored_json_["runs"].size(), 3u) << stored_json_.dump(1);
  EXPECT_EQ(stored_json_["steps"], 40);
  const std::string torch_then = stored_json_["environment"].value("torch", "");
  EXPECT_FALSE(torch_then.empty()) << stored_json_.dump(1);

  const auto& g = against_;
  std::cout << g.log();
  EXPECT_NE(g.r.code, 3) << g.log();
  expect_one_verdict(g);
  ASSERT_TRUE(g.j.is_object());
  EXPECT_EQ(g.j["against_stored_baseline"], true);
  const std::string base = g.j["baseline"]["describe"];
  EXPECT_NE(base.find(" MLP baseline (c1) (stored "), std::string::npos) << base;
  EXPECT_NE(base.find(" in base.json)"), std::string::npos) << base;
  // The stored one "made with torch 2.0.0": the verdict stands, a warning says so in the log, the JSON and the
  // Markdown.
  const std::string warning =
      "the environment differs from the stored baseline's: torch 2.0.0 then, " + torch_then + " now";
  EXPECT_NE(g.r.out.find("gate: warning: " + warning + "\n"), std::string::npos) << g.log();
  EXPECT_NE(g.md.find("> warning: " + warning + "\n"), std::string::npos) << g.md;
  bool in_json = false;
  for (const auto& w : g.j["warnings"]) in_json |= w == warning;
  EXPECT_TRUE(in_json) << g.j["warnings"].dump();
  if (g.j["pairs"].get<int>() > 0)
    EXPECT_NE(g.r.out.find(" fresh candidate processes against 3 stored baseline ones (Welch; not alternated"),
              std::string::npos) << g.log();
  // Only the candidate ran, and no process was traced: the stored side cannot be again.
  for (const auto& p : g.j["runs"]) EXPECT_EQ(p["side"], "candidate") << p.dump();
  EXPECT_FALSE(g.j.contains("why")) << g.j.dump(1);
  EXPECT_EQ(g.r.err.find("gate: why"), std::string::npos) << g.log();
}

TEST_F(E2eGate, AScriptThatFailsAtOneRevisionExitsThreeWithItsOwnLineInEveryOutput) {
  const auto& g = typo_run_;
  EXPECT_EQ(g.r.code, 3) << g.log();
  // The last line of stderr, one line: which side, which revision, the script's own error.
  const auto err = lines_of(g.r.err);
  ASSERT_FALSE(err.empty()) << g.log();
  EXPECT_EQ(err.back().rfind("tunebench-cli: error: baseline (", 0), 0u) << g.log();
  EXPECT_NE(err.back().find(" Typo (typo)): "), std::string::npos) << g.log();
  EXPECT_NE(err.back().find("AttributeError"), std::string::npos) << g.log();
  expect_one_verdict(g);
  ASSERT_TRUE(g.j.is_object());
  EXPECT_EQ(g.j["verdict"], "could not run");
  EXPECT_EQ("tunebench-cli: error: " + g.j["failure"].get<std::string>(), err.back());
  EXPECT_NE(g.xml.find("<error message=\"could not run: baseline ("), std::string::npos) << g.xml;
}

TEST_F(E2eGate, AScriptThatHangsExitsThreeAfterTheStepTimeoutAndIsEnded) {
  ASSERT_TRUE(made_);
  const auto& g = hang_run_;
  EXPECT_EQ(g.r.code, 3) << g.log();
  EXPECT_NE(g.r.err.find("tunebench-cli: error: baseline ("), std::string::npos) << g.log();
  EXPECT_NE(g.r.err.find(" Debug pause (hang)): no training step for 2 s: the script hangs"), std::string::npos)
      << g.log();
  const std::string pid = hang_->read("script.pid");
  ASSERT_FALSE(pid.empty()) << "the script never reached its pause";
  EXPECT_TRUE(ended(pid)) << "the hung script " << pid << " is still running";
}

// The CI's SIGTERM ends the gate at the script's next step, or while it has not made its first one (the gate does
// not wait for it: the guard would end the gate with 124), exits 3 and ends the script.
TEST_F(E2eGate, ACancelledGateExitsThreeAndEndsItsScriptInItsLoopOrBeforeItsFirstStep) {
  ASSERT_TRUE(made_);
  for (const auto* g : {&cancel_steps_run_, &cancel_first_run_}) {
    EXPECT_EQ(g->r.code, 3) << g->log();
    EXPECT_NE(g->r.err.find("tunebench-cli: error: baseline ("), std::string::npos) << g->log();
    EXPECT_NE(g->r.err.find("cancelled (a signal asked "), std::string::npos) << g->log();
  }
  for (const auto* repo : {&cancel_steps_, &cancel_first_}) {
    const std::string pid = (*repo)->read("script.pid");  // none when the signal came before the script began
    if (!pid.empty()) EXPECT_TRUE(ended(pid)) << "the cancelled script " << pid << " is still running";
  }
}

// With two files, --baseline-set is the launcher's knob on that side: a known one reaches the script (which then
// ends by itself before it measures anything: its own arguments, not --steps, would lengthen it, and the line
// says so); an unknown one is the launcher's one line.
TEST_F(E2eGate, ALauncherKnobReachesTheScriptAndAnUnknownOneIsOneLine) {
  EXPECT_EQ(knob_.code, 3) << knob_.out << knob_.err;
  EXPECT_NE(knob_.err.find("baseline (small.py, --set anomaly_detection=on): the script ended by itself after 2 "
                           "optimizer steps"), std::string::npos) << knob_.err;
  EXPECT_EQ(unknown_knob_.code, 3) << unknown_knob_.out << unknown_knob_.err;
  const auto err = lines_of(unknown_knob_.err);
  ASSERT_FALSE(err.empty());
  EXPECT_EQ(err.back().rfind("tunebench-cli: error: baseline (small.py, --set warp_speed=on): unknown knob "
                             "'warp_speed'", 0), 0u) << unknown_knob_.err;
  int errors = 0;
  for (const auto& l : err) errors += l.find("error") != std::string::npos;
  EXPECT_EQ(errors, 1) << unknown_knob_.err;
}

TEST_F(E2eGate, TheEnginesOwnRunIsGatedWithTheSameOutputs) {
  if (!engine_present_) GTEST_SKIP() << "this build has no engine";
  const auto& g = engine_;
  std::cout << g.log();
  EXPECT_NE(g.r.out.find("gate: baseline  mnist_cnn on synthetic (defaults)\n"), std::string::npos) << g.log();
  EXPECT_NE(g.r.out.find("gate: candidate mnist_cnn on synthetic, --set anomaly_detection=on\n"), std::string::npos)
      << g.log();
  EXPECT_NE(g.r.code, 3) << g.log();
  expect_one_verdict(g);
  ASSERT_TRUE(g.j.is_object());
  EXPECT_EQ(g.j["pairs"], 1) << "--max-time 1 starts no second pair";
  ASSERT_EQ(g.j["runs"].size(), 2u) << g.j.dump(1);
  EXPECT_EQ(g.j["runs"][0]["side"], "baseline");
  EXPECT_EQ(g.j["runs"][1]["side"], "candidate");
}

// Every gate above, whatever its end (a verdict, a failure, a hang, a cancel), removed its worktrees and their
// temporary folders.
TEST_F(E2eGate, NoWorktreeOrTemporaryCheckoutIsLeftBehind) {
  ASSERT_TRUE(made_);
  for (const auto* repo : {&main_, &stored_, &typo_, &hang_, &cancel_steps_, &cancel_first_})
    EXPECT_EQ((*repo)->worktrees(), 1) << (*repo)->dir << ": a worktree was left behind";
  for (const auto& e : fs::directory_iterator(tmp_))
    EXPECT_NE(e.path().filename().string().rfind("tunebench-gate-", 0), 0u) << e.path() << " was left behind";
}

}  // namespace
