// Memory beside speed in the tuner, against the simulated jobs (engine/src/tuner/workloads/sim_toy.cpp: a
// step holds 2000 MiB between steps and 1000 MiB per sample at its peak, 750 under amp, on an 80 GiB device;
// batch 128 does not fit): each trial's peak per side, the report's memory, and a batch-size rung predicted
// not to fit is skipped with the figures instead of run into an out-of-memory error.
#include <gtest/gtest.h>

#include <string>

#include "engine/report.h"
#include "engine/tuner.h"
#include "tuner/workloads/sim_workload.h"

using namespace tb::engine;

namespace {
constexpr int64_t kMiB = int64_t(1) << 20;

TuneResult toy_tune(uint64_t seed) {
  SimulatedWorkload w(seed, 0.03);
  TuneOptions o;
  o.budget_s = 480;
  return run_tune(w, o);
}
}  // namespace

TEST(TunerMemory, EachTrialCarriesThePeakOfBothSides) {
  const TuneResult r = toy_tune(3);
  int measured = 0;
  bool amp_seen = false;
  for (const auto& t : r.trials) {
    if (t.a.empty() || t.b.empty()) continue;
    ++measured;
    EXPECT_GT(t.peak_before, 0) << t.phase << " " << t.knob;
    EXPECT_GT(t.peak_after, 0) << t.phase << " " << t.knob;
    EXPECT_EQ(t.memory_total, 80 * 1024 * kMiB);
    if (t.knob == "amp" && t.value != "off" && t.from == "off") {
      // Activations at half width: the candidate's peak is the model's own figure, below the reference's.
      amp_seen = true;
      EXPECT_LT(t.peak_after, t.peak_before) << t.reference;
    }
    if (t.knob == "batch_size" && t.value == "64" && t.from == "32" && t.also.empty())
      EXPECT_GT(t.peak_after, t.peak_before);
  }
  EXPECT_GT(measured, 5);
  EXPECT_TRUE(amp_seen);
  // The report says it: per trial in the JSON and the table, and the headline's memory in the summary.
  const auto j = report_json(r);
  ASSERT_TRUE(j["trials"].is_array());
  bool numbers = false;
  for (const auto& t : j["trials"])
    numbers = numbers || (t["peak_memory_before"].is_number() && t["peak_memory_after"].is_number());
  EXPECT_TRUE(numbers);
  const std::string html = report_html(r);
  EXPECT_NE(html.find("<th>peak memory</th>"), std::string::npos);
  EXPECT_NE(html.find("<strong>Memory:</strong> peak per step"), std::string::npos);
  EXPECT_NE(tune_done_message(r, "", "", "")["memory"].get<std::string>().find("(final)"), std::string::npos);
}

TEST(TunerMemory, ABatchPredictedNotToFitIsSkippedWithTheFigures) {
  const TuneResult r = toy_tune(3);
  for (const auto& t : r.trials) EXPECT_FALSE(t.knob == "batch_size" && t.value == "128") << t.phase << ": " << t.reason;
  const SkippedTrial* s = nullptr;
  for (const auto& x : r.skipped)
    if (x.knob == "batch_size" && x.value == "128") s = &x;
  ASSERT_NE(s, nullptr);
  // From batch 64 (2000 MiB held + 64 x 1000 or 750 per sample) the prediction is past 95% of 80 GiB.
  EXPECT_EQ(s->reason.rfind("memory: batch 128 would peak at ~", 0), 0u) << s->reason;
  EXPECT_NE(s->reason.find("of the device's 80.00 GiB (batch 64 peaked at"), std::string::npos) << s->reason;
  EXPECT_NE(s->reason.find("1.95 GiB of it held between steps"), std::string::npos) << s->reason;
  // Said once, not again for every configuration the search came back to.
  int said = 0;
  for (const auto& x : r.skipped) said += x.knob == "batch_size" ? 1 : 0;
  EXPECT_EQ(said, 1);
}

TEST(TunerMemory, ARungThatFitsIsStillMeasured) {
  // Batch 64 from 32 is predicted at 2000 + 2 x 32000 MiB = 64.5 GiB: under 95% of 80, so it is tried.
  const TuneResult r = toy_tune(5);
  bool tried64 = false;
  for (const auto& t : r.trials) tried64 = tried64 || (t.knob == "batch_size" && t.value == "64");
  EXPECT_TRUE(tried64);
  for (const auto& x : r.skipped) EXPECT_FALSE(x.knob == "batch_size" && x.value == "64") << x.reason;
}
