// Why, beside how much: after a gate that found a change, one more process of each side with every step traced,
// and what changed between the two traces (profiler/trace_diff.h, what `tunebench-cli diff` prints): the median
// step, the memory peak, the classes of time that moved (loader stalls, syncs, launch gaps, GPU compute), the
// ops and kernels that grew, appeared or went. The traces themselves are kept when asked, for the GUI or `diff`.
#pragma once

#include <string>
#include <vector>

#include "gate/runner.h"

namespace tb::gate {

// `ratio`: the gate's candidate/baseline throughput, which the traced pair should show. `keep_dir` "": the
// traces are not kept.
GateWhy explain(const GateOptions& options, double ratio, const std::string& keep_dir = "");

// Whether a result gets a why: a regression or an improvement, when the options ask for it.
bool wants_why(const GateOptions& options, const GateResult& result);

}  // namespace tb::gate
