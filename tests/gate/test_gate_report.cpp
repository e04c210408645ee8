// What a CI reads of a gate (gate/report.h), from results made here: one verdict line per case, the same figure
// in the log, Markdown, JUnit XML and JSON, and the exit code.
#include <gtest/gtest.h>

#include "gate/report.h"
#include "gate/stored.h"

using namespace tb;

namespace {
measure::Window win(double throughput) {
  measure::Window w;
  w.steps = 50;
  w.samples = 50 * 32;
  w.wall_s = w.samples / throughput;
  return w;
}

gate::GateOptions options() {
  gate::GateOptions o;
  o.baseline = {"baseline", "/tmp/a/train.py", "1111111 Base <v1> & co"};
  o.candidate = {"candidate", "/tmp/b/train.py", "2222222 Wider"};
  o.max_time_s = 600;
  return o;
}

// A result of `ratios` (candidate/baseline per pair), each process 10 s.
gate::GateResult result(const std::vector<double>& ratios) {
  measure::GateSequence seq;
  gate::GateResult r;
  for (size_t i = 0; i < ratios.size(); ++i) {
    seq.add(win(100), win(100 * ratios[i]));
    r.runs.push_back({"baseline", int(i) + 1, win(100), 10});
    r.runs.push_back({"candidate", int(i) + 1, win(100 * ratios[i]), 10});
  }
  r.look = seq.look();
  r.ran = true;
  r.stopped = "decided at pair " + std::to_string(ratios.size());
  r.baseline_throughput = 100;
  r.candidate_throughput = 100 * ratios.front();
  return r;
}
}  // namespace

TEST(GateReport, ARegressionSaysHowMuchSlowerInEveryFormat) {
  const auto o = options();
  const auto r = result({0.85, 0.86, 0.84});
  EXPECT_EQ(r.exit_code(), 1);
  const std::string line = gate::verdict_line(o, r);
  EXPECT_EQ(line.rfind("regression: the candidate is 15.0% slower, beyond the 3% tolerance (0.850x [", 0), 0u) << line;
  EXPECT_NE(gate::gate_text(o, r).find("gate: " + line), std::string::npos);
  EXPECT_NE(gate::gate_markdown(o, r).find(line), std::string::npos);
  const std::string xml = gate::gate_junit(o, r);
  EXPECT_NE(xml.find("failures=\"1\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure message=\"regression"), std::string::npos) << xml;
  EXPECT_NE(xml.find("Base &lt;v1&gt; &amp; co"), std::string::npos) << xml;  // escaped
  EXPECT_EQ(xml.find("<v1>"), std::string::npos);
  const auto j = gate::gate_json(o, r);
  EXPECT_EQ(j["verdict"], "regression");
  EXPECT_EQ(j["exit_code"], 1);
  EXPECT_EQ(j["line"], line);
  EXPECT_NEAR(j["ratio"].get<double>(), 0.85, 0.01);
  EXPECT_EQ(j["runs"].size(), 6u);
}

TEST(GateReport, NoChangeAndImprovementPass) {
  const auto o = options();
  auto r = result({1.0, 1.001, 0.999, 1.0});
  EXPECT_EQ(r.exit_code(), 0);
  EXPECT_EQ(gate::verdict_line(o, r).rfind("no change: within ±3% (", 0), 0u) << gate::verdict_line(o, r);
  EXPECT_NE(gate::gate_junit(o, r).find("failures=\"0\""), std::string::npos);
  r = result({1.20, 1.21, 1.19});
  EXPECT_EQ(r.exit_code(), 0);
  EXPECT_EQ(gate::verdict_line(o, r).rfind("improvement: the candidate is 20.0% faster", 0), 0u) << gate::verdict_line(o, r);
}

TEST(GateReport, UndecidedSaysWhatMoreTimeWouldDecide) {
  const auto o = options();
  const auto r = result({0.90, 1.08, 0.97, 1.02});
  EXPECT_EQ(r.exit_code(), 2);
  const std::string line = gate::verdict_line(o, r);
  EXPECT_EQ(line.rfind("undecided: too noisy to tell a change of 3%", 0), 0u) << line;
  EXPECT_NE(line.find("more pairs would likely decide"), std::string::npos) << line;
  EXPECT_NE(line.find("--max-time "), std::string::npos) << line;
  EXPECT_NE(gate::gate_junit(o, r).find("<skipped message=\"undecided"), std::string::npos);
}

TEST(GateReport, AMaxTimeTooShortForOnePairSaysWhatWouldDo) {
  auto o = options();
  o.max_time_s = 30;
  gate::GateResult r;
  r.ran = true;
  r.runs.push_back({"baseline", 0, win(100), 25});
  r.runs.push_back({"candidate", 0, win(100), 25});
  const std::string line = gate::verdict_line(o, r);
  EXPECT_EQ(r.exit_code(), 2);
  EXPECT_EQ(line, "undecided: only 0 of the 3 pairs a verdict needs fit in --max-time 30 s (one takes about 50 s): "
                  "give it --max-time 240 or more") << line;
}

TEST(GateReport, CouldNotRunIsAnErrorWithTheScriptsLine) {
  const auto o = options();
  gate::GateResult r;
  r.failure = "candidate (2222222 Wider): NameError: name 'x' is not defined";
  EXPECT_EQ(r.exit_code(), 3);
  EXPECT_EQ(gate::verdict_line(o, r), "could not run: " + r.failure);
  EXPECT_NE(gate::gate_junit(o, r).find("errors=\"1\""), std::string::npos);
  EXPECT_NE(gate::gate_junit(o, r).find("<error message=\"could not run: candidate (2222222 Wider): NameError"),
            std::string::npos);
  EXPECT_EQ(gate::gate_json(o, r)["verdict"], "could not run");
  EXPECT_NE(gate::gate_markdown(o, r).find("could not run"), std::string::npos);
}

// After a change the why's lines go to the log, the Markdown and the JSON (with the traces kept); a result
// without one (no change, undecided, against a stored baseline) has no "why" anywhere.
TEST(GateReport, AWhyIsInEveryFormatOnlyWhenOneWasTried) {
  const auto o = options();
  auto r = result({0.85, 0.86, 0.84});
  EXPECT_EQ(gate::gate_json(o, r).contains("why"), false);
  EXPECT_EQ(gate::gate_text(o, r).find("gate: why"), std::string::npos);
  EXPECT_EQ(gate::gate_markdown(o, r).find("What changed"), std::string::npos);
  r.why.tried = true;
  r.why.lines = {"median step 2.89 ms -> 26.96 ms (baseline -> candidate, one traced process each)",
                 "grew: aten::mm +7.02 ms a step (0.49 ms -> 7.52 ms, 7 -> 7 calls)"};
  r.why.baseline_trace = "t/baseline.json";
  r.why.candidate_trace = "t/candidate.json";
  const std::string text = gate::gate_text(o, r), md = gate::gate_markdown(o, r);
  for (const auto& l : r.why.lines) {
    EXPECT_NE(text.find("gate: why: " + l + "\n"), std::string::npos) << text;
    EXPECT_NE(md.find("- " + l + "\n"), std::string::npos) << md;
  }
  EXPECT_NE(text.find("gate: why: traces t/baseline.json t/candidate.json"), std::string::npos) << text;
  EXPECT_NE(md.find("**What changed**"), std::string::npos) << md;
  // The verdict line stays the log's last.
  EXPECT_EQ(text.rfind("gate: regression: "), text.rfind("\ngate: ") + 1) << text;
  const auto j = gate::gate_json(o, r);
  EXPECT_EQ(j["why"]["lines"], r.why.lines);
  EXPECT_EQ(j["why"]["traces"]["candidate"], "t/candidate.json");
  // A traced pair that could not be diffed says why not, in place of the lines.
  r.why.lines.clear();
  r.why.error = "the baseline's traced process failed";
  EXPECT_NE(gate::gate_text(o, r).find("gate: why: no trace diff: the baseline's traced process failed"),
            std::string::npos);
  EXPECT_NE(gate::gate_markdown(o, r).find("- no trace diff: the baseline's traced process failed"), std::string::npos);
}

// Against a stored baseline the figures are Welch's on processes, not alternated pairs: the log and Markdown say
// so, an undecided line counts candidate processes, and the warnings come before the verdict in every format.
TEST(GateReport, AgainstAStoredBaselineSaysSoWithItsWarnings) {
  auto o = options();
  o.baseline.describe = "1111111 Base (stored 2026-01-01T00:00:00Z in base.json)";
  gate::GateResult r;
  r.ran = true;
  r.against = true;
  r.stored_runs = 10;
  r.look.paired = false;
  r.look.pairs = 4;
  r.look.interval.ratio = 0.95;
  r.look.interval.lo = 0.85;
  r.look.interval.hi = 1.06;
  r.look.interval.confidence = 0.995;
  r.look.pairs_to_decide = 9;
  r.stopped = "--max-time 600 s spent (a process takes about 10 s)";
  for (int i = 1; i <= 4; ++i) r.runs.push_back({"candidate", i, win(95), 10});
  r.baseline_throughput = 100;
  r.candidate_throughput = 95;
  r.warnings = {"the environment differs from the stored baseline's: torch 2.0.0 then, 2.11.0 now"};
  EXPECT_EQ(r.exit_code(), 2);
  const std::string line = gate::verdict_line(o, r);
  EXPECT_NE(line.find("about 5 more candidate processes would likely decide"), std::string::npos) << line;
  const std::string text = gate::gate_text(o, r);
  EXPECT_NE(text.find("gate: 4 fresh candidate processes against 10 stored baseline ones (Welch; not alternated"),
            std::string::npos) << text;
  const size_t warning = text.find("gate: warning: the environment differs from the stored baseline's: torch 2.0.0");
  ASSERT_NE(warning, std::string::npos) << text;
  EXPECT_LT(warning, text.find("gate: undecided: "));
  EXPECT_NE(gate::gate_markdown(o, r).find("> warning: the environment differs"), std::string::npos);
  const auto j = gate::gate_json(o, r);
  EXPECT_EQ(j["against_stored_baseline"], true);
  EXPECT_EQ(j["warnings"], r.warnings);
  EXPECT_FALSE(j.contains("why"));
  EXPECT_EQ(j["exit_code"], 2);
}

// A stored baseline warns of every difference that moves a throughput: torch, Python, the CUDA torch was built
// with, the NVIDIA driver, the device, the cores, a load a core apart; what one side does not know is not a
// difference.
TEST(GateStored, TheEnvironmentsDifferencesAreEachALine) {
  gate::GateResult then_run;
  then_run.hello = {{"versions", {{"torch", "2.11.0"}, {"python", "3.11.2"}, {"cuda", "13.0"}}},
                    {"device", {{"kind", "cuda"}, {"name", "NVIDIA H100 80GB HBM3"}, {"cores", 16}, {"driver", "580.159.04"}}}};
  then_run.load.loadavg_1min = 0.5;
  gate::GateResult now_run = then_run;
  const auto then_env = gate::environment_of(then_run);
  EXPECT_EQ(then_env.at("driver"), "580.159.04");
  EXPECT_EQ(then_env.at("cuda"), "13.0");
  EXPECT_TRUE(gate::environment_differences(then_env, gate::environment_of(now_run)).empty());
  now_run.hello["device"]["driver"] = "590.10.01";
  now_run.hello["versions"]["cuda"] = "12.8";
  now_run.hello["device"]["name"] = "NVIDIA H200";
  now_run.load.loadavg_1min = 2.5;
  const auto diff = gate::environment_differences(then_env, gate::environment_of(now_run));
  const std::vector<std::string> want = {"cuda 13.0 then, 12.8 now", "driver 580.159.04 then, 590.10.01 now",
                                         "device cuda: NVIDIA H100 80GB HBM3 then, cuda: NVIDIA H200 now",
                                         "load 0.5 then, 2.5 now"};
  EXPECT_EQ(diff, want);
  // A baseline stored before the driver was recorded: no warning about what it does not say.
  nlohmann::json old_env = then_env;
  old_env.erase("driver");
  EXPECT_TRUE(gate::environment_differences(old_env, gate::environment_of(then_run)).empty());
}
