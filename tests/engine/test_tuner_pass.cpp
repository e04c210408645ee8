// What one pass over every applicable knob costs (TuneResult::plan; docs/tuning.md "The budget") and
// --budget auto, on the simulated toy world: deterministic per seed, no timing asserted.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "client/inputs.h"
#include "engine/report.h"
#include "engine/tuner.h"
#include "tuner/workloads/sim_workload.h"

using tb::engine::TuneOptions;
using tb::engine::TuneResult;

namespace {
TuneResult tune(double budget_s, bool automatic = false, uint64_t seed = 1, bool plan_only = false) {
  tb::engine::SimulatedWorkload w(seed);
  TuneOptions o;
  o.budget_s = budget_s;
  o.budget_auto = automatic;
  o.plan_only = plan_only;
  return tb::engine::run_tune(w, o);
}
}  // namespace

TEST(TunerPass, ThePassIsItsTrialsTheReserveAndWhatWasSpent) {
  const TuneResult r = tune(300);
  ASSERT_TRUE(r.plan);
  const auto& p = *r.plan;
  ASSERT_FALSE(p.knobs.empty());
  ASSERT_EQ(p.knobs.size(), p.trial_s.size());
  const double trials = std::accumulate(p.trial_s.begin(), p.trial_s.end(), 0.0);
  EXPECT_NEAR(p.pass_s, p.spent_s + trials + p.reserve_s + p.process_s, 1e-9);
  EXPECT_GT(p.spent_s, 0);  // the calibration and the noise floor ran first
  EXPECT_GT(p.reserve_s, 0);
  EXPECT_NE(p.line.find("to try each of the " + std::to_string(p.knobs.size()) + " knobs once"), std::string::npos)
      << p.line;
  EXPECT_FALSE(p.auto_budget);
  EXPECT_DOUBLE_EQ(r.budget_s, 300);
}

TEST(TunerPass, ATighterBudgetFitsTheFirstKnobsInPriorityOrder) {
  const TuneResult wide = tune(300);
  ASSERT_TRUE(wide.plan);
  // Below the pass (the same seed calibrates alike): fewer fit, and they are the first of the pass's order.
  const TuneResult tight = tune(std::floor(wide.plan->pass_s * 0.7));
  ASSERT_TRUE(tight.plan);
  const auto& p = *tight.plan;
  EXPECT_LT(p.fit, static_cast<int>(p.knobs.size())) << p.line;
  EXPECT_GT(p.fit, 0) << p.line;
  // The fitted ones fit and one more would not: the budget's sum, in the pass's order.
  const double reserve_all = p.reserve_s;  // with every knob kept: at least the reserve of the first `fit`
  double first = p.spent_s;
  for (int i = 0; i < p.fit; ++i) first += p.trial_s[i];
  EXPECT_LE(first, tight.budget_s);
  EXPECT_GT(first + p.trial_s[p.fit], tight.budget_s - reserve_all);
  // With nothing kept the finals are the baseline's alone: at least as many fit, and the line gives the range.
  EXPECT_GE(p.fit_none_kept, p.fit);
  EXPECT_LE(p.fit_none_kept, static_cast<int>(p.knobs.size()));
  const std::string says =
      p.fit_none_kept > p.fit
          ? std::to_string(p.fit) + " to " + std::to_string(p.fit_none_kept) +
                " of them, fewer the more of them it keeps, in order of expected gain (" + p.knobs[0]
          : "the " + std::to_string(p.fit) + " with the highest expected gain (" + p.knobs[0];
  EXPECT_NE(p.line.find(says), std::string::npos) << p.line;
}

TEST(TunerPass, BudgetAutoBuysOnePassAndTriesEveryKnobOfIt) {
  const TuneResult r = tune(tb::client::inputs::kBudgetDefaultS, true);
  ASSERT_TRUE(r.plan);
  const auto& p = *r.plan;
  EXPECT_TRUE(p.auto_budget);
  EXPECT_FALSE(p.clamped);
  EXPECT_DOUBLE_EQ(r.budget_s, std::ceil(p.pass_s));
  EXPECT_EQ(p.fit, static_cast<int>(p.knobs.size()));
  EXPECT_EQ(p.line.rfind("budget auto: ", 0), 0u) << p.line;
  std::set<std::string> tried;
  for (const auto& t : r.trials) tried.insert(t.knob);
  for (const auto& k : p.knobs) EXPECT_TRUE(tried.count(k)) << k << " was not tried: " << r.ended;
}

TEST(TunerPass, BudgetAutoIsParsedBesideSeconds) {
  const auto a = tb::client::inputs::parse_tune_budget_or_auto("auto");
  ASSERT_TRUE(a);
  EXPECT_FALSE(a->has_value());
  const auto n = tb::client::inputs::parse_tune_budget_or_auto("90");
  ASSERT_TRUE(n);
  EXPECT_DOUBLE_EQ(n->value(), 90);
  EXPECT_FALSE(tb::client::inputs::parse_tune_budget_or_auto("5"));
  EXPECT_FALSE(tb::client::inputs::parse_tune_budget_or_auto("Auto"));
}

// tune --plan (the GUI's Run > Price the auto-tune): the calibration and the noise floor, the pass priced as the
// tune itself then prices it, and nothing tried, kept or applied.
TEST(TunerPass, PlanOnlySaysWhatTheTuneWouldAndTriesNothing) {
  for (const bool automatic : {false, true}) {
    const TuneResult priced = tune(120, automatic, 3, true);
    const TuneResult tuned = tune(120, automatic, 3);
    ASSERT_TRUE(priced.plan && tuned.plan);
    EXPECT_TRUE(priced.plan_only);
    EXPECT_FALSE(tuned.plan_only);
    EXPECT_EQ(priced.plan->line, tuned.plan->line);  // the same world, budget and seed: the price the tune says
    EXPECT_DOUBLE_EQ(priced.budget_s, tuned.budget_s);
    ASSERT_EQ(priced.trials.size(), 1u);
    EXPECT_EQ(priced.trials[0].phase, "noise floor");
    EXPECT_EQ(priced.final_config, priced.baseline);
    EXPECT_EQ(priced.verdict, "none");
    EXPECT_NEAR(priced.elapsed_s, priced.plan->spent_s, 1.0);  // what it spent is what the plan counts as spent
    EXPECT_NE(priced.ended.find("plan only"), std::string::npos) << priced.ended;
    EXPECT_GT(priced.baseline_throughput, 0);
    const auto m = tb::engine::tune_done_message(priced, "", "", "");
    EXPECT_EQ(m["plan_only"], true);
    EXPECT_EQ(m["plan"], priced.plan->line);
    EXPECT_EQ(m["headline"]["kind"], "planned");
    EXPECT_EQ(m["headline"]["title"].get<std::string>().rfind("Priced: ~", 0), 0u) << m["headline"].dump();
    EXPECT_TRUE(m["kept"].empty());
    EXPECT_EQ(tb::engine::tune_done_message(tuned, "", "", "")["plan_only"], false);
  }
}

// A budget below the pass gives a range: with every tried knob kept the finals grow an arm each, with none kept
// more fit, and the search prices each trial with what it has kept so far. The toy world at 40 s says "1 to 2"
// or "1 to 3": its first knob (bf16) is kept, and then no other fits.
TEST(TunerPass, ATightBudgetSaysTheRangeItsSearchTries) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const TuneResult r = tune(40, false, seed);
    ASSERT_TRUE(r.plan);
    const auto& p = *r.plan;
    EXPECT_GT(p.fit_none_kept, p.fit) << p.line;
    EXPECT_NE(p.line.find("with 40 s " + std::to_string(p.fit) + " to " + std::to_string(p.fit_none_kept) +
                          " of them, fewer the more of them it keeps"),
              std::string::npos)
        << p.line;
    int tried = 0;
    for (const auto& k : p.knobs)
      tried += std::any_of(r.trials.begin(), r.trials.end(),
                           [&](const tb::engine::Trial& t) { return t.knob == k && t.phase != "final"; });
    EXPECT_GE(tried, p.fit) << "seed " << seed << ": " << p.line;
    EXPECT_LE(tried, p.fit_none_kept) << "seed " << seed << ": " << p.line;
  }
}
