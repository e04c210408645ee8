// The loader's model in the analysis's findings: a loader-stall finding bounds its gain by the share of time the
// step waited (Amdahl), which counts the wait as removable without the cores a worker needs; where the run's
// loader was timed (its verdict, client/loader_verdict.h), the finding says what the verdict's model says instead
// (its switch, its bound, why), so that the finding, its "Try it" and the verdict never disagree.
#pragma once

#include <vector>

#include "client/loader_verdict.h"
#include "profiler/analysis.h"

namespace tb::client {

// Puts `v.advice()` into the loader-stall finding among `findings` (nothing when the verdict is not known or
// there is no such finding).
void apply_loader_verdict(const LoaderVerdict& v, std::vector<prof::Finding>& findings);

}  // namespace tb::client
