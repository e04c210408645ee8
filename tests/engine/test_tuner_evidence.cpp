// The search reads what the analyses say and what a change costs once: the switches a snapshot's analyses name go
// first, their bounds cap a knob's prior (the loader verdict's for workers), and a compile's one-time cost is said
// beside its rate with the steps after which it pays back (docs/tuning.md "How it measures", "How it searches").
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/tuner.h"
#include "tuner/search/priority.h"
#include "tuner/workloads/sim_workload.h"

using namespace tb::engine;

// The switches the analyses name go first (docs/tuning.md "Order"): the README demo's analysis named fast_decode
// for a step 97% JPEG decode, and its tune measured amp, threads and channels_last first and skipped fast_decode
// for budget. Here the knob an unnamed tune screens last is named by the snapshots: it is screened first; named
// with a bound that promises nothing, it keeps its place.
namespace {
// The knobs a tune screened, in the order it first screened each.
std::vector<std::string> screened(const TuneResult& r) {
  std::vector<std::string> out;
  for (const auto& t : r.trials)
    if (t.phase == "screen" && std::find(out.begin(), out.end(), t.knob) == out.end()) out.push_back(t.knob);
  return out;
}
}  // namespace

class NamingWorkload : public SimulatedWorkload {
 public:
  NamingWorkload(uint64_t seed, std::string knob, std::string value, double at_most)
      : SimulatedWorkload(seed), knob_(std::move(knob)), value_(std::move(value)), at_most_(at_most) {}
  std::optional<Snapshot> snapshot(int steps) override {
    auto s = SimulatedWorkload::snapshot(steps);
    if (s) s->switches.push_back({knob_, value_, at_most_});
    return s;
  }

 private:
  std::string knob_, value_;
  double at_most_;
};

TEST(TunerSearch, TheAnalysesSwitchesAreMeasuredFirst) {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    TuneOptions o;
    o.budget_s = 240;
    SimulatedWorkload plain(seed);
    const auto order = screened(run_tune(plain, o));
    ASSERT_GE(order.size(), 3u) << "seed " << seed;
    // The last one screened that needs no other knob set first (prefetch means nothing without workers).
    std::string last;
    for (const auto& id : order)
      if (tb::engine::search::depends_on(id).empty()) last = id;
    ASSERT_NE(last, order.front()) << "seed " << seed;
    std::string value;
    for (const auto& k : plain.knobs())
      if (k.info.id == last) value = k.info.recommended_value;
    NamingWorkload named(seed, last, value, 1.5);
    EXPECT_EQ(screened(run_tune(named, o)).front(), last) << "seed " << seed;
    NamingWorkload idle(seed, last, value, 1.0);  // a bound of 1.0x names nothing worth measuring first
    EXPECT_EQ(screened(run_tune(idle, o)).front(), order.front()) << "seed " << seed;
  }
}

// The loader verdict bounds every worker count (its model counts the cores a worker takes): a snapshot whose
// verdict says no worker count helps (at most 1.0x) makes the tuner's prior for workers, and the knobs that mean
// nothing without it, nothing - whatever share of the step the data wait takes - so they are screened after every
// knob with a prior; a loose cap (3x) changes nothing.
class CappingWorkload : public SimulatedWorkload {
 public:
  CappingWorkload(uint64_t seed, double at_most) : SimulatedWorkload(seed), at_most_(at_most) {}
  std::optional<Snapshot> snapshot(int steps) override {
    auto s = SimulatedWorkload::snapshot(steps);
    if (s) s->caps.push_back({"workers", at_most_});
    return s;
  }

 private:
  double at_most_;
};

TEST(TunerSearch, TheLoaderVerdictsBoundIsTheWorkersPrior) {
  int moved = 0;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    TuneOptions o;
    o.budget_s = 240;
    SimulatedWorkload plain(seed);
    const auto order = screened(run_tune(plain, o));
    auto at = [](const std::vector<std::string>& v, const std::string& k) {
      return size_t(std::find(v.begin(), v.end(), k) - v.begin());
    };
    ASSERT_LT(at(order, "workers"), order.size()) << "seed " << seed;
    CappingWorkload loose(seed, 3.0);
    EXPECT_EQ(screened(run_tune(loose, o)), order) << "seed " << seed;
    CappingWorkload capped(seed, 1.0);
    const auto after = screened(run_tune(capped, o));
    // Every knob screened after workers now is one the search could not rank above it: none with a prior.
    const size_t w = at(after, "workers");
    for (size_t i = w + 1; i < after.size(); ++i)
      EXPECT_TRUE(after[i] == "prefetch" || after[i] == "persistent_workers")
          << "seed " << seed << ": " << after[i] << " after workers";
    moved += w > at(order, "workers");
  }
  EXPECT_GT(moved, 0) << "in no seed did the cap move workers back";
}

// A compile's one-time cost (the simulated compile of a profile that states one: measured there) is said beside
// the compile trial's rate, with the steps after which it pays for itself; the other trials say none.
TEST(TunerSearch, ACompileTrialSaysItsOneTimeCostAndWhenItPaysBack) {
  SimulatedWorkload w(1, sim_options_for("script-gpu"));  // seed 1: the compile measures faster at its screen
  TuneOptions o;
  o.budget_s = 600;
  const TuneResult r = run_tune(w, o);
  int compile_trials = 0, undecided_faster = 0;
  for (const auto& t : r.trials) {
    const double extra = t.one_time_after_s - t.one_time_before_s;
    if (!(extra >= 0.05)) {  // nothing compiled for it (a variant compiled before is cached): nothing said
      EXPECT_EQ(t.reason.find("its one-time cost"), std::string::npos) << t.reason;
      EXPECT_TRUE(std::isnan(t.break_even_steps)) << t.reason;
      continue;
    }
    compile_trials += t.knob == "compile";
    EXPECT_NE(t.reason.find("its one-time cost: 55.0 s of compiling"), std::string::npos) << t.reason;
    if (t.outcome == "gain") {
      ASSERT_TRUE(std::isfinite(t.break_even_steps)) << t.reason;
      EXPECT_GT(t.break_even_steps, 0);
      EXPECT_NE(t.reason.find("paid back after ~"), std::string::npos) << t.reason;
    } else {
      EXPECT_TRUE(std::isnan(t.break_even_steps)) << t.reason;
      // "never" only where the interval rules a faster step out; else it says why no break-even is said.
      const bool no_faster = t.outcome == "slower" || t.estimate.hi <= 1.0 + o.min_gain;
      EXPECT_EQ(t.reason.find("never paid back") != std::string::npos, no_faster) << t.reason;
      EXPECT_EQ(t.reason.find("no break-even said: its pairs could not decide") != std::string::npos, !no_faster)
          << t.reason;
      undecided_faster += !no_faster;
    }
  }
  EXPECT_GT(compile_trials, 0);
  EXPECT_GT(undecided_faster, 0) << "no undecided compile trial: the case is not exercised";
  // A run shorter than the break-even: the same faster compile is not kept, said so; a longer one keeps it.
  int not_paid = 0;
  for (int64_t run : {int64_t(1000), int64_t(100'000'000)}) {
    SimulatedWorkload again(1, sim_options_for("script-gpu"));
    TuneOptions ro = o;
    ro.run_steps = run;
    const TuneResult rr = run_tune(again, ro);
    for (const auto& t : rr.trials) {
      if (t.knob != "compile" || !std::isfinite(t.break_even_steps)) continue;
      const bool beyond = t.break_even_steps > double(run);
      EXPECT_EQ(t.outcome == "not paid back", beyond) << t.reason;
      if (beyond) {
        ++not_paid;
        EXPECT_FALSE(t.accepted);
        EXPECT_NE(t.reason.find("more than the run's 1,000 (--run-steps), not kept"), std::string::npos) << t.reason;
      }
    }
    if (run == 1000) EXPECT_TRUE(!rr.final_config.count("compile") || rr.final_config.at("compile") != "on");
  }
  EXPECT_GT(not_paid, 0);
}

// The in-process final's rows pair arms whose order decides which of them pays a compile: an arm without a kept
// amp recompiles, and a language model's final said "intra_op_threads: its one-time cost: 14.2 s of compiling".
// The trial that switched compile on says its cost; a row of the final says none.
TEST(TunerSearch, TheFinalsRowsSayNoOneTimeCostOfTheirArmsOrder) {
  int recompiled = 0;
  for (uint64_t seed : {24, 28, 36}) {  // seeds whose final runs an arm that recompiles
    SimulatedWorkload w(seed, sim_options_for("script-gpu"));
    TuneOptions o;
    o.budget_s = 300;
    const TuneResult r = run_tune(w, o);
    for (const auto& t : r.trials) {
      if (t.phase != "final" || t.fresh_processes) continue;
      for (const auto* side : {&t.a, &t.b})
        for (const auto& win : *side) recompiled += win.one_time_s > 0;
      EXPECT_EQ(t.one_time_before_s, 0) << seed << " " << t.knob << ": " << t.reason;
      EXPECT_EQ(t.one_time_after_s, 0) << seed << " " << t.knob << ": " << t.reason;
      EXPECT_EQ(t.reason.find("one-time cost"), std::string::npos) << seed << " " << t.knob << ": " << t.reason;
    }
  }
  EXPECT_GT(recompiled, 0) << "no final arm recompiled: the case is not exercised";
}
