// The README's headless demo tune, as a newcomer runs it: a generated JPEG folder (640x480, the demo's size),
// `mnist_cnn` with its naive defaults, `tune --budget 120`. It once ended "COULD NOT DECIDE" beside "keep
// workers=1", with nine knobs skipped at 35% of its budget and workers=2 (the analysis's own switch) never tried.
// Here: one verdict everywhere (a kept change has an interval above 1 and says how it was confirmed; nothing is
// kept beside "could not decide"), the loader's switch is the first knob measured, every knob not measured says
// why, and the tune ends within its budget's margin. On a quiet machine it must end decided.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace {

TEST(CliDemoTune, TheDemoWorkloadEndsDecidedWithinItsBudget) {
  const std::string dir = (std::filesystem::temp_directory_path() / ("tb_demo_tune_" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  const auto made = tb::test_util::run_cli_shell(
      "", "make-dataset --out " + dir + "/images --images 256 --size 640x480 --classes 10", 300);
  ASSERT_EQ(made.code, 0) << made.err;
  const std::string js = dir + "/tune.json";
  const auto r = tb::test_util::run_cli_shell("", "tune --model mnist_cnn --data imagefolder:" + dir +
                                                      "/images --budget 120 --json " + js + " --report " + dir +
                                                      "/report.html --quiet",
                                              400);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  std::ifstream f(js);
  ASSERT_TRUE(f.good());
  const auto j = nlohmann::json::parse(f);
  const std::string verdict = j["verdict"], ended = j["ended"], noise = j["noise"]["verdict"];
  // The budget: within its 10% margin, phase by phase accounted.
  EXPECT_LE(j["elapsed_s"].get<double>(), 132.0) << r.out;
  EXPECT_FALSE(ended.empty());
  // The analysis's finding (the loader stall: workers) is the first knob measured.
  std::string first;
  for (const auto& t : j["trials"])
    if (first.empty() && !t.value("knob", std::string()).empty()) first = t["knob"];
  EXPECT_EQ(first, "workers") << r.out;
  // Every knob not measured says why.
  for (const auto& s : j["skipped"]) EXPECT_FALSE(s.value("reason", std::string()).empty()) << s.dump();
  // One verdict everywhere.
  if (verdict == "faster") {
    EXPECT_GT(j["speedup_ci"][0].get<double>(), 1.0) << r.out;
    EXPECT_FALSE(j["changed"].empty());
    EXPECT_FALSE(j.value("confirmation", std::string()).empty());
    EXPECT_NE(r.out.find("\nkeep      "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\nconfirmed "), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("COULD NOT DECIDE"), std::string::npos) << r.out;
  } else if (verdict == "undecided") {
    EXPECT_TRUE(j["changed"].empty());
    EXPECT_NE(r.out.find("keep      nothing"), std::string::npos) << r.out;
  }
  // A quiet machine gets a decision: the loader stall is real (one worker measured 1.05-1.33x here).
  if (noise == "quiet") EXPECT_EQ(verdict, "faster") << r.out;
  std::filesystem::remove_all(dir);
}

}  // namespace
