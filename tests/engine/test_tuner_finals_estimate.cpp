// What the search holds back for the finals against what they then take, and the budget's wall, over 40 seeds
// of each built-in simulated profile at 120 s and 300 s (docs/tuning.md "The budget"). The simulation's seconds
// are virtual: these are the tuner's own accounts, the same on any machine, not timings.
//
// Why: the search stops trying knobs when a trial and the finals' reserve no longer fit, so a reserve below what
// the finals take ran tunes past their budget (329 s of 300), and one above it skipped knobs "for budget" with
// time left. The finals' windows switch several knobs each (the final to the baseline changes all of them) and
// the estimate counts that (tuner/search/switch_cost.h).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/tuner.h"
#include "tuner/workloads/sim_workload.h"

using namespace tb::engine;

namespace {

struct Finals {
  double reserved = 0, committed = 0, elapsed = 0;
};

Finals tune(const std::string& profile, uint64_t seed, double budget) {
  SimulatedWorkload w(seed, sim_options_for(profile));
  TuneOptions o;
  o.budget_s = budget;
  const TuneResult r = run_tune(w, o);
  Finals f;
  f.reserved = r.finals_reserved_s;
  for (const auto& [phase, s] : r.budget_phases)
    if (phase == "final" || phase == "fresh final") f.committed += s;
  f.committed -= r.finals_extra_s;
  f.elapsed = r.elapsed_s;
  return f;
}

// The finals' estimate within 20% of what they took in all but 2 of 40 (a final cut at the hard end, or one
// whose kept knobs made every arm dearer after the last trial started); every tune within 105% of its budget but
// one of 40, and that one within 107% (the final's first two rounds always run: 126.3, 127.8 and 317.1 s were
// measured, in three of the eight profiles and budgets).
void check(const std::string& profile, double budget) {
  int outside = 0, over = 0;
  std::string which;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const Finals f = tune(profile, seed, budget);
    EXPECT_LE(f.elapsed, 1.07 * budget) << profile << " seed " << seed;
    over += f.elapsed > 1.05 * budget;
    ASSERT_TRUE(std::isfinite(f.reserved)) << profile << " seed " << seed;
    const double ratio = f.reserved > 0 ? f.committed / f.reserved : 0;
    if (ratio < 0.8 || ratio > 1.2) {
      ++outside;
      which += " seed " + std::to_string(seed) + ": took " + std::to_string(f.committed) + " s of " +
               std::to_string(f.reserved) + " s held;";
    }
  }
  EXPECT_LE(outside, 2) << profile << " at " << budget << " s:" << which;
  EXPECT_LE(over, 1) << profile << " at " << budget << " s: " << over << " of 40 tunes past 105% of the budget";
}

}  // namespace

TEST(TunerFinalsEstimate, Toy120) { check("toy", 120); }
TEST(TunerFinalsEstimate, Toy300) { check("toy", 300); }
TEST(TunerFinalsEstimate, Gpu120) { check("gpu", 120); }
TEST(TunerFinalsEstimate, Gpu300) { check("gpu", 300); }
TEST(TunerFinalsEstimate, GpuSynthetic120) { check("gpu-synthetic", 120); }
TEST(TunerFinalsEstimate, GpuSynthetic300) { check("gpu-synthetic", 300); }
TEST(TunerFinalsEstimate, ScriptGpu120) { check("script-gpu", 120); }
TEST(TunerFinalsEstimate, ScriptGpu300) { check("script-gpu", 300); }
