// The GUI's File ▸ Export (engine/session_report.h): a session document becomes the tuner's report, its live
// rows with their figures, each tune's own report inside, and a clear error for a document that is not one.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "client/loader_verdict.h"
#include "engine/report.h"
#include "engine/session_report.h"
#include "engine/tuner.h"

namespace tb::engine {
namespace {

nlohmann::json session(const std::string& tune_json) {
  return {{"format", "tunebench-session-input"},
          {"model", "mnist_cnn"},
          {"data", "synthetic"},
          {"device", {{"kind", "cpu"}, {"name", "test cpu"}}},
          {"versions", {{"libtorch", "2.11.0"}}},
          {"first_config", {{"workers", "0"}, {"amp", "off"}}},
          {"current_config", {{"workers", "2"}, {"amp", "bf16"}}},
          {"comparisons",
           {{{"change", "workers 0 → 2"}, {"changed", {{"workers", "2"}}}, {"previous", {{"workers", "0"}}},
             {"source", "toggle"}, {"before", 515.9}, {"after", 748.8}, {"ratio", 1.451}, {"ci95", {1.40, 1.50}},
             {"verdict", "faster"}, {"n_before", 12}, {"n_after", 14}, {"trust", "before: quiet\nafter: quiet"},
             {"data_wait_share_before", 0.3}, {"data_wait_share_after", 0.01}},
            {{"change", "auto-tune: amp off → bf16"}, {"changed", {{"amp", "bf16"}}}, {"previous", {{"amp", "off"}}},
             {"source", "auto-tune"}, {"before", 748.8}, {"after", 1038.8}, {"ratio", 1.387}, {"ci95", {1.36, 1.42}},
             {"verdict", "faster"}, {"trust", "measured by the auto-tune"}}}},
          {"tunes", {{{"report_json", tune_json}}}}};
}

TEST(SessionReport, LiveRowsAndTheTunesOwnReportInOneDocument) {
  const auto dir = std::filesystem::temp_directory_path() / ("tb-session-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto w = make_simulated_workload(3, 0.01);
  TuneOptions o;
  o.budget_s = 200;
  const TuneResult r = run_tune(*w, o);
  const std::string stem = (dir / "tune-0").string();
  write_report(r, stem + ".html", stem + ".md", stem + ".json");
  const nlohmann::json in = session(stem + ".json");

  const std::string html = session_report_html(in), md = session_report_markdown(in);
  const nlohmann::json j = session_report_json(in);
  for (const std::string* s : {&html, &md}) {
    EXPECT_NE(s->find("workers 0 → 2"), std::string::npos);
    EXPECT_NE(s->find("748.8"), std::string::npos);
    EXPECT_NE(s->find("1038.8"), std::string::npos);
    EXPECT_NE(s->find("1.387x [1.360, 1.420]"), std::string::npos);
    EXPECT_NE(s->find("Auto-tune 1"), std::string::npos);
    EXPECT_NE(s->find("final alternation"), std::string::npos);
  }
  EXPECT_NE(html.find("How far to trust these numbers"), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("Tuning report"), std::string::npos) << "the tune's own report is inside";
  EXPECT_NE(md.find("amp"), std::string::npos);
  EXPECT_EQ(j["format"], "tunebench-session");
  ASSERT_EQ(j["tunes"].size(), 1u);
  EXPECT_EQ(j["tunes"][0]["format"], "tunebench-tune");
  EXPECT_NE(j["code"]["pytorch"].get<std::string>().find("autocast"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(SessionReport, AMissingTuneReportIsSaidAndABadDocumentRefused) {
  const nlohmann::json in = session("/nonexistent/tune-0.json");
  EXPECT_NE(session_report_html(in).find("Its report is missing: /nonexistent/tune-0.html"), std::string::npos);
  EXPECT_EQ(session_report_json(in)["tunes"][0]["missing"], "/nonexistent/tune-0.json");
  EXPECT_THROW(session_report_html(nlohmann::json{{"format", "something else"}}), std::invalid_argument);
  EXPECT_THROW(session_report_markdown(nlohmann::json::array()), std::invalid_argument);
}

// A session whose script was traced with its loader timed carries the verdict the window's Loader tab showed
// (sessionDocument's "loader"): the report says why the loader was slow, in the lines `run` prints, with the parts
// and where each is; a session without one has no such section.
TEST(SessionReport, TheLoadersVerdictIsInTheReport) {
  nlohmann::json parts = nlohmann::json::array();
  for (const char* who : {"worker 0", "worker 1"}) {
    // 32 samples each, 5.0 ms a sample of which SlowBlur 4.2 ms (at train.py:12), all on the CPU.
    parts.push_back({{"who", who}, {"samples", 32}, {"batches", 4}, {"busy_ns", 160'000'000}, {"cpu_ns", 160'000'000},
                     {"life_ns", 400'000'000},
                     {"parts", {{"SlowBlur", {{"ns", 134'400'000}}}, {"read + decode (PIL)", {{"ns", 25'600'000}}}}},
                     {"where", {{"SlowBlur", "/home/u/train.py:12"}}}});
  }
  const client::LoaderVerdict v = client::loader_verdict(parts, 64, 1'000'000'000, 600'000'000, 2);
  ASSERT_TRUE(v.valid);
  nlohmann::json in = session("/nonexistent/tune-0.json");
  in["tunes"] = nlohmann::json::array();
  EXPECT_EQ(session_report_html(in).find("Why the loader is slow"), std::string::npos);
  EXPECT_EQ(session_report_markdown(in).find("Why the loader is slow"), std::string::npos);
  in["loader"] = v.to_json();
  const std::string html = session_report_html(in), md = session_report_markdown(in);
  for (const std::string* s : {&html, &md}) {
    EXPECT_NE(s->find("Why the loader is slow"), std::string::npos) << *s;
    EXPECT_NE(s->find("highly input-bound: the loop waited for batches 60% of its step time"), std::string::npos) << *s;
    EXPECT_NE(s->find("change SlowBlur (train.py:12), 4.20 ms a sample (84% of the loading)"), std::string::npos) << *s;
    EXPECT_NE(s->find("/home/u/train.py:12"), std::string::npos) << *s;  // the parts table's where
  }
  EXPECT_EQ(session_report_json(in)["loader"], v.to_json());
}

}  // namespace
}  // namespace tb::engine
