// Which knob the tuner measures next: the expected gain over the measured cost (docs/tuning.md "Order").
//
// A knob removes part of one kind of time: loader workers most of the loader stall, CUDA graphs most of the
// host's launch gaps, bf16 about 40% of the device's arithmetic, pinned memory half of a pageable copy. The
// last snapshot says how much of the step each kind of time takes (Snapshot::breakdown_ms), so the expected
// speed-up of a knob is 1 / (1 - the share it removes): one worker is worth 1.8x on an H100 step that waits
// 45% on JPEG decoding and nothing once the loader keeps up; amp is worth little while the GPU idles for data.
// The fractions come from what was measured (a first worker 1.80x on the H100's JPEG pipeline, CUDA graphs ~2x
// of a launch-bound step, conv bias off + grads to None 1.6-1.8x of the engine's launch-bound step, bf16 1.3-
// 1.6x of a compute-bound one: docs/gpu-results.md, docs/cpu-results.md). Without a breakdown the step is
// taken to be split evenly. The cost is the trial's measured cost (a numerics knob adds its loss probes,
// torch.compile its compile).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/tuner.h"

namespace tb::engine::search {

// The share of each kind of time a knob removes.
struct Removes {
  double loader = 0, h2d = 0, launch = 0, sync = 0, compute = 0, comm = 0;
};
// How a knob's values are walked: workers up to the core count, a doubling (batch, prefetch), or one by one.
enum class Ladder { None, Workers, Doubling };
// What a trial of a knob costs beyond its windows: nothing, a compile (torch.compile switched on), or a
// recompile while compile is on (amp, channels_last change what Inductor compiled).
enum class TrialCost { Plain, Compiles, RecompilesUnderCompile };

// Everything the search knows of a knob, one row per knob of the catalogs (the engine's and a script's):
// the prior (the shares of time it removes on a GPU and on a CPU), the knob it means nothing without, its
// ladder, whether it is a GPU model-level knob measured within the budget's first third, whether it changes
// the training recipe (said apart, with the speed-up without it), and what its trial costs.
struct KnobFacts {
  std::string id;
  Removes cuda, cpu;
  std::string needs;
  Ladder ladder = Ladder::None;
  bool model_level = false;
  bool recipe = false;
  TrialCost cost = TrialCost::Plain;
};
const std::vector<KnobFacts>& knob_facts();
// The row of `id`, nullptr when the search knows nothing of it (it then gets an even prior).
const KnobFacts* facts_of(const std::string& id);

// Where a step's time goes, as shares of the step (they need not sum to 1).
struct StepShares {
  double loader = 0.25, h2d = 0.05, launch = 0.2, sync = 0.05, compute = 0.45, comm = 0;
};

// The shares of a snapshot's breakdown (GPU: "GPU busy", "loader stall", "launch gaps", "other idle"; CPU:
// "data wait", "h2d", "forward", "backward", "optimizer", "comm wait", "other") over `step_ms`. An empty
// breakdown gives the even default.
StepShares shares_of(const std::vector<std::pair<std::string, double>>& breakdown_ms, double step_ms);

// The most each knob can give by a snapshot's analyses: its caps, and each switch's bound for its knob (the
// smallest where several speak). A cap holds for the knobs that mean nothing without it too (prefetch and
// persistent_workers under workers: they rearrange the same workers' supply).
std::map<std::string, double> caps_of(const Snapshot& s);

// The speed-up `knob` may give on a step split as `s`, on a `cuda` device or a CPU. >= 1.
double expected_gain(const std::string& knob, const StepShares& s, bool cuda);

// The kind of time `knob` mostly removes ("loader", "h2d", "launch", "sync", "compute", "comm"): two knobs
// of different kinds may pay only together, when the step waits on both.
std::string kind_of(const std::string& knob, bool cuda);

// A known warm-up a trial of `knob` pays on top of its windows, seconds: torch.compile compiles when it is
// switched on, and again when amp or channels_last changes under it (`compiled`: compile is on now).
double extra_cost_s(const std::string& knob, bool cuda, bool compiled);

// Knobs whose setting only means something while `knob` is at a non-default value (prefetch and
// persistent_workers without loader workers, non_blocking without pinned memory): an arm "without knob"
// reverts them too.
std::vector<std::string> dependents(const std::string& knob);

// The knob `knob` needs to mean anything (the inverse of dependents()), "" when none.
std::string depends_on(const std::string& knob);

}  // namespace tb::engine::search
