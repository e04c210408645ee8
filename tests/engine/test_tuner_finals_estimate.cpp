// What the search holds back for the finals against what they then take, the budget's wall, and the hand
// configuration's knobs measured, over 40 seeds of each built-in simulated profile at 120 s and 300 s
// (docs/tuning.md "The budget"). The simulation's seconds
// are virtual: these are the tuner's own accounts, the same on any machine, not timings.
//
// Why: the search stops trying knobs when a trial and the finals' reserve no longer fit, so a reserve below what
// the finals take ran tunes past their budget (329 s of 300), and one above it skipped knobs "for budget" with
// time left. The finals' windows switch several knobs each (the final to the baseline changes all of them) and
// the estimate counts that (tuner/search/switch_cost.h).
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "engine/tuner.h"
#include "tuner/workloads/sim_workload.h"

using namespace tb::engine;

namespace {

struct Finals {
  double reserved = 0, committed = 0, elapsed = 0;
  std::vector<std::string> unfit;  // "skipped (budget)" reasons whose own figures say the trial fitted
  std::vector<std::string> unmeasured;  // knobs of the hand configuration worth 3% in it, neither measured nor out of reach
};

// Every knob of the profile's hand configuration that is worth 3% or more in it (the model's hand configuration
// without it is that much slower) is measured -- a trial or a final's row of it, or set with another -- or said
// out of reach (a process knob whose fresh pairs cannot resolve what it may give: cudnn_benchmark). The H100
// profile's tunes at 120 s had left pinned memory and non_blocking (1.10x and 1.04x in the hand configuration)
// unmeasured in 5 of 40 seeds. prefetch=4 is worth nothing there (3.925x with and without it, its workers keep
// up) and a tune that skips it for budget says "~1.00x by the last analysis".
std::vector<std::string> hand_unmeasured(const SimulatedWorkload& w, const TuneResult& r) {
  std::vector<std::string> out;
  const Config hand = w.hand_config();
  if (hand.empty()) return out;
  for (const auto& [k, v] : hand) {
    if (r.baseline.count(k) && r.baseline.at(k) == v) continue;
    Config without = hand;
    without[k] = r.baseline.at(k);
    if (w.fresh_throughput(hand) < 1.03 * w.fresh_throughput(without)) continue;
    bool measured = false;
    for (const auto& t : r.trials)
      measured |= t.knob == k || (" " + t.also).find(" " + k + "=") != std::string::npos;
    for (const auto& s : r.skipped) measured |= s.knob == k && s.reason.rfind("out of reach", 0) == 0;
    if (!measured)
      out.push_back(k + "=" + v + " (" + std::to_string(w.fresh_throughput(hand) / w.fresh_throughput(without)) +
                    "x in it, from " + k + "=" + r.baseline.at(k) + ")");
  }
  return out;
}

// A knob skipped for budget says what its trial needed, what was left and what the end held; those figures must
// add up to "did not fit", and it says what the knob may give. They had not: "a trial needs ~6 s; when its turn
// came 171 s were left and the final needed ~40 s", where the fresh-process final held ~115 s more and was left
// unsaid.
bool adds_up(const std::string& reason) {
  static const std::regex r("a trial needs ~([0-9]+) s; when its turn came ([0-9]+) s were left and .* needed ~([0-9]+) s");
  std::smatch m;
  if (!std::regex_search(reason, m, r)) return true;  // another reason (a process knob's arm says its own)
  // ...and what the knob may give by the last analysis, which ranked it after the knobs measured.
  static const std::regex gain("; by the last analysis it may give ~([0-9.]+)x$");
  if (std::smatch g; !std::regex_search(reason, g, gain) || std::stod(g[1]) < 1.0) return false;
  // Each figure is rounded to a second.
  return std::stod(m[1]) + std::stod(m[3]) + 1.5 >= std::stod(m[2]);
}

Finals tune(const std::string& profile, uint64_t seed, double budget) {
  SimulatedWorkload w(seed, sim_options_for(profile));
  TuneOptions o;
  o.budget_s = budget;
  const TuneResult r = run_tune(w, o);
  Finals f;
  f.reserved = r.finals_reserved_s;
  // A final stopped at the hard end (its first two rounds always run) is held to the rounds it ran.
  static const std::regex cut("the final alternation stopped after ([0-9]+) rounds at the budget's hard end");
  for (const auto& n : r.notes)
    if (std::smatch m; std::regex_search(n, m, cut)) f.reserved *= std::stod(m[1]) / o.rounds;
  for (const auto& [phase, s] : r.budget_phases)
    if (phase == "final" || phase == "fresh final") f.committed += s;
  f.committed -= r.finals_extra_s;
  f.elapsed = r.elapsed_s;
  for (const auto& s : r.skipped)
    if (!adds_up(s.reason)) f.unfit.push_back(s.knob + "=" + s.value + ": " + s.reason);
  f.unmeasured = hand_unmeasured(w, r);
  return f;
}

// The finals' estimate within 20% of what they took in all but 1 of 20 (a final cut at the hard end, or one
// whose kept knobs made every arm dearer after the last trial started); every tune within 105% of its budget
// (126.3, 127.8 and 317.1 s had been measured, in three of the eight profiles and budgets: a check of knobs that
// did not hold alone priced by step times, and a third round of the final priced at the second's without the
// end's margin). Twenty seeds a test: forty of the H100 profiles' tunes took 19-24 s, near the 30 s a logic
// test may take on a busy machine.
// `gap`: a hand knob a tune at this budget is known to leave unmeasured in some seeds, held to at most
// `gap_seeds` of the 20 (no more than measured; the gap is said in docs/tuning.md).
void check(const std::string& profile, double budget, uint64_t first_seed, const std::string& gap = "",
           int gap_seeds = 0) {
  int outside = 0, in_gap = 0;
  std::string which;
  for (uint64_t seed = first_seed; seed < first_seed + 20; ++seed) {
    const Finals f = tune(profile, seed, budget);
    EXPECT_LE(f.elapsed, 1.05 * budget) << profile << " seed " << seed;
    for (const auto& u : f.unfit) ADD_FAILURE() << profile << " seed " << seed << ": skipped for budget, yet " << u;
    for (const auto& u : f.unmeasured) {
      if (!gap.empty() && u.rfind(gap + "=", 0) == 0) {
        ++in_gap;
        continue;
      }
      ADD_FAILURE() << profile << " at " << budget << " s seed " << seed << ": " << u
                    << " (worth 3% or more in the hand configuration) neither measured nor out of reach";
    }
    ASSERT_TRUE(std::isfinite(f.reserved)) << profile << " seed " << seed;
    const double ratio = f.reserved > 0 ? f.committed / f.reserved : 0;
    if (ratio < 0.8 || ratio > 1.2) {
      ++outside;
      which += " seed " + std::to_string(seed) + ": took " + std::to_string(f.committed) + " s of " +
               std::to_string(f.reserved) + " s held;";
    }
  }
  EXPECT_LE(outside, 1) << profile << " at " << budget << " s:" << which;
  EXPECT_LE(in_gap, gap_seeds) << profile << " at " << budget << " s: " << gap << " unmeasured in " << in_gap
                               << " of 20 seeds";
}

}  // namespace

TEST(TunerFinalsEstimate, Toy120) { check("toy", 120, 1), check("toy", 120, 21); }
TEST(TunerFinalsEstimate, Toy300) { check("toy", 300, 1), check("toy", 300, 21); }
TEST(TunerFinalsEstimate, Gpu120Seeds1To20) { check("gpu", 120, 1); }
TEST(TunerFinalsEstimate, Gpu120Seeds21To40) { check("gpu", 120, 21); }
TEST(TunerFinalsEstimate, Gpu300Seeds1To20) { check("gpu", 300, 1); }
TEST(TunerFinalsEstimate, Gpu300Seeds21To40) { check("gpu", 300, 21); }
TEST(TunerFinalsEstimate, GpuSynthetic120Seeds1To20) { check("gpu-synthetic", 120, 1); }
TEST(TunerFinalsEstimate, GpuSynthetic120Seeds21To40) { check("gpu-synthetic", 120, 21); }
TEST(TunerFinalsEstimate, GpuSynthetic300Seeds1To20) { check("gpu-synthetic", 300, 1); }
TEST(TunerFinalsEstimate, GpuSynthetic300Seeds21To40) { check("gpu-synthetic", 300, 21); }
// The script profile's prefetch=4 is worth 1.036x in its hand configuration (16 workers), where the tune's
// breakdown gives it ~1.00-1.02x and ranks it last: at 120 s 10 and 13 of these 20 seeds leave it "skipped
// (budget)" (the final's extra arms measure it in 9 of 40), at 300 s none.
TEST(TunerFinalsEstimate, ScriptGpu120) {
  check("script-gpu", 120, 1, "prefetch", 10), check("script-gpu", 120, 21, "prefetch", 13);
}
TEST(TunerFinalsEstimate, ScriptGpu300) { check("script-gpu", 300, 1), check("script-gpu", 300, 21); }
