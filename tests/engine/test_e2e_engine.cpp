// E2eEngine: the engine's own training tuned for real, end to end, the two ways a user starts it: the README's
// headless demo (`tune` of mnist_cnn on a generated folder of 640x480 JPEGs, naive defaults, a JSON document and
// an HTML report) and the GUI's Auto-tune (a `tune` message to a live `serve`, answered with progress, tune_done
// and a report, the run going on after it). Both run once, in SetUpTestSuite; each case reads what they left.
//
// What holds on any machine, busy or quiet: the commands end well, the documents have their fields, the figures
// agree with each other (one verdict everywhere: the JSON, the terminal's lines, the summary), every knob not
// measured says why, the phases add up to the time the tune says it used. Whether the tune ends "faster", which
// knob it measures first and whether it keeps its budget to 10% are measurements of this machine: bench/ holds
// them (bench/bench_demo_tune.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "serve_child.h"

namespace {

namespace fs = std::filesystem;
using tb::test_util::CliOut;

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  return {std::istreambuf_iterator<char>(f), {}};
}

class E2eEngine : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = (fs::temp_directory_path() / ("tb_e2e_engine_" + std::to_string(::getpid()))).string();
    fs::create_directories(dir_);
    // The demo's workload on smaller images: a step of the demo's 640x480 took 0.49 s on a busy 2-core machine,
    // where 25 s then held no trial (the tune said so, and rightly: it is no test of the tune's path).
    made_ = tb::test_util::run_cli_shell(
        "", "make-dataset --out " + dir_ + "/images --images 96 --size 160x120 --classes 10", 120);
    if (made_.code != 0) return;
    // 25 s: the noise floor and at least one knob on a quiet machine. On a busy one the smallest tune may not
    // fit (a step of 0.098 s beside another test: "holds no trial ... rerun with --budget 40"); the tune says so
    // at once, and the test, as a user would, takes that advice, with half again on top: the step it priced is
    // that of a machine whose load changes (beside two end-to-end tests a step went from 0.15 to 0.18 s between
    // the advice and the rerun, and the advised 30 s again held no trial). One intra-op thread (pinned, so the
    // tuner leaves it alone): a tune measures for all of its budget, and with the wheel's default of one thread a
    // core it took both cores from the test beside it for that long.
    for (int budget = 25, tries = 0; tries < 3; ++tries) {
      budget_ = budget;
      tune_ = tb::test_util::run_cli_shell("", "tune --model mnist_cnn --data imagefolder:" + dir_ +
                                                   "/images --set intra_op_threads=1 --budget " +
                                                   std::to_string(budget) + " --json " + dir_ + "/tune.json --report " +
                                                   dir_ + "/report.html --quiet",
                                           240);
      std::smatch m;
      static const std::regex advice("holds no trial.*rerun with --budget ([0-9]+) or more");
      if (!std::regex_search(tune_.out, m, advice) || std::stoi(m[1]) > 90) break;
      budget = std::max(budget + 5, std::stoi(m[1]) * 3 / 2);
    }
    tune_json_ = nlohmann::json::parse(read_file(dir_ + "/tune.json"), nullptr, false);
    serve_tune();
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  // The GUI's Auto-tune: a live run asked to tune itself, then stopped one step after the tune is done.
  static void serve_tune() {
    tb::test_util::ServeChild c({"--model", "mnist_cnn", "--data", "synthetic", "--set", "batch_size=4,intra_op_threads=1",
                                 "--warmup", "1", "--drift-steps", "0"});
    int steps_after = 0;
    serve_ended_ = c.until(
        [&](const nlohmann::json& m) {
          serve_messages_.push_back(m);
          const std::string type = m.value("type", "");
          if (type == "started") c.send({{"type", "tune"}, {"budget_s", 12}});
          if (type == "step" && !tune_done().is_null() && ++steps_after == 1) c.send({{"type", "stop"}});
          return type == "done";
        },
        180);
    serve_exit_ = c.wait_exit();
    serve_err_ = c.err_text;
  }
  static nlohmann::json tune_done() {
    for (const auto& m : serve_messages_)
      if (m.value("type", "") == "tune_done") return m;
    return nullptr;
  }

  static std::string dir_, serve_err_;
  static CliOut made_, tune_;
  static int budget_;  // the tune's budget: 25 s, or more where a busy machine's tune said the smallest tune needs more
  static nlohmann::json tune_json_;
  static std::vector<nlohmann::json> serve_messages_;
  static bool serve_ended_;
  static int serve_exit_;
};
std::string E2eEngine::dir_, E2eEngine::serve_err_;
CliOut E2eEngine::made_, E2eEngine::tune_;
int E2eEngine::budget_ = 25;
nlohmann::json E2eEngine::tune_json_;
std::vector<nlohmann::json> E2eEngine::serve_messages_;
bool E2eEngine::serve_ended_ = false;
int E2eEngine::serve_exit_ = -1;

TEST_F(E2eEngine, TheDemoTuneEndsWellAndWritesItsDocumentAndReport) {
  ASSERT_EQ(made_.code, 0) << made_.err;
  ASSERT_EQ(tune_.code, 0) << tune_.err << tune_.out;
  ASSERT_TRUE(tune_json_.is_object()) << tune_.out;
  EXPECT_EQ(tune_json_["format"], "tunebench-tune");
  EXPECT_EQ(tune_json_["budget_s"].get<double>(), double(budget_));
  EXPECT_FALSE(tune_json_["ended"].get<std::string>().empty());
  ASSERT_GE(tune_json_["trials"].size(), 1u) << tune_.out;
  EXPECT_EQ(tune_json_["trials"][0]["phase"], "noise floor");
  EXPECT_TRUE(tune_json_["noise"].contains("verdict"));
  const std::string html = read_file(dir_ + "/report.html");
  EXPECT_NE(html.find("<h1>Tuning report: "), std::string::npos);
  EXPECT_NE(html.find("How far to trust these numbers"), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);
}

TEST_F(E2eEngine, EveryKnobNotMeasuredSaysWhy) {
  ASSERT_TRUE(tune_json_.is_object());
  ASSERT_FALSE(tune_json_["skipped"].empty()) << budget_ << " s leave knobs untried";
  for (const auto& s : tune_json_["skipped"]) EXPECT_FALSE(s.value("reason", std::string()).empty()) << s.dump();
  // Each skipped knob is also said in the document's end line or listed by name: never dropped silently.
  for (const auto& t : tune_json_["trials"])
    if (t.value("knob", std::string()) != "")
      for (const auto& s : tune_json_["skipped"])
        if (s["knob"] == t["knob"] && s.value("value", "") == t.value("value", ""))
          ADD_FAILURE() << "measured and skipped: " << s.dump();
}

TEST_F(E2eEngine, OneVerdictEverywhere) {
  ASSERT_TRUE(tune_json_.is_object());
  const std::string verdict = tune_json_["verdict"];
  const auto& out = tune_.out;
  if (verdict == "faster") {
    EXPECT_GT(tune_json_["speedup_ci"][0].get<double>(), 1.0) << out;
    ASSERT_FALSE(tune_json_["changed"].empty());
    EXPECT_FALSE(tune_json_.value("confirmation", std::string()).empty());
    for (const auto& [k, v] : tune_json_["changed"].items())
      EXPECT_NE(out.find(" " + k + "=" + v.get<std::string>()), std::string::npos) << k << "\n" << out;
    EXPECT_NE(out.find("\nkeep      "), std::string::npos) << out;
    EXPECT_NE(out.find("\nconfirmed "), std::string::npos) << out;
    EXPECT_EQ(out.find("COULD NOT DECIDE"), std::string::npos) << out;
  } else if (verdict == "undecided") {
    EXPECT_NE(out.find("COULD NOT DECIDE"), std::string::npos) << out;
  } else {
    // Nothing kept: the terminal keeps nothing either.
    EXPECT_EQ(verdict, "none") << out;
    EXPECT_TRUE(tune_json_["changed"].empty()) << tune_json_["changed"].dump();
    EXPECT_EQ(out.find("\nkeep     "), std::string::npos) << out;
    // The report's headline, word for word (lower-case first): "no change beat the baseline" where the trials
    // told, "too noisy to tune here ..." where they could not (a busy machine's tune may be that).
    std::string head = tune_json_["summary"]["headline"]["title"];
    ASSERT_FALSE(head.empty());
    head[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(head[0])));
    EXPECT_TRUE(out.find(head) != std::string::npos || out.find("nothing was tried") != std::string::npos) << out;
  }
  // The summary the GUI's dialog reads is the same document's.
  const auto& s = tune_json_["summary"];
  EXPECT_EQ(s["verdict"], tune_json_["verdict"]);
  EXPECT_EQ(s["speedup"], tune_json_["speedup"]);
  EXPECT_EQ(s["ended"], tune_json_["ended"]);
}

TEST_F(E2eEngine, ThePhasesAddUpToTheTimeTheTuneUsed) {
  ASSERT_TRUE(tune_json_.is_object());
  double phases = 0;
  for (const auto& p : tune_json_["budget_phases"]) {
    EXPECT_GE(p["seconds"].get<double>(), 0.0) << p.dump();
    phases += p["seconds"].get<double>();
  }
  EXPECT_NEAR(phases, tune_json_["budget_used_s"].get<double>(), 0.5) << tune_json_["budget_phases"].dump();
  EXPECT_LE(tune_json_["budget_used_s"].get<double>(), tune_json_["elapsed_s"].get<double>() + 0.5);
}

TEST_F(E2eEngine, ALiveRunTunesItselfAndGoesOn) {
  ASSERT_TRUE(serve_ended_) << "serve sent no done within 180 s\n" << serve_err_;
  EXPECT_EQ(serve_exit_, 0) << serve_err_;
  int progress = 0;
  for (const auto& m : serve_messages_) {
    if (m["type"] == "error") ADD_FAILURE() << "unexpected error: " << m.dump();
    if (m["type"] != "tune_progress") continue;
    ++progress;
    EXPECT_GE(m["fraction"].get<double>(), 0.0);
    EXPECT_LE(m["fraction"].get<double>(), 1.0);
  }
  EXPECT_GT(progress, 0);
  const auto done = tune_done();
  ASSERT_FALSE(done.is_null()) << serve_err_;
  // What the GUI's dialog says: the budget, the trials, what was kept, why it ended.
  EXPECT_TRUE(done.contains("speedup"));
  EXPECT_TRUE(done["final_config"].is_object());
  EXPECT_EQ(done["budget_s"].get<double>(), 12.0);
  EXPECT_GT(done["elapsed_s"].get<double>(), 0.0);
  EXPECT_GE(done["trials"].get<int>(), 0);
  EXPECT_TRUE(done["kept"].is_array());
  EXPECT_FALSE(done["ended"].get<std::string>().empty());
  // The report it wrote: its charts when there were trials to draw.
  const std::string html = read_file(done["report_html"].get<std::string>());
  EXPECT_NE(html.find("<h1>Tuning report: "), std::string::npos) << done.dump();
  if (done["trials"].get<int>() > 0) EXPECT_NE(html.find("<svg"), std::string::npos) << done.dump();
  // The run went on after the tune: a step came after tune_done, then the stop ended it.
  bool step_after = false, seen_done = false;
  for (const auto& m : serve_messages_) {
    seen_done |= m["type"] == "tune_done";
    step_after |= seen_done && m["type"] == "step";
  }
  EXPECT_TRUE(step_after);
  EXPECT_EQ(serve_messages_.back()["type"], "done");
}

}  // namespace
