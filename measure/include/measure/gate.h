// The CI gate's rule (docs/ci.md): did a change make training slower, said with the noise it was measured in.
//
// A baseline (A) and a candidate (B) run alternately in fresh processes, AB BA AB ..., one window each; each
// pair gives one log ratio B/A (drift cancels within a pair). Where two runs of one side follow each other (the
// seam between an AB and a BA pair: B B; between BA and AB: A A) they are an A/A pair for free: the noise floor
// of this machine, measured the same way, pooled with the pairs' own spread (measure/interval.h).
//
// The verdict, with r the geometric mean ratio and [lo, hi] its interval:
//   regression   hi < 1 and r < 1 - tolerance   (slower beyond noise, by more than the tolerance)
//   improvement  lo > 1 and r > 1 + tolerance
//   no change    [lo, hi] inside [1 - tolerance, 1 + tolerance]
//   undecided    anything else (too noisy so far: pairs_to_decide says how many more would likely do)
// A gate looks at its pairs more than once (it stops as soon as it is decided), and each look is another chance
// to be fooled by noise. So it looks only at pairs 3, 4, 6, 9, 13, 19, 28, 42, 63, ... (x1.5) and at its last
// pair, and each look's interval is at a stricter level, 1 - (1 - confidence) / 5 (99% for 95%): in 200 seeded
// A/A gates per noise level (2-20% per pair, 3% of processes 25% slow) at most 2.5% said "regression"
// (tests/measure/test_gate.cpp, bench/bench_gate_power.cpp).
// A pair far off the others (more than 4 robust sd and 5% from their median: a process that caught another
// job's burst) is left out and counted, at most a fifth of the pairs.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "measure/interval.h"
#include "measure/window.h"

namespace tb::measure {

struct GateRule {
  double tolerance = 0.03;   // a change smaller than this is "no change"
  double confidence = 0.95;  // overall; each look is at look_confidence()
  int min_pairs = 3;
  double look_confidence() const { return 1 - (1 - confidence) / 5; }
  // Ok when usable, else why not (one line).
  Status validate() const;
};

enum class GateVerdict { kUndecided, kRegression, kImprovement, kNoChange };
const char* verdict_name(GateVerdict v);  // "undecided", "regression", "improvement", "no change"
// The process exit code a CI reads: 0 pass (no change, improvement), 1 regression, 2 undecided.
int verdict_exit_code(GateVerdict v);

struct GateLook {
  GateVerdict verdict = GateVerdict::kUndecided;
  RatioInterval interval;  // candidate / baseline throughput, at the look's confidence
  NoiseFloor floor;        // the seams' A/A pairs
  int pairs = 0;           // alternated pairs so far
  int outliers = 0;        // pairs left out
  bool paired = true;      // false: against a stored baseline (look_unpaired); `pairs` counts candidate processes
  // Undecided: how many pairs in all would likely decide at this spread and ratio (0: unknown; -1: more than
  // 1000, the change sits at the tolerance).
  int pairs_to_decide = 0;
  std::string text() const;  // "regression: 0.871x [0.842, 0.901] (99% per look; 6 pairs, floor ±2.1%)"
};

class GateSequence {
 public:
  explicit GateSequence(GateRule rule = {}) : rule_(rule) {}
  const GateRule& rule() const { return rule_; }
  // The order of the next pair: true = baseline first (AB), alternating from AB.
  bool baseline_first_next() const { return a_.size() % 2 == 0; }
  // One pair, run in the order baseline_first_next() said.
  void add(const Window& baseline, const Window& candidate);
  int pairs() const { return int(a_.size()); }
  // Whether the pairs so far are one of the looks (3, 4, 6, 9, 13, ...).
  bool look_due() const;
  // The verdict on the pairs so far (call at a look, and at the last pair).
  GateLook look() const;
  const std::vector<Window>& baseline() const { return a_; }
  const std::vector<Window>& candidate() const { return b_; }

 private:
  GateRule rule_;
  std::vector<Window> a_, b_;  // per pair
};

// The verdict of an interval by the rule (regression, improvement, no change, undecided), and when undecided how
// many pairs in all would likely decide (GateLook::pairs_to_decide).
GateVerdict verdict_of(const RatioInterval& interval, const GateRule& rule);
int pairs_to_decide(const RatioInterval& interval, const GateRule& rule, int pairs_now);

// Against a stored baseline (no alternation: the candidate's processes run now, the baseline's ran before): the
// rule on Welch's interval of the two sides' process throughputs, each look at 1 - (1 - confidence) / 10 (99.5%;
// Welch's few stored processes give looks more alike than pairs do), outliers left out per side. The A/A floor
// is each side's own spread; a drift of the machine since the baseline was stored is not cancelled. In 200 seeded
// A/A gates against 10 stored processes at most 3% said "regression" at 2-20% noise (tests/measure/test_gate.cpp).
GateLook look_unpaired(const std::vector<Window>& baseline, const std::vector<Window>& candidate, const GateRule& rule);

// The looks' pair counts up to `max_pairs`: 3, 4, 6, 9, 13, 19, 28, ... (min_pairs first).
std::vector<int> gate_looks(int min_pairs, int max_pairs);

}  // namespace tb::measure
