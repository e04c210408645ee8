// The knob table (knobs/include/knobs/table.h, python/tunebench/knobs.json) and every C++ reader of it: the
// engine's catalog, the tuner's facts, the findings' script knobs, the lines a script's patch and report get.
// A row that lacks what a reader needs, or a reader that keeps a copy of its own, fails here. The launcher's
// reader is held to the same table by python/tests/test_knob_table.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "engine/knobs.h"
#include "engine/script_patch.h"
#include "engine/tuner.h"
#include "knobs/table.h"
#include "tuner/report/report_script.h"
#include "tuner/search/priority.h"

using namespace tb::engine;
namespace fs = std::filesystem;

namespace {

TEST(KnobTable, TheTableReadsAndEveryRowIsWhole) {
  const auto& rows = tb::knobs::table();
  ASSERT_GT(rows.size(), 20u);
  for (const auto& r : rows) {
    EXPECT_TRUE(r.engine || r.script) << r.id;
    // A knob a script lacks says why when a script asks for it.
    if (!r.script) EXPECT_FALSE(r.not_for_scripts.empty() && r.script_env.empty()) << r.id;
    // Whatever a surface has is one of its values.
    for (const auto* s : {r.engine ? &*r.engine : nullptr, r.script ? &*r.script : nullptr}) {
      if (!s) continue;
      EXPECT_FALSE(s->title.empty()) << r.id;
      if (s->type == "int") EXPECT_LE(s->min, s->max) << r.id;
      else EXPECT_GE(s->choices.size(), 2u) << r.id;
    }
  }
  // The file the launcher reads is the one compiled in.
  std::ifstream f(std::string(TB_SOURCE_DIR) + "/python/tunebench/knobs.json");
  const auto file = nlohmann::json::parse(f);
  ASSERT_EQ(file["knobs"].size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(file["knobs"][i]["id"], rows[i].id);
}

TEST(KnobTable, TheEnginesCatalogIsItsEngineRows) {
  std::vector<std::string> want;
  for (const auto& r : tb::knobs::table())
    if (r.engine) want.push_back(r.id);
  std::vector<std::string> got;
  for (const auto& k : knob_catalog()) {
    got.push_back(k.id);
    const auto& s = *tb::knobs::find(k.id)->engine;
    EXPECT_EQ(k.title, s.title);
    EXPECT_EQ(k.default_value, s.default_value) << k.id;
    EXPECT_EQ(k.recommended_value, s.recommended) << k.id;
    EXPECT_EQ(k.changes_numerics, s.numerics) << k.id;
    EXPECT_EQ(k.process_scope, s.process_scope) << k.id;
    EXPECT_EQ(k.pytorch_snippet, s.pytorch) << k.id;
    EXPECT_FALSE(k.libtorch_snippet.empty()) << k.id;
  }
  EXPECT_GT(got.size(), 20u);
  EXPECT_EQ(got, want);
}

TEST(KnobTable, TheTunersFactsAreEveryRows) {
  const auto& rows = tb::knobs::table();
  ASSERT_EQ(search::knob_facts().size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& f = search::knob_facts()[i];
    EXPECT_EQ(f.id, rows[i].id);
    EXPECT_EQ(f.cuda.loader, rows[i].tuner.cuda[0]) << f.id;
    EXPECT_EQ(f.cpu.compute, rows[i].tuner.cpu[4]) << f.id;
    EXPECT_EQ(f.needs, rows[i].tuner.needs) << f.id;
  }
  EXPECT_EQ(search::facts_of("prefetch")->ladder, search::Ladder::Doubling);
  EXPECT_EQ(search::facts_of("compile")->cost, search::TrialCost::Compiles);
  EXPECT_EQ(search::depends_on("non_blocking"), "pin_memory");
}

// The process-wide lines a script gets for a knob are the table's, the same in the patch and in the report.
class KnobLines : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tb_knob_lines_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    script_ = (dir_ / "train.py").string();
    std::ofstream(script_) << "import torch\n\n\ndef main():\n    model = torch.nn.Linear(2, 2)\n\n\nmain()\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  TuneResult tune(const std::string& knob, const std::string& from, const std::string& to) {
    TuneResult r;
    r.environment = {{"model", "script:" + script_}, {"device", "cpu: test"}, {"source", nlohmann::json::array()}};
    r.baseline = {{knob, from}, {"workers", "2"}};
    r.final_config = r.baseline;
    r.final_config[knob] = to;
    Trial t;
    t.phase = "final";
    t.knob = knob;
    t.value = to;
    t.accepted = true;
    t.estimate = {1.2, 1.1, 1.3};
    r.trials.push_back(t);
    return r;
  }

  fs::path dir_;
  std::string script_;
};

TEST_F(KnobLines, ThePatchAndTheReportSayTheTablesLines) {
  int checked = 0;
  for (const auto& row : tb::knobs::table()) {
    if (row.python_set.empty()) continue;
    for (const auto& [value, lines] : row.python_set) {
      const auto* s = row.script ? &*row.script : &*row.engine;
      // A value of the key ("*": one no other key names), and another to change from.
      std::vector<std::string> values = s->choices;
      if (s->type == "int") values = {std::to_string(s->min), std::to_string(s->min + 1), std::to_string(s->max)};
      std::string to = value, from;
      for (const auto& v : values)
        if (value == "*" && !row.python_set.count(v) && to == "*") to = v;
      for (const auto& v : values)
        if (v != to && from.empty()) from = v;
      ASSERT_NE(to, "*") << row.id;
      const TuneResult r = tune(row.id, from, to);
      const ScriptPatch p = script_patch(r, dir_.string());
      std::vector<std::string> report;
      ASSERT_TRUE(script_code_lines(r, report)) << row.id;
      for (const auto& line : tb::knobs::python_lines(row, to, "2")) {
        EXPECT_NE(p.diff.find("+" + line), std::string::npos) << row.id << "=" << to << ": " << line << "\n" << p.diff;
        EXPECT_NE(std::find(report.begin(), report.end(), line), report.end()) << row.id << "=" << to << ": " << line;
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 6);
  // tf32 is the matmul switch only, in both (cuDNN's convolutions use TF32 by default already).
  const auto p = script_patch(tune("tf32", "off", "on"), dir_.string());
  EXPECT_EQ(p.diff.find("cudnn.allow_tf32"), std::string::npos) << p.diff;
}

TEST_F(KnobLines, AKnobNoLineSetsIsLeftOutWithTheTablesReason) {
  const auto p = script_patch(tune("cpu_allocator", "glibc", "jemalloc"), dir_.string());
  ASSERT_EQ(p.unplaced.size(), 1u) << p.diff;
  EXPECT_NE(p.unplaced[0].find("LD_PRELOAD=jemalloc's library"), std::string::npos) << p.unplaced[0];
}

}  // namespace
